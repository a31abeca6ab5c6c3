package main

// oriond service: install oriond as a service of the user's service manager
// (a systemd user unit on Linux, a launchd agent on macOS) or, with
// --system, of the machine's, and control it. github.com/kardianos/service
// writes the unit and runs systemctl or launchctl; the unit text is ours
// (rendered below, passed to it as a template without actions), because
// its own systemd unit says WantedBy=multi-user.target, which a user
// manager does not have.
//
// The service runs `oriond run`, which serves until SIGTERM; kardianos'
// Run is not used, so the program handed to it does nothing.

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Service names.
const (
	// systemdUnitName is the systemd unit: oriond.service.
	systemdUnitName = "oriond"
	// launchdLabel is the launchd job label and plist name.
	launchdLabel = "com.github.orion-agent.oriond"
	// systemSocket is where a system-wide systemd service listens: in its
	// RuntimeDirectory, private to the account it runs as.
	systemSocket = "/run/oriond/oriond.sock"
)

// systemSocketFor is the socket of a system-wide service on p. A system
// service has no XDG_RUNTIME_DIR, so its clients cannot find it by the
// default: they set ORION_SOCKET to this.
func systemSocketFor(p platform, runAs string) string {
	if p == platformLaunchd {
		return "/tmp/oriond-" + runAs + "/oriond.sock"
	}
	return systemSocket
}

// Exit codes of `oriond service status`, after the LSB's for init scripts.
const (
	exitRunning      = 0
	exitNotRunning   = 3
	exitNotInstalled = 4
)

// exitError ends oriond with a specific exit code, having printed msg.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// errNoServiceManager explains that this machine has nothing to install a
// service into.
var errNoServiceManager = errors.New("no supported service manager")

// serviceEnv is everything service control reads from the machine, so tests
// can replace it.
type serviceEnv struct {
	getenv func(string) string
	goos   string
	// systemdBooted reports whether systemd runs this machine (as
	// sd_booted(3) decides: /run/systemd/system exists).
	systemdBooted func() bool
	// pid1 names PID 1, for the message when it is not systemd.
	pid1       func() string
	executable func() (string, error)
	// lookPath finds a program on PATH (orionctl, for --with-proxy).
	lookPath func(string) (string, error)
	euid     int
	// run runs a command and returns its combined output.
	run func(name string, args ...string) (string, error)
}

func realServiceEnv(getenv func(string) string) serviceEnv {
	return serviceEnv{
		getenv: getenv,
		goos:   runtime.GOOS,
		systemdBooted: func() bool {
			fi, err := os.Stat("/run/systemd/system")
			return err == nil && fi.IsDir()
		},
		pid1: func() string {
			b, err := os.ReadFile("/proc/1/comm")
			if err != nil {
				return "unknown"
			}
			return strings.TrimSpace(string(b))
		},
		executable: func() (string, error) {
			p, err := os.Executable()
			if err != nil {
				return "", err
			}
			return filepath.EvalSymlinks(p)
		},
		lookPath: exec.LookPath,
		euid:     os.Geteuid(),
		run: func(name string, args ...string) (string, error) {
			out, err := exec.Command(name, args...).CombinedOutput()
			return string(out), err
		},
	}
}

// platform is a service manager oriond supports.
type platform struct {
	// name is "systemd" or "launchd"; kardianos is kardianos' name for it.
	name, kardianos string
}

var (
	platformSystemd = platform{"systemd", "linux-systemd"}
	platformLaunchd = platform{"launchd", "darwin-launchd"}
)

// detect finds the service manager of this machine, or explains why there
// is none.
func (e serviceEnv) detect() (platform, error) {
	switch e.goos {
	case "linux":
		if !e.systemdBooted() {
			return platform{}, fmt.Errorf("%w: this machine does not run systemd (no /run/systemd/system; PID 1 is %q), "+
				"so oriond cannot be installed or controlled as a service here. Run it in the foreground with `oriond run`, "+
				"or under the supervisor you use (`oriond service install --print` shows the unit it would install)",
				errNoServiceManager, e.pid1())
		}
		return platformSystemd, nil
	case "darwin":
		return platformLaunchd, nil
	}
	return platform{}, fmt.Errorf("%w: oriond installs services under systemd (Linux) and launchd (macOS), not on %s; run `oriond run` under your own supervisor",
		errNoServiceManager, e.goos)
}

// installSpec is what a service runs, and for whom.
type installSpec struct {
	// Exec is the executable and its arguments.
	Exec []string
	// System installs for the whole machine rather than for this user.
	System bool
	// RunAs is the account a system service runs as.
	RunAs string
	// Home is the home directory of the user (launchd logs go under it).
	Home string
}

// systemdUnit renders the unit file.
func systemdUnit(s installSpec) (string, error) {
	var b strings.Builder
	kind := "a systemd user service (systemctl --user)"
	if s.System {
		kind = "a system-wide systemd service running as " + s.RunAs
	}
	fmt.Fprintf(&b, "# oriond.service: the Orion write-session daemon, as %s.\n", kind)
	b.WriteString("# Written by `oriond service install`; `oriond service uninstall` removes it.\n")
	b.WriteString("# Settings belong in the config file: see `oriond config print`.\n")
	b.WriteString("[Unit]\nDescription=Orion write-session daemon\nDocumentation=man:oriond(1)\n\n[Service]\nType=simple\n")
	if s.System {
		fmt.Fprintf(&b, "User=%s\n", s.RunAs)
		b.WriteString("# The socket lives in /run/oriond, private to that account; its clients set\n")
		fmt.Fprintf(&b, "# ORION_SOCKET=%s.\nRuntimeDirectory=oriond\nRuntimeDirectoryMode=0700\n", systemSocketFor(platformSystemd, s.RunAs))
	}
	exec, err := systemdExec(s.Exec)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", exec)
	b.WriteString("Restart=on-failure\nRestartSec=2s\n")
	b.WriteString("# On SIGTERM oriond finishes the requests in flight and closes its store.\nTimeoutStopSec=30s\n")
	b.WriteString("NoNewPrivileges=yes\n\n[Install]\n")
	if s.System {
		b.WriteString("WantedBy=multi-user.target\n")
	} else {
		// A user manager has no multi-user.target; default.target is
		// reached when the user's manager starts (at login, or at boot
		// with lingering enabled).
		b.WriteString("WantedBy=default.target\n")
	}
	return b.String(), nil
}

// systemdExec quotes a command line for ExecStart: words with anything but
// safe characters are double-quoted, and % and $ are escaped so systemd
// expands neither specifiers nor variables.
func systemdExec(args []string) (string, error) {
	words := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "\n\r\x00") {
			return "", fmt.Errorf("argument %q cannot go in a unit file", a)
		}
		a = strings.ReplaceAll(a, "%", "%%")
		a = strings.ReplaceAll(a, "$", "$$")
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%$") == "" {
			words[i] = a
			continue
		}
		a = strings.ReplaceAll(a, `\`, `\\`)
		a = strings.ReplaceAll(a, `"`, `\"`)
		words[i] = `"` + a + `"`
	}
	return strings.Join(words, " "), nil
}

// launchdPlist renders the launchd job.
func launchdPlist(s installSpec) string {
	esc := func(v string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(v))
		return b.String()
	}
	logFile := filepath.Join(s.Home, "Library/Logs/oriond.log")
	if s.System {
		logFile = "/Library/Logs/oriond.log"
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- The Orion write-session daemon, written by "oriond service install";
     "oriond service uninstall" removes it. Settings belong in the config
     file: see "oriond config print". -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + launchdLabel + `</string>
	<key>ProgramArguments</key>
	<array>
`)
	for _, a := range s.Exec {
		b.WriteString("\t\t<string>" + esc(a) + "</string>\n")
	}
	b.WriteString(`	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ProcessType</key>
	<string>Background</string>
	<key>StandardErrorPath</key>
	<string>` + esc(logFile) + `</string>
	<key>StandardOutPath</key>
	<string>` + esc(logFile) + `</string>
`)
	if s.System {
		b.WriteString("\t<key>UserName</key>\n\t<string>" + esc(s.RunAs) + "</string>\n")
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

// render is the unit text of p for s.
func render(p platform, s installSpec) (string, error) {
	var text string
	var err error
	switch p {
	case platformSystemd:
		text, err = systemdUnit(s)
	case platformLaunchd:
		text = launchdPlist(s)
	default:
		return "", fmt.Errorf("no unit template for %q", p.name)
	}
	if err == nil && strings.Contains(text, "{{") {
		// kardianos reads the text as a template; ours has no actions.
		err = errors.New(`"{{" cannot appear in the service's command line`)
	}
	return text, err
}

// serviceName is the service's name on p.
func serviceName(p platform) string {
	if p == platformLaunchd {
		return launchdLabel
	}
	return systemdUnitName
}

// unitPath is where the unit of p is installed.
func unitPath(p platform, system bool, home string) string {
	switch {
	case p == platformLaunchd && system:
		return "/Library/LaunchDaemons/" + launchdLabel + ".plist"
	case p == platformLaunchd:
		return filepath.Join(home, "Library/LaunchAgents", launchdLabel+".plist")
	case system:
		return "/etc/systemd/system/" + systemdUnitName + ".service"
	default:
		// kardianos writes ~/.config/systemd/user whatever
		// XDG_CONFIG_HOME says; so do we.
		return filepath.Join(home, ".config/systemd/user", systemdUnitName+".service")
	}
}

// serviceOptions are the flags shared by the service subcommands.
type serviceOptions struct {
	system bool
	runAs  string
}

// control builds the kardianos service for p.
func (e serviceEnv) control(p platform, o serviceOptions, spec installSpec, text string) (service.Service, error) {
	var sys service.System
	for _, s := range service.AvailableSystems() {
		if s.String() == p.kardianos {
			sys = s
		}
	}
	if sys == nil {
		return nil, fmt.Errorf("%w: kardianos/service has no %s backend on %s", errNoServiceManager, p.kardianos, e.goos)
	}
	cfg := &service.Config{
		Name:        serviceName(p),
		DisplayName: "Orion write-session daemon",
		Description: "Journals content LLM agents stream and writes files atomically.",
		Option: service.KeyValue{
			"UserService":   !o.system,
			"SystemdScript": text,
			"LaunchdConfig": text,
			"RunAtLoad":     true,
			"KeepAlive":     true,
		},
	}
	if len(spec.Exec) > 0 {
		cfg.Executable, cfg.Arguments = spec.Exec[0], spec.Exec[1:]
	}
	if o.system {
		cfg.UserName = spec.RunAs
	}
	return sys.New(program{}, cfg)
}

// program is the kardianos Interface. oriond run serves on its own, so
// Start and Stop, called only by kardianos' Run, return at once.
type program struct{}

func (program) Start(service.Service) error { return nil }
func (program) Stop(service.Service) error  { return nil }

// checkUserManager makes sure systemctl --user reaches the user's manager,
// which kardianos would otherwise report as a bare exit status.
func (e serviceEnv) checkUserManager() error {
	out, err := e.run("systemctl", "--user", "is-system-running")
	if err == nil {
		return nil
	}
	state := strings.TrimSpace(out)
	switch state {
	case "degraded", "starting", "initializing", "maintenance":
		return nil
	}
	return fmt.Errorf("%w: systemctl --user cannot reach your systemd user manager (%s). "+
		"Log in through a session that starts one (a desktop or ssh login with systemd-logind), "+
		"or have root run `loginctl enable-linger %s`; or install system-wide with --system",
		errNoServiceManager, firstLine(strings.TrimSpace(out+" "+err.Error())), currentUser())
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "$USER"
}

func (e serviceEnv) home() string {
	if h := e.getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// newServiceCmd is `oriond service`.
func newServiceCmd(getenv func(string) string) *cobra.Command {
	return newServiceCmdEnv(realServiceEnv(getenv))
}

func newServiceCmdEnv(env serviceEnv) *cobra.Command {
	o := &serviceOptions{}
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install oriond as a service of your login, and control it",
		Long: `Install oriond as a service and control it through the service manager.

By default the service is yours: a systemd user unit
(~/.config/systemd/user/oriond.service, started with your user manager, at
login or at boot with lingering) on Linux, a launchd agent
(~/Library/LaunchAgents/` + launchdLabel + `.plist) on macOS. With --system it
is the machine's (/etc/systemd/system/oriond.service, or a launchd daemon),
runs as --run-as, and needs root.

The service runs "oriond run"; its settings come from the config file (see
"oriond config"). Flags after -- on install are added to its command line.

With install --with-proxy (systemd user services only), orionctl proxy, the
model-API proxy for agents, is installed and enabled beside it as
orionctl-proxy.service; uninstall removes it, start, stop and restart act on
it too, and status reports it.

Logs: journalctl --user -u oriond on Linux (oriond notices the journal and
leaves timestamps to it), ~/Library/Logs/oriond.log on macOS.

Exit status of status: 0 running (and the proxy too, if installed), 3
installed but not running (oriond or the proxy), 4 not installed, 1 no
service manager here or another failure.`,
	}
	cmd.PersistentFlags().BoolVar(&o.system, "system", false, "the machine's service (needs root) instead of yours")
	cmd.AddCommand(
		newServiceInstallCmd(env, o),
		newServiceActionCmd(env, o, "uninstall", "Stop and remove the service"),
		newServiceActionCmd(env, o, "start", "Start the service"),
		newServiceActionCmd(env, o, "stop", "Stop the service"),
		newServiceActionCmd(env, o, "restart", "Restart the service"),
		newServiceStatusCmd(env, o),
	)
	return cmd
}

// spec is what install would install.
func (e serviceEnv) spec(cmd *cobra.Command, p platform, o *serviceOptions, extra []string, forPrint bool) (installSpec, error) {
	exe, err := e.executable()
	if err != nil {
		return installSpec{}, fmt.Errorf("finding oriond's executable: %w", err)
	}
	if !forPrint && strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return installSpec{}, usageError{fmt.Errorf("oriond runs from a temporary `go run` build (%s), which will be gone; "+
			"build it first: go build -o ~/.local/bin/oriond ./daemon/cmd/oriond", exe)}
	}
	args := []string{exe, "run"}
	// A config file named explicitly is named in the unit too, or the
	// service would read the default one.
	if cf, err := locateConfig(cmd, e.getenv); err == nil && cf.Explicit {
		args = append(args, "--config", cf.Path)
	}
	s := installSpec{System: o.system, Home: e.home()}
	if o.system {
		s.RunAs = o.runAs
		if s.RunAs == "" {
			s.RunAs = e.getenv("SUDO_USER")
		}
		if s.RunAs == "" {
			return installSpec{}, usageError{errors.New("--system needs --run-as USER: the account the daemon runs as " +
				"(it writes files with that account's rights; give root only if you mean it)")}
		}
		args = append(args, "--socket", systemSocketFor(p, s.RunAs))
	}
	s.Exec = append(args, extra...)
	return s, nil
}

func newServiceInstallCmd(env serviceEnv, o *serviceOptions) *cobra.Command {
	var print, withProxy bool
	var platformName string
	cmd := &cobra.Command{
		Use:   "install [-- RUN-FLAGS...]",
		Short: "Install the service (enabled, not started)",
		Long: `Install the service: write its unit, enable it so that it starts with your
user manager (or the machine, with --system), but do not start it now; run
"oriond service start" for that. --print shows the unit and changes nothing;
it works without a service manager.

--with-proxy also installs and enables orionctl proxy (the model-API proxy
for agents, on ` + proxyListen + `) as the systemd user unit ` + proxyUnitName + `.service. It runs
the orionctl next to this oriond, or else the first on PATH.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var p platform
			var err error
			switch {
			case print && platformName != "":
				p, err = platformNamed(platformName)
			default:
				p, err = env.detect()
				if err != nil && print {
					p, err = platformForOS(env.goos)
				}
			}
			if err != nil {
				return err
			}
			spec, err := env.spec(cmd, p, o, args, print)
			if err != nil {
				return err
			}
			text, err := render(p, spec)
			if err != nil {
				return err
			}
			// The proxy is checked and rendered before anything is
			// written: install writes both units or neither.
			var proxyText string
			if withProxy {
				if err := checkWithProxy(p, o); err != nil {
					return err
				}
				orionctl, err := env.findOrionctl()
				if err != nil {
					return err
				}
				if proxyText, err = proxyUnit(orionctl); err != nil {
					return err
				}
			}
			if print {
				if proxyText != "" {
					text += "\n" + proxyText
				}
				_, err := io.WriteString(cmd.OutOrStdout(), text)
				return err
			}
			if err := env.checkPrivileges(o); err != nil {
				return err
			}
			if p == platformSystemd && !o.system {
				if err := env.checkUserManager(); err != nil {
					return err
				}
			}
			path := unitPath(p, o.system, spec.Home)
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("%s already exists: oriond is installed; run `oriond service uninstall%s` first to reinstall", path, systemFlag(o))
			}
			proxyPath := proxyUnitPath(spec.Home)
			if withProxy {
				if _, err := os.Stat(proxyPath); err == nil {
					return fmt.Errorf("%s already exists: the proxy is installed; run `oriond service uninstall` first to reinstall", proxyPath)
				}
			}
			s, err := env.control(p, *o, spec, text)
			if err != nil {
				return err
			}
			if err := s.Install(); err != nil {
				return fmt.Errorf("installing %s: %w", path, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "installed %s (%s, enabled)\n", path, describe(p, o.system))
			if withProxy {
				if err := installProxy(env, proxyText, proxyPath); err != nil {
					// Both or neither: a half install would leave
					// `install --with-proxy` refusing to run again.
					if uerr := s.Uninstall(); uerr != nil {
						return fmt.Errorf("%w; removing %s again also failed: %v", err, path, uerr)
					}
					return fmt.Errorf("%w; %s was removed again", err, path)
				}
				fmt.Fprintf(out, "installed %s (%s, enabled): agents point at http://%s\n", proxyPath, proxyDescription, proxyListen)
			}
			fmt.Fprintf(out, "start it now with: oriond service start%s\n", systemFlag(o))
			if o.system {
				fmt.Fprintf(out, "its clients (running as %s) find it with: export ORION_SOCKET=%s\n", spec.RunAs, systemSocketFor(p, spec.RunAs))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&print, "print", false, "print the unit that install would write, and do nothing else")
	cmd.Flags().BoolVar(&withProxy, "with-proxy", false, "also install and enable orionctl proxy (the model-API proxy for agents) as a systemd user unit")
	cmd.Flags().StringVar(&platformName, "platform", "", "with --print: systemd or launchd (default: this machine's)")
	cmd.Flags().StringVar(&o.runAs, "run-as", "", "with --system: the account the daemon runs as (default $SUDO_USER)")
	return cmd
}

func platformNamed(name string) (platform, error) {
	switch name {
	case "systemd":
		return platformSystemd, nil
	case "launchd":
		return platformLaunchd, nil
	}
	return platform{}, usageError{fmt.Errorf("--platform %q: use systemd or launchd", name)}
}

func platformForOS(goos string) (platform, error) {
	if goos == "darwin" {
		return platformLaunchd, nil
	}
	return platformSystemd, nil
}

func describe(p platform, system bool) string {
	switch {
	case p == platformLaunchd && system:
		return "launchd daemon " + launchdLabel
	case p == platformLaunchd:
		return "launchd agent " + launchdLabel
	case system:
		return "systemd system unit oriond.service"
	}
	return "systemd user unit oriond.service"
}

func systemFlag(o *serviceOptions) string {
	if o.system {
		return " --system"
	}
	return ""
}

func (e serviceEnv) checkPrivileges(o *serviceOptions) error {
	if o.system && e.euid != 0 {
		return errors.New("--system changes the machine's services and needs root: sudo oriond service ... --system")
	}
	return nil
}

// prepare detects the platform and builds the service for an action.
func (e serviceEnv) prepare(cmd *cobra.Command, o *serviceOptions) (platform, service.Service, string, error) {
	p, err := e.detect()
	if err != nil {
		return platform{}, nil, "", err
	}
	if p == platformSystemd && !o.system {
		if err := e.checkUserManager(); err != nil {
			return platform{}, nil, "", err
		}
	}
	home := e.home()
	s, err := e.control(p, *o, installSpec{System: o.system, Home: home}, "")
	return p, s, unitPath(p, o.system, home), err
}

func newServiceActionCmd(env serviceEnv, o *serviceOptions, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action,
		Short: short,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := env.checkPrivileges(o); err != nil {
				return err
			}
			p, s, path, err := env.prepare(cmd, o)
			if err != nil {
				return err
			}
			px, _, err := env.installedProxy(p, o)
			if err != nil {
				return err
			}
			_, err = os.Stat(path)
			oriondInstalled := err == nil
			// uninstall removes a proxy left without oriond too.
			if !oriondInstalled && (px == nil || action != "uninstall") {
				return exitError{exitNotInstalled, fmt.Sprintf("oriond service %s: oriond is not installed (%s does not exist); install it with `oriond service install%s`",
					action, path, systemFlag(o))}
			}
			out := cmd.OutOrStdout()
			proxyAction := func() error {
				if px == nil {
					return nil
				}
				if err := service.Control(px, action); err != nil {
					return fmt.Errorf("%s %s: %v; see `systemctl --user status %s` and `journalctl --user -u %s`",
						action, proxyDescription, err, proxyUnitName, proxyUnitName)
				}
				fmt.Fprintf(out, "%s: %s done\n", proxyDescription, action)
				return nil
			}
			// The proxy stops before oriond and starts after it, as its
			// unit's After=oriond.service orders them.
			if action == "stop" || action == "uninstall" {
				if err := proxyAction(); err != nil {
					return err
				}
			}
			if oriondInstalled {
				if err := service.Control(s, action); err != nil {
					return fmt.Errorf("%s %s: %v; see %s", action, describe(p, o.system), err, logHint(p, o.system))
				}
				fmt.Fprintf(out, "%s: %s done\n", describe(p, o.system), action)
			}
			if action == "start" || action == "restart" {
				return proxyAction()
			}
			return nil
		},
	}
}

func logHint(p platform, system bool) string {
	switch {
	case p == platformLaunchd:
		return "the log in ~/Library/Logs/oriond.log"
	case system:
		return "`systemctl status oriond` and `journalctl -u oriond`"
	}
	return "`systemctl --user status oriond` and `journalctl --user -u oriond`"
}

func newServiceStatusCmd(env serviceEnv, o *serviceOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the service is installed and running (exit 0 running, 3 stopped, 4 not installed)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, s, path, err := env.prepare(cmd, o)
			if err != nil {
				return err
			}
			// The proxy's line, when its unit is installed, follows
			// oriond's; a stopped proxy makes the exit status 3.
			px, pxPath, err := env.installedProxy(p, o)
			if err != nil {
				return err
			}
			var pxLine string
			var pxDown bool
			if px != nil {
				pxLine, pxDown = proxyStatus(px, pxPath)
				pxLine = "\n" + pxLine
			}
			what := describe(p, o.system)
			st, err := s.Status()
			switch {
			case errors.Is(err, service.ErrNotInstalled):
				return exitError{exitNotInstalled, fmt.Sprintf("%s: not installed (no %s); install it with `oriond service install%s`%s", what, path, systemFlag(o), pxLine)}
			case err != nil:
				return exitError{exitNotRunning, fmt.Sprintf("%s: not running (%v); see %s%s", what, err, logHint(p, o.system), pxLine)}
			case st == service.StatusRunning && pxDown:
				return exitError{exitNotRunning, fmt.Sprintf("%s: running (%s)%s", what, path, pxLine)}
			case st == service.StatusRunning:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: running (%s)%s\n", what, path, pxLine)
				return nil
			case st == service.StatusStopped:
				return exitError{exitNotRunning, fmt.Sprintf("%s: installed (%s) but not running; start it with `oriond service start%s`%s", what, path, systemFlag(o), pxLine)}
			}
			return fmt.Errorf("%s: status unknown", what)
		},
	}
}

// logTarget is where oriond's log goes, as far as it can tell.
type logTarget struct {
	// Manager is "systemd" or "launchd" when one started oriond.
	Manager string
	// Journal is true when stderr is a journald stream: journald adds
	// timestamps itself and reads a <N> syslog priority at the start of
	// each line.
	Journal bool
}

// detectLogTarget looks at the environment a service manager sets and at
// stderr. systemd sets JOURNAL_STREAM to the device and inode of the
// journal stream it connects stderr to (children that inherit the variable
// but not the stream, such as a shell started from a service, do not
// match); launchd sets XPC_SERVICE_NAME and is the parent of its jobs. A
// terminal on stderr means someone is watching: never a service.
func detectLogTarget(getenv func(string) string, stderr *os.File) logTarget {
	return detectLogTargetWith(getenv, stderr, parentIsSystemd)
}

// parentIsSystemd reports whether the parent process is systemd: PID 1, or
// a user manager (a process named systemd).
func parentIsSystemd() bool {
	ppid := os.Getppid()
	if ppid == 1 {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}

func detectLogTargetWith(getenv func(string) string, stderr *os.File, parentIsSystemd func() bool) logTarget {
	if term.IsTerminal(int(stderr.Fd())) {
		return logTarget{}
	}
	if js := getenv("JOURNAL_STREAM"); js != "" {
		var dev, ino uint64
		if _, err := fmt.Sscanf(js, "%d:%d", &dev, &ino); err == nil {
			if fi, err := stderr.Stat(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino {
					return logTarget{Manager: "systemd", Journal: true}
				}
			}
		}
	}
	// Every process under a service inherits INVOCATION_ID; only the one
	// systemd started has it for a parent.
	if getenv("INVOCATION_ID") != "" && parentIsSystemd() {
		return logTarget{Manager: "systemd"}
	}
	if x := getenv("XPC_SERVICE_NAME"); x != "" && x != "0" && os.Getppid() == 1 {
		return logTarget{Manager: "launchd"}
	}
	return logTarget{}
}

// newLogHandler is the slog handler for format and level. Written to the
// journal, records have no time (journald stamps each line) and start with
// their syslog priority (<3> error, <4> warning, <6> info, <7> debug), so
// `journalctl -p warning` filters them.
func newLogHandler(w io.Writer, format string, level slog.Level, t logTarget) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: level}
	var jw *journalWriter
	if t.Journal {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
		jw = &journalWriter{w: w}
		w = jw
	}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: use text or json", format)
	}
	if jw != nil {
		h = journalHandler{inner: h, mu: &sync.Mutex{}, jw: jw}
	}
	return h, nil
}

// journalWriter prefixes each record with its priority, in one write.
type journalWriter struct {
	w      io.Writer
	prefix string
}

func (j *journalWriter) Write(p []byte) (int, error) {
	buf := make([]byte, 0, len(j.prefix)+len(p))
	buf = append(append(buf, j.prefix...), p...)
	if _, err := j.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// journalHandler sets the priority prefix for each record; the built-in
// handlers write a record in a single Write, under mu here.
type journalHandler struct {
	inner slog.Handler
	mu    *sync.Mutex
	jw    *journalWriter
}

func (h journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jw.prefix = syslogPriority(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return journalHandler{inner: h.inner.WithAttrs(as), mu: h.mu, jw: h.jw}
}

func (h journalHandler) WithGroup(name string) slog.Handler {
	return journalHandler{inner: h.inner.WithGroup(name), mu: h.mu, jw: h.jw}
}

func syslogPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	}
	return "<7>"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
