package ui

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// maxTurnDiffBytes bounds one file's diff the page shows of a turn.
const maxTurnDiffBytes = 256 << 10

// turnWorkspaces are the workspaces the page offers for turns: those of
// the sessions it knows. Any other may be typed in.
func (s *Server) turnWorkspaces(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": s.hub.page(Query{Limit: 1}).Workspaces})
}

// turns is one page of a workspace's turns, newest first.
func (s *Server) turns(w http.ResponseWriter, r *http.Request) {
	ws := r.URL.Query().Get("workspace")
	if !filepath.IsAbs(ws) || len(ws) > 4096 {
		badRequest(w, "workspace %q: give the workspace's absolute directory", ws)
		return
	}
	limit, err := intParam(r, "limit", 20, 1, 200)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	if len(cursor) > 256 {
		badRequest(w, "cursor: too long")
		return
	}
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	res, err := c.TurnList(ctx, protocol.TurnListParams{WorkspaceRoot: filepath.Clean(ws), Limit: limit, Cursor: cursor})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// turn is one turn with each file's diff.
func (s *Server) turn(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" || len(id) > 128 {
		badRequest(w, "id: give a turn id")
		return
	}
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	res, err := c.TurnGet(ctx, protocol.TurnGetParams{TurnID: id, Diffs: true, MaxDiffBytes: maxTurnDiffBytes})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

type turnAction struct {
	TurnID        string `json:"turn_id"`
	OperationID   string `json:"operation_id"`
	WorkspaceRoot string `json:"workspace_root"`
	DryRun        bool   `json:"dry_run"`
}

// turnUndo undoes a turn (or, with dry_run, says what an undo would
// write). The page's confirmation names the files from the turn itself.
func (s *Server) turnUndo(w http.ResponseWriter, r *http.Request) {
	act(s, w, r, func(turnAction) string { return "" },
		func(ctx context.Context, c *client.Client, p turnAction) (string, any, bool, error) {
			if p.TurnID == "" {
				return "", nil, false, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "turn_id: give the turn to undo"}
			}
			res, err := c.TurnUndo(ctx, protocol.TurnUndoParams{TurnID: p.TurnID, WorkspaceRoot: p.WorkspaceRoot, DryRun: p.DryRun})
			if err != nil {
				return "", nil, false, err
			}
			return operationMessage("undo", res), res, false, nil
		})
}

// turnRedo takes back an undo: the one named, or the workspace's last.
func (s *Server) turnRedo(w http.ResponseWriter, r *http.Request) {
	act(s, w, r, func(turnAction) string { return "" },
		func(ctx context.Context, c *client.Client, p turnAction) (string, any, bool, error) {
			q := protocol.TurnRedoParams{OperationID: p.OperationID, DryRun: p.DryRun}
			if q.OperationID == "" {
				q.Last, q.WorkspaceRoot = true, p.WorkspaceRoot
			}
			res, err := c.TurnRedo(ctx, q)
			if err != nil {
				return "", nil, false, err
			}
			return operationMessage("redo", res), res, false, nil
		})
}

// operationMessage is the sentence for an undo or a redo: how many files
// went which way.
func operationMessage(what string, res protocol.TurnUndoResult) string {
	if res.Refused {
		return what + " refused: a file would be left as it is; nothing was written"
	}
	counts := map[string]int{}
	var order []string
	for _, f := range res.Files {
		if counts[f.Outcome] == 0 {
			order = append(order, f.Outcome)
		}
		counts[f.Outcome]++
	}
	parts := make([]string, 0, len(order))
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], strings.ReplaceAll(o, "_", " ")))
	}
	verb := map[string]string{"undo": "undid the turn", "redo": "redid the turn"}[what]
	if res.DryRun {
		verb = what + " would write"
	}
	if len(parts) == 0 {
		return verb + ": no file to change"
	}
	return verb + ": " + strings.Join(parts, ", ")
}
