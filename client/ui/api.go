package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/ladder"
	"github.com/orion-agent/orion/internal/linediff"
	"github.com/orion-agent/orion/protocol"
)

// Bounds on what the page asks for.
const (
	maxPage        = 500
	defaultPage    = 100
	maxBody        = 64 << 10
	maxDiffBytes   = 2 << 20
	maxLadderItems = 2000
	callTimeout    = 30 * time.Second
)

// apiError is every error answer: the daemon's own message, and its
// reason and code when it gave them.
type apiError struct {
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
	Code    int64  `json:"code,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers err: a daemon's refusal as 422 with its message, a daemon
// that is away as 503.
func fail(w http.ResponseWriter, err error) {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Message: pe.Message, Reason: pe.Data.Reason, Code: pe.Code})
	case errors.Is(err, errDown):
		writeJSON(w, http.StatusServiceUnavailable, apiError{Message: err.Error(), Reason: "daemon_unreachable"})
	default:
		writeJSON(w, http.StatusBadGateway, apiError{Message: err.Error()})
	}
}

var errDown = errors.New("oriond is not reachable; the page reconnects once a second")

// daemon is the live connection with a deadline for one call.
func (s *Server) daemon(r *http.Request) (*client.Client, context.Context, context.CancelFunc, error) {
	c := s.hub.client()
	if c == nil {
		return nil, nil, nil, errDown
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	return c, ctx, cancel, nil
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf(format, args...), Reason: "bad_request"})
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q: want a number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// events streams the hub's state as server-sent events: one at once, then
// one at each change (at most one a second, as the hub refreshes).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apiError{Message: "streaming unsupported"})
		return
	}
	ch, stop := s.hub.subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		b, _ := json.Marshal(s.hub.state())
		fmt.Fprintf(w, "event: state\ndata: %s\n\n", b)
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		case <-keep.C:
		}
	}
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	off, err := intParam(r, "offset", 0, 0, 1<<30)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	lim, err := intParam(r, "limit", defaultPage, 1, maxPage)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	q := r.URL.Query()
	writeJSON(w, http.StatusOK, s.hub.page(Query{Workspace: q.Get("workspace"), State: q.Get("state"), Text: q.Get("q"), Offset: off, Limit: lim}))
}

// SessionView is a session with its ladder.
type SessionView struct {
	Row
	// Ladder is the terminal's ladder model (orionctl trace), drawn by
	// the page its own way; nil without trace events.
	Ladder *ladder.Ladder `json:"ladder"`
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	info, err := c.Get(ctx, id)
	if err != nil {
		fail(w, err)
		return
	}
	var tr protocol.TraceListResult
	err = c.Call(ctx, protocol.MethodTraceList, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: id}, Limit: maxLadderItems, Newest: true}, &tr)
	var pe *protocol.Error
	if err != nil && !errors.As(err, &pe) {
		fail(w, err)
		return
	}
	v := SessionView{Row: Row{SessionInfo: info, State: stateOf(info)}, Ladder: ladder.Build(id, tr.Events)}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) content(w http.ResponseWriter, r *http.Request) {
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	res, err := c.Content(ctx, protocol.ContentParams{SessionID: r.URL.Query().Get("id"), Source: protocol.ContentStreamed, MaxBytes: maxDiffBytes})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Diff is a written session's change: the file before (its backup) and as
// it is on disk now, unified.
type Diff struct {
	TargetFile string `json:"target_file"`
	// Before says where the old side came from: "backup", or "none" when
	// the session created the file.
	Before string `json:"before"`
	// Changed is set when the file on disk is no longer what the session
	// wrote (edited since, or undone): the diff shows the file as it is.
	Changed   bool   `json:"changed,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Unified   string `json:"unified"`
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	info, err := c.Get(ctx, id)
	if err != nil {
		fail(w, err)
		return
	}
	if info.Result == nil || info.Result.NothingWritten {
		writeJSON(w, http.StatusConflict, apiError{Message: fmt.Sprintf("session %s wrote nothing (it is %s): there is no change to show", id, info.Stage), Reason: "nothing_written"})
		return
	}
	backup, err := c.Content(ctx, protocol.ContentParams{SessionID: id, Source: protocol.ContentBackup, MaxBytes: maxDiffBytes})
	if err != nil {
		fail(w, err)
		return
	}
	d := Diff{TargetFile: info.TargetFile, Before: "none", Truncated: backup.Truncated}
	if backup.Available {
		d.Before = "backup"
	}
	// The page's process is the person's, as the daemon is: it reads the
	// file the session wrote, bounded, as any editor would.
	now, whole, err := readBounded(info.TargetFile, maxDiffBytes)
	if errors.Is(err, errNotRegular) {
		writeJSON(w, http.StatusConflict, apiError{Message: err.Error(), Reason: "target_not_regular"})
		return
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fail(w, err)
		return
	}
	sum := sha256.Sum256([]byte(now))
	d.Changed = !whole || hex.EncodeToString(sum[:]) != info.Result.FileSHA256 || info.Undone
	d.Truncated = d.Truncated || !whole
	d.Unified = linediff.Unified("before", "after", []byte(backup.Content), []byte(now), 3)
	writeJSON(w, http.StatusOK, d)
}

// readBounded reads at most n bytes of the regular file at path. The
// file is an agent's to replace: opened by name as it is, a FIFO would
// hang the read (and the open) forever, a device would never end, and a
// symbolic link could point anywhere. So the open does not block and does
// not follow a final link, and anything but a regular file is refused,
// checked on the open descriptor (fstat), not on the name.
// errNotRegular: the target is no longer a regular file, so the page does
// not read it.
var errNotRegular = errors.New("the page reads regular files only")

func readBounded(path string, n int64) (string, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", false, fmt.Errorf("%s is a symbolic link now, not the file the session wrote: %w", path, errNotRegular)
		}
		return "", true, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is a %s now, not the file the session wrote: %w", path, fi.Mode().Type(), errNotRegular)
	}
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return "", false, err
	}
	if int64(len(b)) > n {
		return strings.ToValidUTF8(string(b[:n]), "\uFFFD"), false, nil
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true, nil
}

// decodeBody reads an action's JSON body, bounded, unknown fields refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		badRequest(w, "the body must be a JSON object of this action's fields: %v", err)
		return false
	}
	return true
}

type sessionAction struct {
	SessionID string `json:"session_id"`
}

// ActionResult answers an action: the daemon's result, and a sentence for
// the person.
type ActionResult struct {
	Message string `json:"message"`
	Result  any    `json:"result"`
}

// act answers an action: it decodes the JSON body into P, calls the
// daemon with do, and answers the person's sentence and the daemon's result;
// a refusal is answered with the daemon's own message. The session it names
// is refreshed on the page unless do says the action changed nothing.
func act[P any](s *Server, w http.ResponseWriter, r *http.Request, session func(P) string,
	do func(context.Context, *client.Client, P) (msg string, res any, changed bool, err error)) {
	var p P
	if !decodeBody(w, r, &p) {
		return
	}
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	msg, res, changed, err := do(ctx, c, p)
	if err != nil {
		fail(w, err)
		return
	}
	if changed {
		s.hub.touch(session(p))
	}
	writeJSON(w, http.StatusOK, ActionResult{Message: msg, Result: res})
}

func (s *Server) undo(w http.ResponseWriter, r *http.Request) {
	act(s, w, r, func(p sessionAction) string { return p.SessionID },
		func(ctx context.Context, c *client.Client, p sessionAction) (string, any, bool, error) {
			res, err := c.Undo(ctx, p.SessionID)
			if err != nil {
				return "", nil, false, err
			}
			msg := fmt.Sprintf("restored %s (%d bytes)", res.TargetFile, res.RestoredBytes)
			if res.Removed {
				msg = "removed " + res.TargetFile + ", which the session had created"
			}
			if res.Unchanged {
				msg = "left " + res.TargetFile + " as it is: it was already as before the session"
			}
			if res.TxID != "" {
				msg = fmt.Sprintf("undid transaction %s: %d files", res.TxID, len(res.Files))
			}
			return msg, res, true, nil
		})
}

func (s *Server) abort(w http.ResponseWriter, r *http.Request) {
	act(s, w, r, func(p sessionAction) string { return p.SessionID },
		func(ctx context.Context, c *client.Client, p sessionAction) (string, any, bool, error) {
			res, err := c.Abort(ctx, p.SessionID)
			if err != nil {
				return "", nil, false, err
			}
			return fmt.Sprintf("session %s is %s", res.SessionID, res.Stage), res, true, nil
		})
}

type finalizeAction struct {
	SessionID string `json:"session_id"`
	// Force writes over a target changed since the session began; DryRun
	// only shows the diff against the file as it is (what the write would
	// overwrite).
	Force  bool `json:"force"`
	DryRun bool `json:"dry_run"`
}

func (s *Server) finalize(w http.ResponseWriter, r *http.Request) {
	act(s, w, r, func(p finalizeAction) string { return p.SessionID },
		func(ctx context.Context, c *client.Client, p finalizeAction) (string, any, bool, error) {
			res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: p.SessionID, Force: p.Force, DryRun: p.DryRun})
			if err != nil {
				return "", nil, false, err
			}
			if res.DryRun {
				return "dry run: nothing written", res, false, nil
			}
			return fmt.Sprintf("wrote %s: %d bytes, %d lines", res.TargetFile, res.Bytes, res.Lines), res, true, nil
		})
}

// TraceLogs is the answer of GET /api/trace/logs.
type TraceLogs struct {
	// Events are oldest first, or newest first with newest=1.
	Events []protocol.TraceEvent `json:"events"`
	// More says more events matched; Next is the after= of the next page,
	// or with newest=1 its before=.
	More bool   `json:"more"`
	Next string `json:"next,omitempty"`
}

// traceLogs answers GET /api/trace/logs?workspace=&type=&source=&session=&since=&after=&limit=,
// or newest first with newest=1 (and before= for the next, older page).
func (s *Server) traceLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lim, err := intParam(r, "limit", 200, 1, 1000)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	newest := q.Get("newest") == "1"
	p := protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: q.Get("session")}, After: q.Get("after"),
		Before: q.Get("before"), Newest: newest}
	if t := q.Get("type"); t != "" {
		p.Types = strings.Split(t, ",")
		if len(p.Types) > 32 {
			badRequest(w, "type: at most 32 types")
			return
		}
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			d, derr := time.ParseDuration(v)
			if derr != nil || d < 0 {
				badRequest(w, "since %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (10m)", v)
				return
			}
			t = time.Now().Add(-d)
		}
		p.Since = t
	}
	source := q.Get("source")
	switch source {
	case "", sourceClient, sourceDaemon:
	default:
		badRequest(w, "source %q: want %q (requests clients made) or %q (what the daemon did on its own account)", source, sourceClient, sourceDaemon)
		return
	}
	workspace := q.Get("workspace")
	c, ctx, cancel, err := s.daemon(r)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	out := TraceLogs{Events: []protocol.TraceEvent{}}
	// Workspace and source are filtered here, so a page of the daemon's
	// may give fewer events: read on until the limit, at most 10 pages.
	for i := 0; ; i++ {
		p.Limit = lim
		var res protocol.TraceListResult
		if err := c.Call(ctx, protocol.MethodTraceList, p, &res); err != nil {
			fail(w, err)
			return
		}
		if newest {
			// The daemon gives the newest page oldest first.
			slices.Reverse(res.Events)
		}
		for _, ev := range res.Events {
			if source != "" && sourceOf(ev) != source {
				continue
			}
			if workspace != "" {
				if ws, ok := s.hub.workspaceOf(ev.SessionID); !ok || ws != workspace {
					continue
				}
			}
			if len(out.Events) == lim {
				out.More = true
				writeJSON(w, http.StatusOK, out)
				return
			}
			out.Events = append(out.Events, ev)
			out.Next = ev.ID
		}
		if !res.More {
			out.Next = ""
			break
		}
		if newest {
			p.Before = res.Next
		} else {
			p.After = res.Next
		}
		if i == 9 {
			out.More, out.Next = true, res.Next
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// Trace sources: who caused an event.
const (
	sourceClient = "client"
	sourceDaemon = "daemon"
)

func sourceOf(ev protocol.TraceEvent) string {
	if ev.Type == protocol.TraceRequest || ev.Type == protocol.TraceSuppressed {
		return sourceClient
	}
	return sourceDaemon
}
