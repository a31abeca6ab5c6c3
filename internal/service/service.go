// Package service installs oriond as a service of the user's service
// manager (a systemd user unit on Linux, a launchd agent on macOS) or, for
// a system service, of the machine's, and controls it.
// github.com/kardianos/service writes the unit and runs systemctl or
// launchctl; the unit text is ours, rendered from the files in packaging/
// (systemd.go, launchd.go) and passed to it as a template without actions,
// because its own systemd unit says WantedBy=multi-user.target, which a
// user manager does not have.
//
// The service runs `oriond run`, which serves until SIGTERM; kardianos' Run
// is not used, so the program handed to it does nothing.
//
// Both platforms' units render on any system (`oriond service install
// --print --platform launchd` works on Linux); what asks the machine
// itself is in Env, with its real values per system in env_*.go.
package service

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"

	ks "github.com/kardianos/service"
)

// Service names.
const (
	// SystemdUnitName is the systemd unit: oriond.service.
	SystemdUnitName = "oriond"
	// LaunchdLabel is the launchd job label and plist name.
	LaunchdLabel = "com.github.orion-agent.oriond"
	// SystemSocket is where a system-wide systemd service listens: in its
	// RuntimeDirectory, private to the account it runs as.
	SystemSocket = "/run/oriond/oriond.sock"
)

// ErrNoServiceManager explains that this machine has nothing to install a
// service into.
var ErrNoServiceManager = errors.New("no supported service manager")

// UsageError is an error in how the command was invoked, rather than in
// what it found: the command exits with status 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Platform is a service manager oriond supports.
type Platform struct {
	// Name is "systemd" or "launchd"; kardianos is kardianos' name for it.
	Name, kardianos string
}

// The platforms.
var (
	Systemd = Platform{"systemd", "linux-systemd"}
	Launchd = Platform{"launchd", "darwin-launchd"}
)

// SystemSocketFor is the socket of a system-wide service on p. A system
// service has no XDG_RUNTIME_DIR, so its clients cannot find it by the
// default: they set ORION_SOCKET to this.
func SystemSocketFor(p Platform, runAs string) string {
	if p == Launchd {
		return "/tmp/oriond-" + runAs + "/oriond.sock"
	}
	return SystemSocket
}

// Env is everything service control reads from the machine, so tests can
// replace it.
type Env struct {
	Getenv func(string) string
	GOOS   string
	// SystemdBooted reports whether systemd runs this machine (as
	// sd_booted(3) decides: /run/systemd/system exists).
	SystemdBooted func() bool
	// PID1 names PID 1, for the message when it is not systemd.
	PID1       func() string
	Executable func() (string, error)
	// LookPath finds a program on PATH (orionctl, for --with-proxy).
	LookPath func(string) (string, error)
	EUID     int
	// Run runs a command and returns its combined output.
	Run func(name string, args ...string) (string, error)
}

// RealEnv is this machine's Env.
func RealEnv(getenv func(string) string) Env {
	return Env{
		Getenv:        getenv,
		GOOS:          runtime.GOOS,
		SystemdBooted: systemdBooted,
		PID1:          pid1,
		Executable: func() (string, error) {
			p, err := os.Executable()
			if err != nil {
				return "", err
			}
			return filepath.EvalSymlinks(p)
		},
		LookPath: exec.LookPath,
		EUID:     os.Geteuid(),
		Run: func(name string, args ...string) (string, error) {
			out, err := exec.Command(name, args...).CombinedOutput()
			return string(out), err
		},
	}
}

// Detect finds the service manager of this machine, or explains why there
// is none.
func (e Env) Detect() (Platform, error) {
	switch e.GOOS {
	case "linux":
		if !e.SystemdBooted() {
			return Platform{}, fmt.Errorf("%w: this machine does not run systemd (no /run/systemd/system; PID 1 is %q), "+
				"so oriond cannot be installed or controlled as a service here. Run it in the foreground with `oriond run`, "+
				"or under the supervisor you use (`oriond service install --print` shows the unit it would install)",
				ErrNoServiceManager, e.PID1())
		}
		return Systemd, nil
	case "darwin":
		return Launchd, nil
	}
	return Platform{}, fmt.Errorf("%w: oriond installs services under systemd (Linux) and launchd (macOS), not on %s; run `oriond run` under your own supervisor",
		ErrNoServiceManager, e.GOOS)
}

// PlatformNamed is the platform called name ("systemd" or "launchd").
func PlatformNamed(name string) (Platform, error) {
	switch name {
	case "systemd":
		return Systemd, nil
	case "launchd":
		return Launchd, nil
	}
	return Platform{}, UsageError{fmt.Errorf("--platform %q: use systemd or launchd", name)}
}

// PlatformForOS is the platform of goos, whether or not it runs.
func PlatformForOS(goos string) Platform {
	if goos == "darwin" {
		return Launchd
	}
	return Systemd
}

// Options say whose service it is.
type Options struct {
	// System is the machine's service rather than the user's.
	System bool
	// RunAs is the account a system service runs as.
	RunAs string
}

// Spec is what a service runs, and for whom.
type Spec struct {
	// Exec is the executable and its arguments.
	Exec []string
	// System installs for the whole machine rather than for this user.
	System bool
	// RunAs is the account a system service runs as.
	RunAs string
	// Home is the home directory of the user (launchd logs go under it).
	Home string
}

// Render is the unit text of p for s.
func Render(p Platform, s Spec) (string, error) {
	var text string
	var err error
	switch p {
	case Systemd:
		text, err = systemdUnit(s)
	case Launchd:
		text, err = launchdPlist(s)
	default:
		return "", fmt.Errorf("no unit template for %q", p.Name)
	}
	if err == nil && strings.Contains(text, "{{") {
		// kardianos reads the text as a template; ours has no actions.
		err = errors.New(`"{{" cannot appear in the service's command line`)
	}
	return text, err
}

// replaceOnce replaces the one occurrence of old in the packaged file
// named file, or says that the file lost the line render needs.
func replaceOnce(text, file, old, new string) (string, error) {
	if n := strings.Count(text, old); n != 1 {
		return "", fmt.Errorf("packaging/%s has %d copies of %q, where oriond renders the unit from exactly one", file, n, old)
	}
	return strings.Replace(text, old, new, 1), nil
}

// Name is the service's name on p.
func Name(p Platform) string {
	if p == Launchd {
		return LaunchdLabel
	}
	return SystemdUnitName
}

// UnitPath is where the unit of p is installed.
func UnitPath(p Platform, system bool, home string) string {
	switch {
	case p == Launchd && system:
		return "/Library/LaunchDaemons/" + LaunchdLabel + ".plist"
	case p == Launchd:
		return filepath.Join(home, "Library/LaunchAgents", LaunchdLabel+".plist")
	case system:
		return "/etc/systemd/system/" + SystemdUnitName + ".service"
	default:
		// kardianos writes ~/.config/systemd/user whatever
		// XDG_CONFIG_HOME says; so do we.
		return filepath.Join(home, ".config/systemd/user", SystemdUnitName+".service")
	}
}

// Describe names the service on p for messages.
func Describe(p Platform, system bool) string {
	switch {
	case p == Launchd && system:
		return "launchd daemon " + LaunchdLabel
	case p == Launchd:
		return "launchd agent " + LaunchdLabel
	case system:
		return "systemd system unit oriond.service"
	}
	return "systemd user unit oriond.service"
}

// LogHint says where the service's log is.
func LogHint(p Platform, system bool) string {
	switch {
	case p == Launchd:
		return "the log in ~/Library/Logs/oriond.log"
	case system:
		return "`systemctl status oriond` and `journalctl -u oriond`"
	}
	return "`systemctl --user status oriond` and `journalctl --user -u oriond`"
}

// CheckPrivileges refuses a system service to anyone but root.
func (e Env) CheckPrivileges(o Options) error {
	if o.System && e.EUID != 0 {
		return errors.New("--system changes the machine's services and needs root: sudo oriond service ... --system")
	}
	return nil
}

func (e Env) kardianosSystem(p Platform) (ks.System, error) {
	for _, s := range ks.AvailableSystems() {
		if s.String() == p.kardianos {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: kardianos/service has no %s backend on %s", ErrNoServiceManager, p.kardianos, e.GOOS)
}

// Control builds the kardianos service for p; text is the unit install
// writes (empty for the other actions).
func (e Env) Control(p Platform, o Options, spec Spec, text string) (ks.Service, error) {
	sys, err := e.kardianosSystem(p)
	if err != nil {
		return nil, err
	}
	cfg := &ks.Config{
		Name:        Name(p),
		DisplayName: "Orion write-session daemon",
		Description: "Journals content LLM agents stream and writes files atomically.",
		Option: ks.KeyValue{
			"UserService":   !o.System,
			"SystemdScript": text,
			"LaunchdConfig": text,
			"RunAtLoad":     true,
			"KeepAlive":     true,
		},
	}
	if len(spec.Exec) > 0 {
		cfg.Executable, cfg.Arguments = spec.Exec[0], spec.Exec[1:]
	}
	if o.System {
		cfg.UserName = spec.RunAs
	}
	return sys.New(program{}, cfg)
}

// Prepare detects the platform and builds the service for an action other
// than install, with the path of its unit.
func (e Env) Prepare(o Options) (Platform, ks.Service, string, error) {
	p, err := e.Detect()
	if err != nil {
		return Platform{}, nil, "", err
	}
	if p == Systemd && !o.System {
		if err := e.CheckUserManager(); err != nil {
			return Platform{}, nil, "", err
		}
	}
	home := e.Home()
	s, err := e.Control(p, o, Spec{System: o.System, Home: home}, "")
	return p, s, UnitPath(p, o.System, home), err
}

// program is the kardianos Interface. oriond run serves on its own, so
// Start and Stop, called only by kardianos' Run, return at once.
type program struct{}

func (program) Start(ks.Service) error { return nil }
func (program) Stop(ks.Service) error  { return nil }

// CheckUserManager makes sure systemctl --user reaches the user's manager,
// which kardianos would otherwise report as a bare exit status.
func (e Env) CheckUserManager() error {
	out, err := e.Run("systemctl", "--user", "is-system-running")
	if err == nil {
		return nil
	}
	state := strings.TrimSpace(out)
	switch state {
	case "degraded", "starting", "initializing", "maintenance":
		return nil
	}
	msg, _, _ := strings.Cut(strings.TrimSpace(out+" "+err.Error()), "\n")
	return fmt.Errorf("%w: systemctl --user cannot reach your systemd user manager (%s). "+
		"Log in through a session that starts one (a desktop or ssh login with systemd-logind), "+
		"or have root run `loginctl enable-linger %s`; or install system-wide with --system",
		ErrNoServiceManager, msg, currentUser())
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "$USER"
}

// Home is the user's home directory: $HOME, else the system's word.
func (e Env) Home() string {
	if h := e.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}
