package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/protocol"
)

func newAllowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "allow DIR",
		Short: "Let oriond write under DIR from now on, without a restart",
		Long: `Add DIR to the directories oriond may write under (its allowed roots), at
once and for good: oriond keeps it in its state directory and adds it at every
start, whatever --allow-root says. "oriond config print" lists the roots added
this way; delete a line of the file it names to drop one.

Refused for /, for a protected directory (a root there would lift the
protection: that takes "oriond run --allow-protected"), and for what is not an
existing directory.`,
		Example: `  orionctl allow ~/src/myproject
  orionctl allow .`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return usageError{fmt.Errorf("DIR: %w", err)}
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.AllowRoot(cmd.Context(), dir)
			if err != nil {
				return allowRefusal(err, dir)
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, res)
			}
			if !res.Added {
				fmt.Fprintf(out, "%s is allowed already (an allowed root holds it); nothing changed\n", termsafe.String(res.Path))
				return nil
			}
			fmt.Fprintf(out, "allowed %s: oriond writes there from now on, and after a restart (kept in %s)\n",
				termsafe.String(res.Path), termsafe.String(res.SavedIn))
			return nil
		},
	}
}

// allowRefusal says why oriond refused to allow dir, for the person who
// asked.
func allowRefusal(err error, dir string) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Data.Reason {
	case protocol.ReasonProtected:
		if pe.Data.Rule == pathguard.RuleOriond {
			return &refusedError{pe: pe, text: fmt.Sprintf("not allowed: %s holds oriond's own files (rule %s), which no setting lets a session write.",
				pe.Data.Path, pe.Data.Rule)}
		}
		return &refusedError{pe: pe, text: fmt.Sprintf("not allowed: %s is protected (rule %s).\n"+
			"An allowed root there would lift its protection. If you mean to let agents write there, restart oriond\n"+
			"with --allow-protected %s (`oriond config print` lists the protected paths and why).",
			pe.Data.Path, pe.Data.Rule, pe.Data.Path)}
	case protocol.ReasonRootRefused:
		return &refusedError{pe: pe, text: "not allowed: " + sentence(pe.Message)}
	case protocol.ReasonUnknownMethod:
		return fmt.Errorf("this oriond cannot allow a directory while it runs (it is older than orionctl); restart it with --allow-root %s", dir)
	}
	return err
}

// checkWorkspace refuses a workspace outside oriond's allowed roots, with
// the command that allows it. An unreachable oriond is only a warning:
// the agent may start before it.
func checkWorkspace(cmd *cobra.Command, g *globals, ws string) error {
	c, err := g.dial(cmd)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "orionctl exec: warning: %s; the agent's writes will fail until it runs\n", termsafe.String(err.Error()))
		return nil
	}
	defer c.Close()
	st, err := c.Status(cmd.Context())
	if err != nil {
		return err
	}
	real := ws
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		real = r
	}
	for _, root := range st.AllowedRoots {
		if within(root, real) {
			return nil
		}
	}
	return fmt.Errorf("the workspace %s is outside the directories oriond may write (%s), so every write of the agent would be refused; nothing was started.\n"+
		"Allow it, then run this again:\n  orionctl allow %s",
		ws, strings.Join(st.AllowedRoots, ", "), shellQuote(ws))
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// shellQuote quotes s for a POSIX shell when it needs it, so a command
// shown can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+=:@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
