package ui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Ladder is one session's trace as steps, top to bottom. Its JSON shape
// is the one the terminal's ladder model marshals to, so that the page
// can draw either.
type Ladder struct {
	SessionID string    `json:"session_id"`
	Started   time.Time `json:"started"`
	Last      time.Time `json:"last"`
	Events    int       `json:"events"`
	Rungs     []Rung    `json:"rungs"`
}

// Rung is one step: a request (a run of appends folded into one), or
// something the daemon did on its own account.
type Rung struct {
	Title string `json:"title"`
	// Status is ok, attention or failed.
	Status   string    `json:"status"`
	At       time.Time `json:"at"`
	Method   string    `json:"method,omitempty"`
	Requests int       `json:"requests,omitempty"`
	Details  []string  `json:"details"`
	Stages   []string  `json:"stages,omitempty"`
}

var methodTitles = map[string]string{
	protocol.MethodSessionBegin:    "BEGIN",
	protocol.MethodSessionAppend:   "CHUNKS",
	protocol.MethodSessionFinalize: "FINALIZE",
	protocol.MethodSessionAbort:    "ABORT",
	protocol.MethodSessionResume:   "RESUME",
	protocol.MethodSessionContinue: "CONTINUE",
	protocol.MethodSessionUndo:     "UNDO",
	protocol.MethodSessionWrite:    "WRITE (whole file)",
}

var typeTitles = map[protocol.TraceType]string{
	protocol.TraceStage:      "STAGE",
	protocol.TraceWrite:      "WRITE",
	protocol.TraceTruncated:  "TRUNCATED",
	protocol.TraceConflict:   "CONFLICT",
	protocol.TraceValidation: "VALIDATION",
	protocol.TraceError:      "ERROR",
	protocol.TraceTxStage:    "TRANSACTION",
}

// BuildLadder makes the ladder of a session's events (any order); nil when
// there are none. Reads of the session (session.get, session.content) are
// left out: they change nothing.
func BuildLadder(session string, events []protocol.TraceEvent) *Ladder {
	events = append([]protocol.TraceEvent(nil), events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].ID < events[j].ID })
	l := &Ladder{SessionID: session, Rungs: []Rung{}}
	appends := -1 // the rung of the current run of appends
	for _, ev := range events {
		if ev.Type == protocol.TraceRequest && (ev.Method == protocol.MethodSessionGet || ev.Method == protocol.MethodSessionContent ||
			ev.Method == protocol.MethodSessionList || ev.Method == protocol.MethodTraceList) {
			continue
		}
		if l.Events == 0 {
			l.Started = ev.Time
		}
		l.Events++
		l.Last = ev.Time
		var f map[string]any
		_ = json.Unmarshal(ev.Fields, &f)
		failed := f["error"] != nil || f["error_code"] != nil
		if ev.Type == protocol.TraceRequest && ev.Method == protocol.MethodSessionAppend && !failed {
			if appends < 0 {
				l.Rungs = append(l.Rungs, Rung{Title: "CHUNKS", Status: "ok", At: ev.Time, Method: ev.Method})
				appends = len(l.Rungs) - 1
			}
			appends := &l.Rungs[appends]
			n := 1
			if v, ok := f["appends"].(float64); ok {
				n = int(v)
			}
			appends.Requests += n
			appends.Details = []string{fmt.Sprintf("%d chunks, up to seq %v, %v bytes", appends.Requests, f["seq"], f["bytes"])}
			if f["end_marker_seen"] == true {
				appends.Details = append(appends.Details, "end marker seen")
			}
			continue
		}
		r := Rung{Status: "ok", At: ev.Time, Method: ev.Method, Details: []string{}}
		if ev.Type == protocol.TraceRequest {
			r.Title = methodTitles[ev.Method]
			if r.Title == "" {
				r.Title = ev.Method
			}
			r.Requests = 1
		} else {
			r.Title = typeTitles[ev.Type]
			if r.Title == "" {
				r.Title = string(ev.Type)
			}
		}
		switch ev.Type {
		case protocol.TraceStage:
			appends = -1
			r.Title = fmt.Sprintf("STAGE %v", f["stage"])
			r.Stages = []string{fmt.Sprint(f["stage"])}
			switch f["stage"] {
			case string(protocol.StageTruncated), string(protocol.StageNeedsCorrections), string(protocol.StageExpired):
				r.Status = "attention"
			}
		case protocol.TraceConflict, protocol.TraceTruncated:
			r.Status = "attention"
		case protocol.TraceError:
			r.Status = "failed"
		case protocol.TraceValidation:
			if ok, has := f["ok"].(bool); has && !ok {
				r.Status = "attention"
			}
		}
		if failed {
			r.Status = "failed"
		}
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if f[k] == nil || f[k] == "" {
				continue
			}
			b, _ := json.Marshal(f[k])
			if s, ok := f[k].(string); ok {
				b = []byte(s)
			}
			if len(b) > 300 {
				b = append([]byte(strings.ToValidUTF8(string(b[:300]), "")), "…"...)
			}
			r.Details = append(r.Details, k+": "+string(b))
		}
		if ev.Type == protocol.TraceRequest {
			appends = -1
		}
		l.Rungs = append(l.Rungs, r)
	}
	if l.Events == 0 {
		return nil
	}
	return l
}
