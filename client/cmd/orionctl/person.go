package main

// What a person reads when oriond refuses a path or cannot be reached. The
// daemon's messages are written for the model of an agent ("the model must
// write somewhere else"); at orionctl a person typed the command, and is
// told what happened, why, and what to run.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/protocol"
)

// implicitWorkspace is the current directory sent as the workspace root
// of a relative TARGET the person typed: a refusal about "the workspace"
// is then about the current directory.
type implicitWorkspace struct {
	target, dir string
}

// personError is an error told in a person's words that still matches
// what it wraps (errors.Is, errors.As), so the exit code stays.
type personError struct {
	text  string
	cause error
}

func (e *personError) Error() string { return e.text }
func (e *personError) Unwrap() error { return e.cause }

// forPerson rewrites the errors whose own words are for a model or
// mislead a person; every other error is returned as it is.
func forPerson(ctx context.Context, g *globals, err error) error {
	var ue *client.UnreachableError
	if errors.As(err, &ue) {
		return unreachable(ctx, g, ue)
	}
	var re *refusedError
	var pe *protocol.Error
	if errors.As(err, &re) || !errors.As(err, &pe) {
		return err
	}
	switch pe.Data.Reason {
	case protocol.ReasonProtected, protocol.ReasonOutsideRoots, protocol.ReasonWorkspaceNotAllowed, protocol.ReasonOutsideWorkspace:
	default:
		return err
	}
	st := statusFor(ctx, g)
	path := pe.Data.Path
	var text string
	switch pe.Data.Reason {
	case protocol.ReasonProtected:
		why := ""
		for _, r := range st.ProtectedRules {
			if r.Rule == pe.Data.Rule {
				why = ":\n" + sentence(r.Why)
			}
		}
		if pe.Data.Rule == pathguard.RuleOriond {
			text = fmt.Sprintf("not written: %s is one of oriond's own files (rule %s)%s\nNo setting allows it; write the file somewhere else.",
				path, pe.Data.Rule, orPeriod(why))
			break
		}
		text = fmt.Sprintf("not written: %s is protected (rule %s)%s\n"+
			"To let it be written, restart oriond with --allow-protected %s;\n"+
			"`oriond config print` lists every protected path and why.",
			path, pe.Data.Rule, orPeriod(why), shellQuote(path))
	case protocol.ReasonOutsideRoots:
		text = fmt.Sprintf("not written: %s is outside the directories oriond may write%s.\n%s",
			path, rootList(st), allowHint(projectOf(filepath.Dir(path))))
	case protocol.ReasonWorkspaceNotAllowed:
		if iw := g.implicit; iw.dir != "" && sameDir(iw.dir, path) {
			text = fmt.Sprintf("not written: %s would be in the current directory, %s, which is outside the directories oriond may write%s.\n%s",
				iw.target, iw.dir, rootList(st), allowHint(projectOf(iw.dir)))
			break
		}
		text = fmt.Sprintf("not written: the workspace root %s is outside the directories oriond may write%s.\n%s",
			path, rootList(st), allowHint(path))
	case protocol.ReasonOutsideWorkspace:
		if iw := g.implicit; iw.dir != "" && sameDir(iw.dir, pe.Data.WorkspaceRoot) {
			text = fmt.Sprintf("not written: %s is %s, outside the current directory (%s); a relative TARGET stays inside it.\n"+
				"Name the file by its absolute path instead: %s", iw.target, path, iw.dir, shellQuote(path))
			break
		}
		text = fmt.Sprintf("not written: %s is outside the workspace root %s; give a path inside it, or another --workspace-root.",
			path, pe.Data.WorkspaceRoot)
	}
	return &refusedError{text: text, pe: pe}
}

func orPeriod(why string) string {
	if why == "" {
		return "."
	}
	return why
}

// allowHint is the command that allows dir.
func allowHint(dir string) string {
	if filepath.Dir(dir) == dir {
		// oriond never allows the whole file system.
		return "Allow the directory it is in with `orionctl allow DIR`, or write it somewhere else."
	}
	return fmt.Sprintf("To allow it: orionctl allow %s\n(or restart oriond with --allow-root %s).", shellQuote(dir), shellQuote(dir))
}

// rootList is " (root, root)" from the daemon's status, or nothing.
func rootList(st protocol.StatusResult) string {
	if len(st.AllowedRoots) == 0 {
		return ""
	}
	return " (" + strings.Join(st.AllowedRoots, ", ") + ")"
}

// statusFor is the daemon's status, or an empty one: a refusal is told
// without the details it adds when the daemon does not answer.
func statusFor(ctx context.Context, g *globals) protocol.StatusResult {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, g.socket, client.Options{})
	if err != nil {
		return protocol.StatusResult{}
	}
	defer c.Close()
	st, _ := c.Status(ctx)
	return st
}

func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// projectOf is the project holding dir: the nearest directory at or
// above it with a .git (a repository or a worktree), else dir itself. A
// directory that does not exist yet is replaced by its nearest existing
// parent.
func projectOf(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// unreachable says that no daemon answers at the socket --socket named,
// and where the default one is, rather
// than suggesting to start a daemon at what may be a typo.
func unreachable(ctx context.Context, g *globals, ue *client.UnreachableError) error {
	// The socket orionctl talks to without --socket ($ORION_SOCKET, else
	// the default).
	def := client.DefaultSocket()
	// A socket from $ORION_SOCKET is one oriond run serves at too: there
	// the usual advice, to start it, holds.
	if ue.Socket == def || !g.socketFlag {
		return ue
	}
	drop := "leave out --socket"
	var b strings.Builder
	fmt.Fprintf(&b, "oriond is not reachable at %s (--socket): %v.\n", ue.Socket, ue.Err)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c, err := client.Dial(ctx, def, client.Options{}); err == nil {
		c.Close()
		fmt.Fprintf(&b, "oriond answers at %s, the socket orionctl uses without --socket: %s to use it, or check the path.", def, drop)
	} else {
		fmt.Fprintf(&b, "Without --socket orionctl uses %s, and nothing answers there either: start oriond with `oriond run`, then %s.",
			def, drop)
	}
	return &personError{text: b.String(), cause: ue}
}
