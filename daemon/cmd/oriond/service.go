package main

// oriond service: the commands over internal/service, which renders the
// units from packaging/ and drives the service manager.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	ks "github.com/kardianos/service"
	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/service"
)

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

// newServiceCmd is `oriond service`.
func newServiceCmd(getenv func(string) string) *cobra.Command {
	return newServiceCmdEnv(service.RealEnv(getenv))
}

func newServiceCmdEnv(env service.Env) *cobra.Command {
	o := &service.Options{}
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install oriond as a service of your login, and control it",
		Long: `Install oriond as a service and control it through the service manager.

By default the service is yours: a systemd user unit
(~/.config/systemd/user/oriond.service, started with your user manager, at
login or at boot with lingering) on Linux, a launchd agent
(~/Library/LaunchAgents/` + service.LaunchdLabel + `.plist) on macOS. With --system it
is the machine's (/etc/systemd/system/oriond.service, or a launchd daemon),
runs as --run-as, and needs root.

The service runs "oriond run" and reads the config file itself (see
"oriond config"). install takes the flags of "oriond run" (also after --)
and writes into the unit's command line every setting given by a flag or
by the environment (ORION_ALLOW_ROOTS, ORION_SOCKET, ORION_STATE_DIR), which
the service manager does not pass on; a password is never written there.

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
	cmd.PersistentFlags().BoolVar(&o.System, "system", false, "the machine's service (needs root) instead of yours")
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

// spec is what install would install: oriond run with the config file
// named explicitly (or the service would read the default one) and every
// setting the flags of run (runFlags, also given after --) or the
// environment set, since the service manager gives the service neither.
func spec(cmd, run *cobra.Command, env service.Env, p service.Platform, o *service.Options, extra []string, forPrint bool) (service.Spec, error) {
	exe, err := env.Executable()
	if err != nil {
		return service.Spec{}, fmt.Errorf("finding oriond's executable: %w", err)
	}
	if !forPrint && strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return service.Spec{}, usageError{fmt.Errorf("oriond runs from a temporary `go run` build (%s), which will be gone; "+
			"build it first: go build -o ~/.local/bin/oriond ./daemon/cmd/oriond", exe)}
	}
	if err := run.Flags().Parse(extra); err != nil {
		return service.Spec{}, usageError{fmt.Errorf("after --: %w", err)}
	}
	if rest := run.Flags().Args(); len(rest) > 0 {
		return service.Spec{}, usageError{fmt.Errorf("%q: oriond run takes flags only", rest)}
	}
	r, err := schema.Apply(run.Flags(), cmd.Flag("config"), env.Getenv)
	if err != nil {
		return service.Spec{}, usageError{err}
	}
	args := []string{exe, "run"}
	if r.File.Explicit {
		args = append(args, "--config", r.File.Path)
	}
	s := service.Spec{System: o.System, Home: env.Home()}
	if o.System {
		s.RunAs = o.RunAs
		if s.RunAs == "" {
			s.RunAs = env.Getenv("SUDO_USER")
		}
		if s.RunAs == "" {
			return service.Spec{}, usageError{errors.New("--system needs --run-as USER: the account the daemon runs as " +
				"(it writes files with that account's rights; give root only if you mean it)")}
		}
		args = append(args, "--socket", service.SystemSocketFor(p, s.RunAs))
	}
	settings, secrets := schema.Args(r)
	for _, a := range settings {
		// A system service listens on its own socket, whatever this
		// shell's ORION_SOCKET says.
		if o.System && strings.HasPrefix(a, "--socket=") && !run.Flags().Lookup("socket").Changed {
			continue
		}
		args = append(args, a)
	}
	for _, k := range secrets {
		fmt.Fprintf(cmd.ErrOrStderr(), "oriond: %s is not written into the unit (its command line is readable by every user); "+
			"set it in the config file %s instead\n", k, r.File.Path)
	}
	s.Exec = args
	return s, nil
}

func newServiceInstallCmd(env service.Env, o *service.Options) *cobra.Command {
	var print, withProxy bool
	var platformName string
	// run holds the flags of oriond run, which install takes too; it
	// never runs.
	run := newRunCmd(env.Getenv)
	cmd := &cobra.Command{
		Use:   "install [run flags]",
		Short: "Install the service (enabled, not started)",
		Long: `Install the service: write its unit, enable it so that it starts with your
user manager (or the machine, with --system), but do not start it now; run
"oriond service start" for that. --print shows the unit and changes nothing;
it works without a service manager.

The flags of "oriond run" (such as --allow-root) given here, or after --,
and the settings of the environment (ORION_ALLOW_ROOTS, ORION_SOCKET,
ORION_STATE_DIR) go into the unit's command line; the config file is read by
the service itself.

--with-proxy also installs and enables orionctl proxy (the model-API proxy
for agents, on ` + service.ProxyListen + `) as the systemd user unit ` + service.ProxyUnitName + `.service. It runs
the orionctl next to this oriond, or else the first on PATH.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var p service.Platform
			var err error
			switch {
			case print && platformName != "":
				p, err = service.PlatformNamed(platformName)
			default:
				p, err = env.Detect()
				if err != nil && print {
					p, err = service.PlatformForOS(env.GOOS), nil
				}
			}
			if err != nil {
				return err
			}
			spec, err := spec(cmd, run, env, p, o, args, print)
			if err != nil {
				return err
			}
			text, err := service.Render(p, spec)
			if err != nil {
				return err
			}
			// The proxy is checked and rendered before anything is
			// written: install writes both units or neither.
			var proxyText string
			if withProxy {
				if err := service.CheckWithProxy(p, *o); err != nil {
					return err
				}
				orionctl, err := env.FindOrionctl()
				if err != nil {
					return err
				}
				if proxyText, err = service.RenderProxy(orionctl); err != nil {
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
			if err := env.CheckPrivileges(*o); err != nil {
				return err
			}
			if p == service.Systemd && !o.System {
				if err := env.CheckUserManager(); err != nil {
					return err
				}
			}
			path := service.UnitPath(p, o.System, spec.Home)
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("%s already exists: oriond is installed; run `oriond service uninstall%s` first to reinstall", path, systemFlag(o))
			}
			proxyPath := service.ProxyUnitPath(spec.Home)
			if withProxy {
				if _, err := os.Stat(proxyPath); err == nil {
					return fmt.Errorf("%s already exists: the proxy is installed; run `oriond service uninstall` first to reinstall", proxyPath)
				}
			}
			s, err := env.Control(p, *o, spec, text)
			if err != nil {
				return err
			}
			if err := s.Install(); err != nil {
				return fmt.Errorf("installing %s: %w", path, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "installed %s (%s, enabled)\n", path, service.Describe(p, o.System))
			if withProxy {
				if err := env.InstallProxy(proxyText, proxyPath); err != nil {
					// Both or neither: a half install would leave
					// `install --with-proxy` refusing to run again.
					if uerr := s.Uninstall(); uerr != nil {
						return fmt.Errorf("%w; removing %s again also failed: %v", err, path, uerr)
					}
					return fmt.Errorf("%w; %s was removed again", err, path)
				}
				fmt.Fprintf(out, "installed %s (%s, enabled): agents point at http://%s\n", proxyPath, service.ProxyDescription, service.ProxyListen)
			}
			fmt.Fprintf(out, "start it now with: oriond service start%s\n", systemFlag(o))
			if o.System {
				fmt.Fprintf(out, "its clients (running as %s) find it with: export ORION_SOCKET=%s\n", spec.RunAs, service.SystemSocketFor(p, spec.RunAs))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&print, "print", false, "print the unit that install would write, and do nothing else")
	f.BoolVar(&withProxy, "with-proxy", false, "also install and enable orionctl proxy (the model-API proxy for agents) as a systemd user unit")
	f.StringVar(&platformName, "platform", "", "with --print: systemd or launchd (default: this machine's)")
	f.StringVar(&o.RunAs, "run-as", "", "with --system: the account the daemon runs as (default $SUDO_USER)")
	f.SortFlags = false
	f.AddFlagSet(run.Flags())
	return cmd
}

func systemFlag(o *service.Options) string {
	if o.System {
		return " --system"
	}
	return ""
}

func newServiceActionCmd(env service.Env, o *service.Options, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action,
		Short: short,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := env.CheckPrivileges(*o); err != nil {
				return err
			}
			p, s, path, err := env.Prepare(*o)
			if err != nil {
				return err
			}
			px, _, err := env.InstalledProxy(p, *o)
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
				if err := ks.Control(px, action); err != nil {
					return fmt.Errorf("%s %s: %v; see `systemctl --user status %s` and `journalctl --user -u %s`",
						action, service.ProxyDescription, err, service.ProxyUnitName, service.ProxyUnitName)
				}
				fmt.Fprintf(out, "%s: %s done\n", service.ProxyDescription, action)
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
				if err := ks.Control(s, action); err != nil {
					return fmt.Errorf("%s %s: %v; see %s", action, service.Describe(p, o.System), err, service.LogHint(p, o.System))
				}
				fmt.Fprintf(out, "%s: %s done\n", service.Describe(p, o.System), action)
			}
			if action == "start" || action == "restart" {
				return proxyAction()
			}
			return nil
		},
	}
}

func newServiceStatusCmd(env service.Env, o *service.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the service is installed and running (exit 0 running, 3 stopped, 4 not installed)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, s, path, err := env.Prepare(*o)
			if err != nil {
				return err
			}
			// The proxy's line, when its unit is installed, follows
			// oriond's; a stopped proxy makes the exit status 3.
			px, pxPath, err := env.InstalledProxy(p, *o)
			if err != nil {
				return err
			}
			var pxLine string
			var pxDown bool
			if px != nil {
				pxLine, pxDown = service.ProxyStatus(px, pxPath)
				pxLine = "\n" + pxLine
			}
			what := service.Describe(p, o.System)
			st, err := s.Status()
			switch {
			case errors.Is(err, ks.ErrNotInstalled):
				return exitError{exitNotInstalled, fmt.Sprintf("%s: not installed (no %s); install it with `oriond service install%s`%s", what, path, systemFlag(o), pxLine)}
			case err != nil:
				return exitError{exitNotRunning, fmt.Sprintf("%s: not running (%v); see %s%s", what, err, service.LogHint(p, o.System), pxLine)}
			case st == ks.StatusRunning && pxDown:
				return exitError{exitNotRunning, fmt.Sprintf("%s: running (%s)%s", what, path, pxLine)}
			case st == ks.StatusRunning:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: running (%s)%s\n", what, path, pxLine)
				return nil
			case st == ks.StatusStopped:
				return exitError{exitNotRunning, fmt.Sprintf("%s: installed (%s) but not running; start it with `oriond service start%s`%s", what, path, systemFlag(o), pxLine)}
			}
			return fmt.Errorf("%s: status unknown", what)
		},
	}
}
