package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/config"
)

// addConfigFlag defines --config on the root command, for every
// subcommand.
func addConfigFlag(root *cobra.Command, getenv func(string) string) {
	root.PersistentFlags().String("config", "", "config file (default "+defaultConfigPath(getenv)+") [ORION_CONFIG]")
}

// newConfigCmd is `oriond config`.
func newConfigCmd(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show oriond's configuration",
		Long: `The config file is TOML. Its keys are the long flags of "oriond run" without
their dashes; strings, durations ("2s", "1h30m") and paths are strings, sizes
integers, allow-root an array of strings. Unknown keys are an error.

It is --config PATH, else $ORION_CONFIG, else
$XDG_CONFIG_HOME/orion/oriond.toml, else ~/.config/orion/oriond.toml
(here: ` + defaultConfigPath(getenv) + `). A missing
default file means defaults; ORION_CONFIG=/dev/null reads no file.

Each setting takes the first of: its flag, its environment variable
(ORION_SOCKET, ORION_STATE_DIR, ORION_ALLOW_ROOTS colon-separated,
ORION_TRACE_POSTGRES, ORION_STORE_MAX_BYTES), the config file, the built-in
default.`,
	}
	cmd.AddCommand(newConfigPrintCmd(getenv))
	return cmd
}

func newConfigPrintCmd(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "print [run flags]",
		Short: "Print the effective configuration of oriond run, as a config file",
		Long: `Print the configuration "oriond run" would use, given the same flags and
environment, as a config file: each setting with the place its value came
from. Redirect it to start a config file of your own. A password in
trace-postgres is masked.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := applyConfig(cmd, getenv)
			if err != nil {
				return err
			}
			if err := schema.Print(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			if err := printAddedRoots(cmd); err != nil {
				return err
			}
			return printProtected(cmd, r, getenv)
		},
	}
	// The same flags as run, bound to a run command that never runs.
	cmd.Flags().SortFlags = false
	cmd.Flags().AddFlagSet(newRunCmd(getenv).Flags())
	return cmd
}

// exactArgs is cobra.ExactArgs with a usage error, for exit code 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// printAddedRoots appends, as comments, the roots orionctl allow added
// while oriond ran: they are not a setting of their own but widen
// allow-root at every start.
func printAddedRoots(cmd *cobra.Command) error {
	stateDir, err := filepath.Abs(cmd.Flags().Lookup("state-dir").Value.String())
	if err != nil {
		return err
	}
	roots, err := config.ReadAddedRoots(stateDir)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n# Allowed while oriond ran (orionctl allow), added to allow-root at every start;\n")
	fmt.Fprintf(&b, "# kept in %s (delete a line there, then restart oriond, to drop one):\n", config.AddedRootsPath(stateDir))
	if len(roots) == 0 {
		b.WriteString("#   (none)\n")
	}
	for _, r := range roots {
		fmt.Fprintf(&b, "#   %s\n", r)
	}
	_, err = fmt.Fprint(cmd.OutOrStdout(), b.String())
	return err
}
