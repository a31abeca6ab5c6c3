package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/daemon"
	"github.com/orion-agent/orion/internal/config"
	"github.com/orion-agent/orion/internal/paths"
)

// configPaths are the config file read (or looked for) and the default
// config directory: both are read at the next start, so a session writing
// either could lift every limit (allow-root = ["/"]); they are always
// protected.
func configPaths(r *config.Resolved, getenv func(string) string) ([]string, error) {
	dir, err := paths.DefaultConfigDir(paths.Env(getenv))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	out := []string{dir}
	if r != nil && r.File.Path != "" {
		out = append(out, r.File.Path)
	}
	return out, nil
}

// protectedEntries normalizes --allow-protected values: "~/" is the home
// directory, a relative path with a slash is relative to the current
// directory, and a bare name (".git") stays a name.
func protectedEntries(vals []string) ([]string, error) {
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		switch {
		case v == "":
			continue
		case v == "~" || strings.HasPrefix(v, "~/"):
			p, err := expandPath(v, "")
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case !strings.Contains(v, "/"):
			out = append(out, v)
		default:
			p, err := filepath.Abs(v)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// printProtected appends the protection rules that the settings of cmd
// give, as comments: they are derived, not settings of their own. Each
// rule is printed with what it protects and why, in the order the daemon
// checks them; a refusal (protected_path) names the rule.
func printProtected(cmd *cobra.Command, r *config.Resolved, getenv func(string) string) error {
	f := cmd.Flags()
	var cfg daemon.Config
	cfg.Socket, _ = filepath.Abs(f.Lookup("socket").Value.String())
	cfg.StateDir, _ = filepath.Abs(f.Lookup("state-dir").Value.String())
	cfg.SpoolDir = f.Lookup("spool-dir").Value.String()
	vals, _ := f.GetStringArray("allow-protected")
	var err error
	if cfg.AllowProtected, err = protectedEntries(vals); err != nil {
		return usageError{fmt.Errorf("allow-protected: %w", err)}
	}
	if cfg.ConfigPaths, err = configPaths(r, getenv); err != nil {
		return err
	}
	cfg.Home, _ = paths.HomeDir(paths.Env(getenv))
	cfg.PathEnv = getenv("PATH")
	var b strings.Builder
	b.WriteString("\n# Protected paths, refused whatever allow-root says (not settings; see docs/protected-paths.md).\n")
	b.WriteString("# Lift one with allow-protected = [\"PATH\"] (or --allow-protected PATH): the path and what is below it;\n")
	b.WriteString("# a bare name (\".git\", \".vscode\") lifts that name everywhere; an allow-root at or inside a protected\n")
	b.WriteString("# path lifts it too. The rule oriond-files is never lifted.\n")
	for _, rule := range cfg.Protection().Rules() {
		fmt.Fprintf(&b, "# Rule %s: %s.\n", rule.Rule, rule.Why)
		for _, e := range rule.Pattern {
			fmt.Fprintf(&b, "#   %s\n", e)
		}
	}
	if len(cfg.AllowProtected) > 0 {
		b.WriteString("# Allowed by allow-protected:\n")
		for _, a := range cfg.AllowProtected {
			fmt.Fprintf(&b, "#   %s\n", a)
		}
	}
	_, err = io.WriteString(cmd.OutOrStdout(), b.String())
	return err
}
