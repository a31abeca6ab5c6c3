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

// printProtected appends the protected paths that the settings of cmd
// give, as comments: they are derived, not settings of their own.
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
	p := cfg.Protection()
	var b strings.Builder
	b.WriteString("\n# Protected paths, refused whatever allow-root says (not settings; see the README's Security model).\n")
	b.WriteString("# Always (oriond's own files):\n")
	for _, e := range p.Always {
		fmt.Fprintf(&b, "#   %s\n", e)
	}
	b.WriteString("# By default (lift one with allow-protected, or by naming it or a path inside it in allow-root):\n")
	for _, e := range p.Default {
		fmt.Fprintf(&b, "#   %s\n", e)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), b.String())
	return err
}
