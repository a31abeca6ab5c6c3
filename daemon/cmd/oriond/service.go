package main

// oriond service: the commands over internal/service, which renders the
// units from packaging/ and drives the service manager.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/service"
)

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
	// A user service takes over from a daemon this user runs by hand;
	// a system service serves another socket.
	if !o.System {
		args = append(args, adoptRunning(cmd.Context(), cmd.ErrOrStderr(), r)...)
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
the service itself. When a daemon already runs on the unit's socket, its
allowed roots, state directory and limits go into the unit too, for each of
them not given here.

--with-proxy also installs and enables orionctl proxy (the model-API proxy
for agents, on ` + service.ProxyListen + `) as the systemd user unit ` + service.ProxyUnitName + `.service. It runs
the orionctl next to this oriond, or else the first on PATH, and serves only
requests that carry its secret (kept in ~/.config/orion/proxy-token; agents
get the base URLs with it from orionctl proxy --print-env).`,
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
			return env.Install(p, *o, spec, text, proxyText, cmd.OutOrStdout())
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

func newServiceActionCmd(env service.Env, o *service.Options, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action,
		Short: short,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.Act(*o, action, cmd.OutOrStdout())
		},
	}
}

func newServiceStatusCmd(env service.Env, o *service.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the service is installed and running (exit 0 running, 3 stopped, 4 not installed)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.Status(*o, cmd.OutOrStdout())
		},
	}
}
