package service

// oriond service install --with-proxy: orionctl proxy (the model-API proxy
// for agents) as a systemd user service next to oriond's, rendered from
// packaging/systemd/orionctl-proxy.service with the orionctl found here.
// Once installed, the other service commands act on it too: start and
// restart after oriond, stop and uninstall before it, status reports it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ks "github.com/kardianos/service"

	"github.com/orion-agent/orion/packaging"
)

const (
	// ProxyUnitName is the proxy's systemd unit: orionctl-proxy.service.
	ProxyUnitName = "orionctl-proxy"
	// ProxyListen is the proxy's address in the unit: orionctl proxy's
	// default, written out so the unit says where agents point.
	ProxyListen = "127.0.0.1:8788"
	// ProxyDescription names the proxy's unit in messages.
	ProxyDescription = "systemd user unit " + ProxyUnitName + ".service"

	proxyFile = "systemd/orionctl-proxy.service"
	// packagedOrionctl is the executable the packaged unit runs.
	packagedOrionctl = "ExecStart=/usr/bin/orionctl "
)

// RenderProxy renders the proxy's user unit for the orionctl at path: the
// packaged unit with its executable replaced.
func RenderProxy(orionctl string) (string, error) {
	exe, err := systemdExec([]string{orionctl})
	if err != nil {
		return "", err
	}
	text := packaging.ProxyUnit
	var rest string
	for _, l := range strings.Split(text, "\n") {
		if r, ok := strings.CutPrefix(l, packagedOrionctl); ok {
			rest = r
		}
	}
	if rest == "" {
		return "", fmt.Errorf("packaging/%s has no %q line, where oriond renders the unit from it", proxyFile, packagedOrionctl)
	}
	return replaceLine(text, proxyFile, "ExecStart=", "ExecStart="+exe+" "+rest+"\n")
}

// ProxyUnitPath is where the proxy's user unit is installed (beside
// oriond's, wherever kardianos puts that).
func ProxyUnitPath(home string) string {
	return filepath.Join(home, ".config/systemd/user", ProxyUnitName+".service")
}

// CheckWithProxy says whether --with-proxy can apply: the proxy is one
// user's, talking to that user's oriond over its default socket.
func CheckWithProxy(p Platform, o Options) error {
	switch {
	case o.System:
		return UsageError{errors.New("--with-proxy installs orionctl proxy as a service of your login, not of the machine: " +
			"run `oriond service install --with-proxy` without --system (as the user whose agents use it), " +
			"or run `orionctl proxy --socket " + SystemSocket + "` under your own supervisor")}
	case p != Systemd:
		return UsageError{fmt.Errorf("--with-proxy installs a systemd user unit; on %s run `orionctl proxy` yourself "+
			"(or as a launchd agent of your own)", p.Name)}
	}
	return nil
}

// FindOrionctl finds the orionctl the proxy's unit runs: the one next to
// the running oriond first (the two are built and installed together, so
// that is the matching version), then the first on PATH.
func (e Env) FindOrionctl() (string, error) {
	dir := "the directory of oriond"
	if exe, err := e.Executable(); err == nil {
		dir = filepath.Dir(exe)
		p := filepath.Join(dir, "orionctl")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if e.LookPath != nil {
		if p, err := e.LookPath("orionctl"); err == nil {
			// systemd wants an absolute path; PATH may hold a relative
			// directory.
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("--with-proxy: orionctl is neither next to oriond (in %s) nor on PATH; "+
		"install it there (go build -o %s/ ./client/cmd/orionctl) and run this again", dir, dir)
}

// proxyControl builds the kardianos service for the proxy's unit.
func (e Env) proxyControl(text string) (ks.Service, error) {
	sys, err := e.kardianosSystem(Systemd)
	if err != nil {
		return nil, err
	}
	return sys.New(program{}, &ks.Config{
		Name:        ProxyUnitName,
		DisplayName: "Orion model-API proxy",
		Description: "Gives any agent oriond's write sessions.",
		Option: ks.KeyValue{
			"UserService":   true,
			"SystemdScript": text,
		},
	})
}

// InstalledProxy returns the proxy's service when its unit is installed
// for this user (nil otherwise), and the unit's path: the service commands
// act on it only then.
func (e Env) InstalledProxy(p Platform, o Options) (ks.Service, string, error) {
	if p != Systemd || o.System {
		return nil, "", nil
	}
	path := ProxyUnitPath(e.Home())
	if _, err := os.Stat(path); err != nil {
		return nil, path, nil
	}
	s, err := e.proxyControl("")
	return s, path, err
}

// ProxyStatus is the proxy's line of `oriond service status`, and whether
// it is installed but not running.
func ProxyStatus(s ks.Service, path string) (string, bool) {
	st, err := s.Status()
	switch {
	case errors.Is(err, ks.ErrNotInstalled):
		// The file is there but systemd does not know it: a daemon-reload
		// is missing.
		return fmt.Sprintf("%s: %s exists but systemd does not list it; run `systemctl --user daemon-reload`", ProxyDescription, path), true
	case err != nil:
		return fmt.Sprintf("%s: not running (%v); see `systemctl --user status %s` and `journalctl --user -u %s`",
			ProxyDescription, err, ProxyUnitName, ProxyUnitName), true
	case st == ks.StatusRunning:
		return fmt.Sprintf("%s: running (%s), agents point at http://%s with its secret (orionctl proxy --print-env prints the base URLs)", ProxyDescription, path, ProxyListen), false
	}
	return fmt.Sprintf("%s: installed (%s) but not running; start it with `oriond service start`", ProxyDescription, path), true
}

// InstallProxy writes and enables the proxy's unit.
func (e Env) InstallProxy(text, path string) error {
	s, err := e.proxyControl(text)
	if err != nil {
		return err
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	return nil
}
