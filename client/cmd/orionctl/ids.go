package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// Ids may be shortened to a unique prefix, as git and docker allow.
const (
	// minPrefix is the shortest prefix orionctl looks up: shorter ones match
	// too many ids to be worth typing.
	minPrefix = 8
	// fullIDLen is the length of a UUID in its text form.
	fullIDLen = 36
)

// shortID is the prefix orionctl prints for an id.
func shortID(id string) string {
	if len(id) > minPrefix {
		return id[:minPrefix]
	}
	return id
}

// ambiguousError lists the ids a prefix matches.
type ambiguousError struct {
	kind, prefix string
	matches      []string
}

func (e *ambiguousError) Error() string {
	return fmt.Sprintf("%s prefix %q is ambiguous: it matches %s; give more characters",
		e.kind, e.prefix, strings.Join(e.matches, ", "))
}

// matchPrefix picks the one id among ids that starts with prefix. An id of
// full length, or a prefix shorter than minPrefix, is returned as it is:
// the daemon then says whether it knows it.
func matchPrefix(kind, prefix string, ids []string) (string, error) {
	if len(prefix) >= fullIDLen || len(prefix) < minPrefix {
		return prefix, nil
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) && !slices.Contains(matches, id) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return prefix, nil
	case 1:
		return matches[0], nil
	}
	slices.Sort(matches)
	return "", &ambiguousError{kind: kind, prefix: prefix, matches: matches}
}

// resolveSession expands a session id prefix through session.list.
func resolveSession(ctx context.Context, c *client.Client, arg string) (string, error) {
	if len(arg) >= fullIDLen || len(arg) < minPrefix {
		return arg, nil
	}
	sessions, err := c.List(ctx, true)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.SessionID
	}
	return matchPrefix("session", arg, ids)
}

// resolveTx expands a transaction id prefix through the sessions that
// belong to transactions.
func resolveTx(ctx context.Context, c *client.Client, arg string) (string, error) {
	if len(arg) >= fullIDLen || len(arg) < minPrefix {
		return arg, nil
	}
	sessions, err := c.List(ctx, true)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, s := range sessions {
		if s.TxID != "" {
			ids = append(ids, s.TxID)
		}
	}
	return matchPrefix("transaction", arg, ids)
}

// resolveUndo turns what undo was given, a session or a transaction id (or
// a unique prefix of either), into a session for session.undo, which undoes
// a session of a transaction with its whole transaction.
func resolveUndo(ctx context.Context, c *client.Client, arg string) (string, error) {
	sessions, err := c.List(ctx, true)
	if err != nil {
		return "", err
	}
	var ids, txIDs []string
	for _, s := range sessions {
		ids = append(ids, s.SessionID)
		if s.TxID != "" {
			txIDs = append(txIDs, s.TxID)
		}
	}
	short := len(arg) < minPrefix
	if slices.Contains(ids, arg) || short {
		return arg, nil
	}
	if id, err := matchPrefix("session", arg, ids); err != nil || slices.Contains(ids, id) {
		return id, err
	}
	tx, err := matchPrefix("transaction", arg, txIDs)
	if err != nil {
		return "", err
	}
	for _, s := range sessions {
		if s.TxID == tx {
			return s.SessionID, nil
		}
	}
	// Neither: the daemon says it knows no such session.
	return arg, nil
}

// newestWrite is the completed session that wrote most recently and can
// be undone; with a workspace, the newest whose files are all inside it
// (a transaction counts with every file it wrote).
func newestWrite(ctx context.Context, c *client.Client, workspace string) (protocol.SessionInfo, error) {
	sessions, err := c.List(ctx, true)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	outside := map[string]bool{} // transactions with a file outside the workspace
	if workspace != "" {
		for _, s := range sessions {
			if s.TxID != "" && !allInside(workspace, s) {
				outside[s.TxID] = true
			}
		}
	}
	var last *protocol.SessionInfo
	for i, s := range sessions {
		if s.Stage != protocol.StageCompleted || s.Undone || s.Result == nil || s.Result.DryRun || alreadyApplied(*s.Result) {
			continue
		}
		if workspace != "" && (!allInside(workspace, s) || outside[s.TxID]) {
			continue
		}
		if last == nil || s.UpdatedAt.After(last.UpdatedAt) {
			last = &sessions[i]
		}
	}
	if last == nil && workspace != "" {
		return protocol.SessionInfo{}, fmt.Errorf("no write to undo in %s (the workspace of the current directory); "+
			"`orionctl undo --last --any` undoes the newest write anywhere", workspace)
	}
	if last == nil {
		return protocol.SessionInfo{}, fmt.Errorf("no completed session to undo: `orionctl sessions list --all` shows what the daemon keeps")
	}
	return *last, nil
}

// allInside reports whether every file session s wrote is inside dir.
func allInside(dir string, s protocol.SessionInfo) bool {
	if !within(dir, s.TargetFile) {
		return false
	}
	if s.Result != nil {
		for _, f := range s.Result.Files {
			if !within(dir, f.TargetFile) || f.MovedTo != "" && !within(dir, f.MovedTo) {
				return false
			}
		}
	}
	return true
}

// undoWorkspace is where undo --last looks: the innermost of the allowed
// roots and the project (the nearest directory with a .git) that hold the
// current directory. It is an error when neither holds it.
func undoWorkspace(roots []string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	best := ""
	for _, r := range roots {
		if within(r, wd) && len(r) > len(best) {
			best = r
		}
	}
	if p := projectOf(wd); p != wd || hasGit(wd) {
		if len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return "", usageError{fmt.Errorf("the current directory, %s, is in no allowed root and no project (a directory with .git); "+
			"run this in a project, or give --any to undo the newest write anywhere", wd)}
	}
	return best, nil
}

func hasGit(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}
