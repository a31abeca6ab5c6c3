package service

// What the service commands do, apart from parsing flags: install (both
// units or neither), the actions, and status with its exit code.

import (
	"errors"
	"fmt"
	"io"
	"os"

	ks "github.com/kardianos/service"
)

// Exit codes of `oriond service status` (and of an action on a service
// that is not installed), after the LSB's for init scripts.
const (
	ExitRunning      = 0
	ExitNotRunning   = 3
	ExitNotInstalled = 4
)

// ExitError ends the command with a specific exit code, Msg being what it
// prints.
type ExitError struct {
	Code int
	Msg  string
}

func (e ExitError) Error() string { return e.Msg }

func systemFlag(o Options) string {
	if o.System {
		return " --system"
	}
	return ""
}

// Install writes and enables the unit text for spec (and, when proxyText
// is set, the proxy's unit: both or neither), saying on out what it did.
// It does not start them.
func (e Env) Install(p Platform, o Options, spec Spec, text, proxyText string, out io.Writer) error {
	if err := e.CheckPrivileges(o); err != nil {
		return err
	}
	if p == Systemd && !o.System {
		if err := e.CheckUserManager(); err != nil {
			return err
		}
	}
	path := UnitPath(p, o.System, spec.Home)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s already exists: oriond is installed; run `oriond service uninstall%s` first to reinstall", path, systemFlag(o))
	}
	proxyPath := ProxyUnitPath(spec.Home)
	if proxyText != "" {
		if _, err := os.Stat(proxyPath); err == nil {
			return fmt.Errorf("%s already exists: the proxy is installed; run `oriond service uninstall` first to reinstall", proxyPath)
		}
	}
	s, err := e.Control(p, o, spec, text)
	if err != nil {
		return err
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	fmt.Fprintf(out, "installed %s (%s, enabled)\n", path, Describe(p, o.System))
	if proxyText != "" {
		if err := e.InstallProxy(proxyText, proxyPath); err != nil {
			// Both or neither: a half install would leave
			// `install --with-proxy` refusing to run again.
			if uerr := s.Uninstall(); uerr != nil {
				return fmt.Errorf("%w; removing %s again also failed: %v", err, path, uerr)
			}
			return fmt.Errorf("%w; %s was removed again", err, path)
		}
		fmt.Fprintf(out, "installed %s (%s, enabled): agents point at http://%s\n", proxyPath, ProxyDescription, ProxyListen)
	}
	fmt.Fprintf(out, "start it now with: oriond service start%s\n", systemFlag(o))
	if o.System {
		fmt.Fprintf(out, "its clients (running as %s) find it with: export ORION_SOCKET=%s\n", spec.RunAs, SystemSocketFor(p, spec.RunAs))
	}
	return nil
}

// Act runs action (uninstall, start, stop or restart) on the service and on
// the proxy's when that is installed: the proxy stops before oriond and
// starts after it, as its unit's After=oriond.service orders them.
func (e Env) Act(o Options, action string, out io.Writer) error {
	if err := e.CheckPrivileges(o); err != nil {
		return err
	}
	p, s, path, err := e.Prepare(o)
	if err != nil {
		return err
	}
	px, _, err := e.InstalledProxy(p, o)
	if err != nil {
		return err
	}
	_, err = os.Stat(path)
	oriondInstalled := err == nil
	// uninstall removes a proxy left without oriond too.
	if !oriondInstalled && (px == nil || action != "uninstall") {
		return ExitError{ExitNotInstalled, fmt.Sprintf("oriond service %s: oriond is not installed (%s does not exist); install it with `oriond service install%s`",
			action, path, systemFlag(o))}
	}
	proxyAction := func() error {
		if px == nil {
			return nil
		}
		if err := ks.Control(px, action); err != nil {
			return fmt.Errorf("%s %s: %v; see `systemctl --user status %s` and `journalctl --user -u %s`",
				action, ProxyDescription, err, ProxyUnitName, ProxyUnitName)
		}
		fmt.Fprintf(out, "%s: %s done\n", ProxyDescription, action)
		return nil
	}
	if action == "stop" || action == "uninstall" {
		if err := proxyAction(); err != nil {
			return err
		}
	}
	if oriondInstalled {
		if err := ks.Control(s, action); err != nil {
			return fmt.Errorf("%s %s: %v; see %s", action, Describe(p, o.System), err, LogHint(p, o.System))
		}
		fmt.Fprintf(out, "%s: %s done\n", Describe(p, o.System), action)
	}
	if action == "start" || action == "restart" {
		return proxyAction()
	}
	return nil
}

// Status writes whether the service (and the proxy's, when installed) is
// running to out and returns nil, or returns an ExitError with
// ExitNotRunning or ExitNotInstalled that says why not.
func (e Env) Status(o Options, out io.Writer) error {
	p, s, path, err := e.Prepare(o)
	if err != nil {
		return err
	}
	// The proxy's line, when its unit is installed, follows oriond's; a
	// stopped proxy makes the exit status 3.
	px, pxPath, err := e.InstalledProxy(p, o)
	if err != nil {
		return err
	}
	var pxLine string
	var pxDown bool
	if px != nil {
		pxLine, pxDown = ProxyStatus(px, pxPath)
		pxLine = "\n" + pxLine
	}
	what := Describe(p, o.System)
	st, err := s.Status()
	switch {
	case errors.Is(err, ks.ErrNotInstalled):
		return ExitError{ExitNotInstalled, fmt.Sprintf("%s: not installed (no %s); install it with `oriond service install%s`%s", what, path, systemFlag(o), pxLine)}
	case err != nil:
		return ExitError{ExitNotRunning, fmt.Sprintf("%s: not running (%v); see %s%s", what, err, LogHint(p, o.System), pxLine)}
	case st == ks.StatusRunning && pxDown:
		return ExitError{ExitNotRunning, fmt.Sprintf("%s: running (%s)%s", what, path, pxLine)}
	case st == ks.StatusRunning:
		fmt.Fprintf(out, "%s: running (%s)%s\n", what, path, pxLine)
		return nil
	case st == ks.StatusStopped:
		return ExitError{ExitNotRunning, fmt.Sprintf("%s: installed (%s) but not running; start it with `oriond service start%s`%s", what, path, systemFlag(o), pxLine)}
	}
	return fmt.Errorf("%s: status unknown", what)
}
