package main

// oriond service install --with-proxy: orionctl proxy (the model-API proxy
// for agents) as a systemd user service next to oriond's. Its unit is
// rendered here, like oriond's, so that the packaged
// packaging/systemd/orionctl-proxy.service is what install writes for
// /usr/bin/orionctl (a test keeps them equal). Once installed, the other
// service commands act on it too: start and restart after oriond, stop and
// uninstall before it, status reports it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kardianos/service"
)

const (
	// proxyUnitName is the proxy's systemd unit: orionctl-proxy.service.
	proxyUnitName = "orionctl-proxy"
	// proxyListen is the proxy's address in the unit: orionctl proxy's
	// default, written out so the unit says where agents point.
	proxyListen = "127.0.0.1:8788"
)

// proxyUnit renders the proxy's user unit for the orionctl at path.
func proxyUnit(orionctl string) (string, error) {
	exec, err := systemdExec([]string{orionctl, "proxy", "--listen", proxyListen})
	if err != nil {
		return "", err
	}
	text := `# orionctl-proxy.service: the Orion model-API proxy (orionctl proxy), as a systemd user service.
# Agents point their base URL at it: ANTHROPIC_BASE_URL=http://` + proxyListen + `,
# OPENAI_BASE_URL=http://` + proxyListen + `/v1. It listens on loopback only.
# Written and enabled by ` + "`oriond service install --with-proxy`" + ` (` + "`oriond service uninstall`" + ` removes it),
# or installed by the package: then enable it with systemctl --user enable --now orionctl-proxy.
# Relative targets resolve against --workspace-root (here your home directory)
# unless a request names its own with the X-Orion-Workspace header.
[Unit]
Description=Orion model-API proxy (write sessions for any agent)
Documentation=man:orionctl(1)
# The proxy reaches oriond at each request, and reconnects when it restarts;
# starting it after oriond only spares the first request an error.
Wants=oriond.service
After=oriond.service

[Service]
Type=simple
# %h is systemd's specifier for the user's home directory.
ExecStart=` + exec + ` --workspace-root %h
Restart=on-failure
RestartSec=2s
NoNewPrivileges=yes

[Install]
WantedBy=default.target
`
	return text, nil
}

// proxyUnitPath is where the proxy's user unit is installed (beside
// oriond's, wherever kardianos puts that).
func proxyUnitPath(home string) string {
	return filepath.Join(home, ".config/systemd/user", proxyUnitName+".service")
}

// checkWithProxy says whether --with-proxy can apply: the proxy is one
// user's, talking to that user's oriond over its default socket.
func checkWithProxy(p platform, o *serviceOptions) error {
	switch {
	case o.system:
		return usageError{errors.New("--with-proxy installs orionctl proxy as a service of your login, not of the machine: " +
			"run `oriond service install --with-proxy` without --system (as the user whose agents use it), " +
			"or run `orionctl proxy --socket " + systemSocket + "` under your own supervisor")}
	case p != platformSystemd:
		return usageError{fmt.Errorf("--with-proxy installs a systemd user unit; on %s run `orionctl proxy` yourself "+
			"(or as a launchd agent of your own)", p.name)}
	}
	return nil
}

// findOrionctl finds the orionctl the proxy's unit runs: the one next to
// the running oriond first (the two are built and installed together, so
// that is the matching version), then the first on PATH.
func (e serviceEnv) findOrionctl() (string, error) {
	dir := "the directory of oriond"
	if exe, err := e.executable(); err == nil {
		dir = filepath.Dir(exe)
		p := filepath.Join(dir, "orionctl")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if e.lookPath != nil {
		if p, err := e.lookPath("orionctl"); err == nil {
			// systemd wants an absolute path; PATH may hold a relative
			// directory.
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("--with-proxy: orionctl is neither next to oriond (in %s) nor on PATH; "+
		"install it there (go build -o %s/ ./client/cmd/orionctl) and run this again", dir, dir)
}

// proxyControl builds the kardianos service for the proxy's unit.
func (e serviceEnv) proxyControl(text string) (service.Service, error) {
	var sys service.System
	for _, s := range service.AvailableSystems() {
		if s.String() == platformSystemd.kardianos {
			sys = s
		}
	}
	if sys == nil {
		return nil, fmt.Errorf("%w: kardianos/service has no %s backend on %s", errNoServiceManager, platformSystemd.kardianos, e.goos)
	}
	return sys.New(program{}, &service.Config{
		Name:        proxyUnitName,
		DisplayName: "Orion model-API proxy",
		Description: "Gives any agent oriond's write sessions.",
		Option: service.KeyValue{
			"UserService":   true,
			"SystemdScript": text,
		},
	})
}

// installedProxy returns the proxy's service when its unit is installed
// for this user (nil otherwise): the service commands act on it only then.
func (e serviceEnv) installedProxy(p platform, o *serviceOptions) (service.Service, string, error) {
	if p != platformSystemd || o.system {
		return nil, "", nil
	}
	path := proxyUnitPath(e.home())
	if _, err := os.Stat(path); err != nil {
		return nil, path, nil
	}
	s, err := e.proxyControl("")
	return s, path, err
}

const proxyDescription = "systemd user unit " + proxyUnitName + ".service"

// proxyStatus is the proxy's line of `oriond service status`, and whether
// it is installed but not running.
func proxyStatus(s service.Service, path string) (string, bool) {
	st, err := s.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		// The file is there but systemd does not know it: a daemon-reload
		// is missing.
		return fmt.Sprintf("%s: %s exists but systemd does not list it; run `systemctl --user daemon-reload`", proxyDescription, path), true
	case err != nil:
		return fmt.Sprintf("%s: not running (%v); see `systemctl --user status %s` and `journalctl --user -u %s`",
			proxyDescription, err, proxyUnitName, proxyUnitName), true
	case st == service.StatusRunning:
		return fmt.Sprintf("%s: running (%s), agents point at http://%s", proxyDescription, path, proxyListen), false
	}
	return fmt.Sprintf("%s: installed (%s) but not running; start it with `oriond service start`", proxyDescription, path), true
}

// installProxy writes and enables the proxy's unit.
func installProxy(e serviceEnv, text, path string) error {
	s, err := e.proxyControl(text)
	if err != nil {
		return err
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	return nil
}
