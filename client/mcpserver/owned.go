package mcpserver

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// The daemon serves every client of the user, so a session id reaches
// sessions of other workspaces (another host, another project): this
// server acts only on sessions whose files lie inside its current roots,
// and lists only those. A host is given the files of its roots, not the
// user's.

// resolvedRoots are roots with, after each, its path with symlinks
// resolved when that differs: the daemon records resolved paths.
func resolvedRoots(roots []string) []string {
	out := slices.Clone(roots)
	for _, root := range roots {
		if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
			out = append(out, real)
		}
	}
	return out
}

// inRoots reports whether a session's target, or the workspace it was
// begun in, lies inside one of roots (as resolvedRoots returns them).
func inRoots(roots []string, target, workspaceRoot string) bool {
	for _, r := range roots {
		if target != "" && within(r, filepath.Clean(target)) ||
			workspaceRoot != "" && within(r, filepath.Clean(workspaceRoot)) {
			return true
		}
	}
	return false
}

// ownSession refuses a session outside the call's roots with reason
// outside_workspace, naming the roots. A session this server began is
// checked against where it placed it; another is asked of the daemon
// (an unknown id then fails as the daemon says, session_not_found).
func (s *Server) ownSession(ctx context.Context, id string) error {
	roots := callRoots(ctx)
	s.mu.Lock()
	pl, ok := s.sessions[id]
	s.mu.Unlock()
	target, ws := pl.target, pl.root
	if !ok {
		var info protocol.SessionInfo
		err := s.daemon.do(ctx, func(c *client.Client) (err error) {
			info, err = c.Get(ctx, id)
			return err
		})
		if err != nil {
			return err
		}
		target, ws = info.TargetFile, info.WorkspaceRoot
	}
	if inRoots(resolvedRoots(roots), target, ws) {
		return nil
	}
	return &argError{"outside_workspace", protocol.Fill(protocol.PromptMCPSessionOutsideWorkspace,
		"id", id, "roots", strings.Join(roots, ", "))}
}

// maxListPages bounds the pages of session.list read by one
// list_sessions: the daemon's retention bounds its sessions, this bounds
// the work of one call whatever it holds.
const maxListPages = 64

// visibleSessions pages through the daemon's sessions and keeps the most
// recently updated limit of those inside roots (and in stage, if given):
// memory stays bounded by limit plus one page.
func (s *Server) visibleSessions(ctx context.Context, roots []string, stage protocol.Stage, limit int) ([]protocol.SessionInfo, error) {
	roots = resolvedRoots(roots)
	var kept []protocol.SessionInfo
	err := s.daemon.do(ctx, func(c *client.Client) error {
		kept = kept[:0]
		p := protocol.ListParams{All: true}
		for range maxListPages {
			r, err := c.ListPage(ctx, p)
			if err != nil {
				return err
			}
			for _, si := range r.Sessions {
				if stage != "" && si.Stage != stage || !inRoots(roots, si.TargetFile, si.WorkspaceRoot) {
					continue
				}
				si.Result, si.Validation, si.Truncation = nil, nil, nil
				kept = append(kept, si)
			}
			slices.SortStableFunc(kept, func(x, y protocol.SessionInfo) int { return y.UpdatedAt.Compare(x.UpdatedAt) })
			if len(kept) > limit {
				kept = kept[:limit]
			}
			// A cursor that does not move would loop forever.
			if r.NextCursor == "" || r.NextCursor == p.Cursor || len(r.Sessions) == 0 {
				return nil
			}
			p.Cursor = r.NextCursor
		}
		return nil
	})
	return kept, err
}
