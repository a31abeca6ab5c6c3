package main

import (
	"context"
	"fmt"
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

// lastWritten is the session that most recently wrote a file and can be
// undone: completed, not a dry run, not undone yet.
func lastWritten(ctx context.Context, c *client.Client) (string, error) {
	sessions, err := c.List(ctx, true)
	if err != nil {
		return "", err
	}
	var last *protocol.SessionInfo
	for i, s := range sessions {
		if s.Stage != protocol.StageCompleted || s.Undone || s.Result == nil || s.Result.DryRun || alreadyApplied(*s.Result) {
			continue
		}
		if last == nil || s.UpdatedAt.After(last.UpdatedAt) {
			last = &sessions[i]
		}
	}
	if last == nil {
		return "", fmt.Errorf("no completed session to undo: `orionctl sessions list --all` shows what the daemon keeps")
	}
	return last.SessionID, nil
}
