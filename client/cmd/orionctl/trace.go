package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/protocol"
)

// traceOptions are the flags of orionctl trace.
type traceOptions struct {
	follow, export bool
	types          []string
	since, until   string
	limit          int
}

func newTraceCmd(g *globals) *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace [SESSION]",
		Short: "Show what oriond did: a session's ladder, recent events, or a live feed",
		Long: `Show oriond's trace events: every request, stage change, validation, write
and error, kept for the daemon's trace retention (7 days by default).

  orionctl trace SESSION            the session's ladder, step by step
  orionctl trace                    the newest events of every session
  orionctl trace -f [SESSION]       print events as they happen, until interrupted
  orionctl trace --export > t.jsonl every matching event, one JSON object a line

--since and --until take a time (2026-01-02, 2026-01-02T15:04:05Z) or a
duration before now (15m, 2h). --type takes an event type (request,
session.stage, session.write, session.conflict, validation, error) or a
prefix ending in * (session.*).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("accepts at most one SESSION, received %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var session string
			if len(args) == 1 {
				session = args[0]
				if len(session) >= minPrefix && len(session) < fullIDLen {
					c, err := g.dial(cmd)
					if err != nil {
						return err
					}
					session, err = resolveSession(cmd.Context(), c, session)
					c.Close()
					if err != nil {
						return err
					}
				}
			}
			if o.follow && o.export {
				return usageError{errors.New("--follow and --export do not go together: export what is stored, or follow what comes")}
			}
			p, err := o.params(session, time.Now())
			if err != nil {
				return usageError{err}
			}
			out := cmd.OutOrStdout()
			switch {
			case o.follow:
				return followTrace(cmd.Context(), g, out, cmd.ErrOrStderr(), p, o.limit)
			case o.export:
				c, err := g.dial(cmd)
				if err != nil {
					return err
				}
				defer c.Close()
				return exportTrace(cmd.Context(), c, out, p)
			case session != "":
				c, err := g.dial(cmd)
				if err != nil {
					return err
				}
				defer c.Close()
				res, err := allEvents(cmd.Context(), c, p)
				if err != nil {
					return err
				}
				if g.json {
					return printJSON(out, res)
				}
				if len(res.Events) == 0 {
					return fmt.Errorf("no trace events for session %s (none recorded, pruned after the daemon's trace retention, or another filter excluded them)", session)
				}
				return renderLadder(out, session, res.Events, ladderWidth)
			default:
				c, err := g.dial(cmd)
				if err != nil {
					return err
				}
				defer c.Close()
				p.Newest = true
				p.Limit = o.limit
				res, err := listTrace(cmd.Context(), c, p)
				if err != nil {
					return err
				}
				if g.json {
					return printJSON(out, res)
				}
				for _, ev := range res.Events {
					fmt.Fprintln(out, eventLine(ev))
				}
				if res.Stats.Dropped > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: oriond dropped %d trace events since it started (its buffer was full)\n", res.Stats.Dropped)
				}
				return nil
			}
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.follow, "follow", "f", false, "print new events as they happen, until interrupted")
	f.BoolVar(&o.export, "export", false, "print every matching event as JSON lines, oldest first")
	f.StringArrayVarP(&o.types, "type", "t", nil, "only events of this type; repeatable; a prefix ending in * matches")
	f.StringVar(&o.since, "since", "", "only events at or after this time, or this long ago (15m, 2h)")
	f.StringVar(&o.until, "until", "", "only events before this time, or this long ago")
	f.IntVarP(&o.limit, "limit", "n", 50, "without SESSION: how many of the newest events")
	return cmd
}

// params turns the flags into trace.list params.
func (o *traceOptions) params(session string, now time.Time) (protocol.TraceListParams, error) {
	p := protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: session, Types: o.types}}
	var err error
	if p.Since, err = parseWhen(o.since, now); err != nil {
		return p, fmt.Errorf("--since: %w", err)
	}
	if p.Until, err = parseWhen(o.until, now); err != nil {
		return p, fmt.Errorf("--until: %w", err)
	}
	if o.limit < 1 || o.limit > 10000 {
		return p, fmt.Errorf("--limit %d: give 1 to 10000", o.limit)
	}
	return p, nil
}

// parseWhen reads a time, or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration is how long ago, so positive", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-01-02, 2026-01-02T15:04:05Z) nor a duration (15m, 2h)", s)
}

func listTrace(ctx context.Context, c *client.Client, p protocol.TraceListParams) (protocol.TraceListResult, error) {
	var res protocol.TraceListResult
	err := c.Call(ctx, protocol.MethodTraceList, p, &res)
	return res, err
}

// eachPage calls fn with every page of an oldest-first listing.
func eachPage(ctx context.Context, c *client.Client, p protocol.TraceListParams, fn func(protocol.TraceListResult) error) error {
	p.Limit, p.Newest = 1000, false
	for {
		res, err := listTrace(ctx, c, p)
		if err != nil {
			return err
		}
		if err := fn(res); err != nil {
			return err
		}
		if !res.More || res.Next == "" {
			return nil
		}
		p.After = res.Next
	}
}

// allEvents lists every matching event, oldest first.
func allEvents(ctx context.Context, c *client.Client, p protocol.TraceListParams) (protocol.TraceListResult, error) {
	var all protocol.TraceListResult
	err := eachPage(ctx, c, p, func(res protocol.TraceListResult) error {
		all.Events = append(all.Events, res.Events...)
		all.Stats = res.Stats
		return nil
	})
	if all.Events == nil {
		all.Events = []protocol.TraceEvent{}
	}
	return all, err
}

// exportTrace writes every matching event as a JSON line, page by page.
func exportTrace(ctx context.Context, c *client.Client, w io.Writer, p protocol.TraceListParams) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return eachPage(ctx, c, p, func(res protocol.TraceListResult) error {
		for _, ev := range res.Events {
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// inbox queues trace.event notifications. The client delivers them on its
// read loop, which must not wait for the printer, or the reply to the
// backlog listing could not be read.
type inbox struct {
	mu    sync.Mutex
	items []protocol.TraceEventNotification
	wake  chan struct{}
}

func (b *inbox) push(method string, params json.RawMessage) {
	if method != protocol.NotifyTraceEvent {
		return
	}
	var n protocol.TraceEventNotification
	if json.Unmarshal(params, &n) != nil {
		return
	}
	b.mu.Lock()
	b.items = append(b.items, n)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) take() []protocol.TraceEventNotification {
	b.mu.Lock()
	defer b.mu.Unlock()
	items := b.items
	b.items = nil
	return items
}

// followTrace subscribes, prints the recent backlog, then every new event
// until ctx ends or the daemon goes away.
func followTrace(ctx context.Context, g *globals, out, errOut io.Writer, p protocol.TraceListParams, backlog int) error {
	box := &inbox{wake: make(chan struct{}, 1)}
	c, err := client.Dial(ctx, g.socket, client.Options{OnNotification: box.push})
	if err != nil {
		return err
	}
	defer c.Close()
	// Subscribe first, then list, so nothing falls between the two; an
	// event in both is printed once.
	var fr protocol.TraceFollowResult
	if err := c.Call(ctx, protocol.MethodTraceFollow, protocol.TraceFollowParams{TraceFilter: p.TraceFilter}, &fr); err != nil {
		return err
	}
	print := func(ev protocol.TraceEvent) error {
		if g.json {
			b, _ := json.Marshal(ev)
			_, err := fmt.Fprintf(out, "%s\n", b)
			return err
		}
		_, err := fmt.Fprintln(out, eventLine(ev))
		return err
	}
	p.Newest, p.Limit = true, backlog
	res, err := listTrace(ctx, c, p)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(res.Events))
	for _, ev := range res.Events {
		seen[ev.ID] = true
		if err := print(ev); err != nil {
			return err
		}
	}
	for {
		for _, n := range box.take() {
			if n.Dropped > 0 {
				fmt.Fprintf(errOut, "… %d events missed: this terminal read them too slowly\n", n.Dropped)
			}
			if seen[n.Event.ID] {
				continue
			}
			if !p.Since.IsZero() && n.Event.Time.Before(p.Since) || !p.Until.IsZero() && !n.Event.Time.Before(p.Until) {
				continue
			}
			if err := print(n.Event); err != nil {
				return err
			}
		}
		select {
		case <-box.wake:
		case <-ctx.Done():
			return nil
		case <-c.Done():
			return fmt.Errorf("%w: the daemon closed the connection", client.ErrDaemonUnreachable)
		}
	}
}

// eventLine is one event on one line: time, type, session, method, fields.
func eventLine(ev protocol.TraceEvent) string {
	session := ev.SessionID
	if session == "" {
		session = "-"
	} else if len(session) > 8 {
		session = session[:8]
	}
	method := ev.Method
	if method == "" {
		method = "-"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-16s %-8s  %-17s", ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"),
		termsafe.String(string(ev.Type)), termsafe.String(session), termsafe.String(method))
	fields := decodeFields(ev.Fields)
	for _, k := range sortedKeys(fields) {
		if fields[k] == nil {
			continue
		}
		b.WriteString(" " + termsafe.String(k) + "=" + clip(eventValue(fields[k]), 80))
	}
	return strings.TrimRight(b.String(), " ")
}

// eventValue renders a field value of an event line: strings bare, the rest
// as compact JSON, both made safe for a terminal (JSON leaves bidi controls
// in strings as they are).
func eventValue(v any) string {
	if s, ok := v.(string); ok {
		return termsafe.String(s)
	}
	b, _ := json.Marshal(v)
	return termsafe.String(string(b))
}

func decodeFields(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		dec.Decode(&m)
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compact renders a field value for a human: strings bare, the rest as
// compact JSON, control characters made visible.
func compact(v any) string {
	if s, ok := v.(string); ok {
		return display(s)
	}
	b, _ := json.Marshal(v)
	return display(string(b))
}

// display makes s safe to print on a terminal: control characters (escape
// sequences among them) become visible escapes.
func display(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clip cuts s to at most n display columns, marking the cut.
func clip(s string, n int) string {
	if uniseg.StringWidth(s) <= n {
		return s
	}
	var b strings.Builder
	w := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		cw := g.Width()
		if w+cw > n-1 {
			break
		}
		b.WriteString(g.Str())
		w += cw
	}
	return b.String() + "…"
}

// The ladder: one session's events drawn as the steps of a tool call, top
// to bottom, like a sequence diagram. Each request is a rung, with the stage
// changes, writes and conflicts that happened while it ran; consecutive
// successful appends are one rung; events no request caused (idle and
// auto-finalize timers, the watcher, recovery) are rungs of their own.

// ladderWidth fills an 80-column terminal; a SHA-256 fits on its line.
const ladderWidth = 80

// status of a rung, worst last.
type status int

const (
	statusOK status = iota
	statusUnknown
	statusAttention
	statusFailed
)

func (s status) icon() string {
	return [...]string{"✅", "❓", "❗", "❌"}[s]
}

type rung struct {
	title   string
	status  status
	at      time.Time
	lines   []string
	stages  []string
	content string // bytes and lines after the rung's last stage change
	// appends summarises a run of successful session.append requests.
	appends *appendRun
	method  string
	ok      bool // a request that succeeded
}

type appendRun struct {
	n                  int
	first, last        string // seq
	bytes              string
	marker             string // seq at which the end marker was seen
	took, slowest      float64
	hasTook, hasMarker bool
}

func (r *rung) worsen(s status) {
	if s > r.status {
		r.status = s
	}
}

func (r *rung) add(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

var methodTitles = map[string]string{
	protocol.MethodSessionBegin:    "BEGIN",
	protocol.MethodSessionAppend:   "APPEND",
	protocol.MethodSessionFinalize: "FINALIZE",
	protocol.MethodSessionAbort:    "ABORT",
	protocol.MethodSessionResume:   "RESUME",
	protocol.MethodSessionContinue: "CONTINUE",
	protocol.MethodSessionGet:      "GET",
}

// fieldString is a field as text, and whether it was there.
func fieldString(f map[string]any, k string) (string, bool) {
	v, ok := f[k]
	if !ok || v == nil {
		return "", false
	}
	return compact(v), true
}

func fieldFloat(f map[string]any, k string) (float64, bool) {
	n, ok := f[k].(json.Number)
	if !ok {
		return 0, false
	}
	x, err := n.Float64()
	return x, err == nil
}

func ms(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64) + " ms"
}

func buildRungs(events []protocol.TraceEvent) []*rung {
	var rungs []*rung
	var open *rung
	var openEnd time.Time
	for _, ev := range events {
		f := decodeFields(ev.Fields)
		if ev.Type == protocol.TraceRequest {
			took, hasTook := fieldFloat(f, "duration_ms")
			// Events of the request carry times up to its end; allow a
			// millisecond for clocks read at slightly different moments.
			end := ev.Time.Add(time.Duration(took*float64(time.Millisecond)) + time.Millisecond)
			_, failed := f["error_code"]
			if ev.Method == protocol.MethodSessionAppend && !failed && len(rungs) > 0 && rungs[len(rungs)-1].appends != nil &&
				rungs[len(rungs)-1].status == statusOK {
				rungs[len(rungs)-1].appends.add(f, took, hasTook)
				open, openEnd = rungs[len(rungs)-1], end
				continue
			}
			r := requestRung(ev, f, took, hasTook)
			rungs = append(rungs, r)
			open, openEnd = r, end
			continue
		}
		if open != nil && !ev.Time.After(openEnd) {
			open.absorb(ev, f)
			continue
		}
		open = nil
		r := &rung{at: ev.Time}
		r.title = eventTitle(ev, f)
		r.absorb(ev, f)
		rungs = append(rungs, r)
	}
	return rungs
}

func requestRung(ev protocol.TraceEvent, f map[string]any, took float64, hasTook bool) *rung {
	r := &rung{at: ev.Time, method: ev.Method}
	r.title = methodTitles[ev.Method]
	if r.title == "" {
		r.title = "REQUEST " + strings.ToUpper(display(ev.Method))
	}
	if code, failed := fieldString(f, "error_code"); failed {
		msg, _ := fieldString(f, "error")
		r.status = statusFailed
		r.add("Method: %s", display(ev.Method)+tookSuffix(took, hasTook))
		r.add("Error: %s %s", code, msg)
	} else if ev.Method == protocol.MethodSessionAppend {
		r.appends = &appendRun{}
		r.appends.add(f, took, hasTook)
	} else {
		r.ok = true
		r.add("Method: %s", display(ev.Method)+tookSuffix(took, hasTook))
	}
	switch {
	case r.appends != nil:
	case r.status == statusFailed:
		// A refused append acknowledged nothing: its seq and bytes are
		// zero values, not news.
		genericFields(r, f, "duration_ms", "error_code", "error", "seq", "bytes", "end_marker_seen")
	default:
		genericFields(r, f, "duration_ms", "error_code", "error")
	}
	return r
}

func tookSuffix(took float64, has bool) string {
	if !has {
		return ""
	}
	return ", " + ms(took)
}

// add counts one request event of session.append into the run. oriond
// folds a session's acknowledged appends into one event (fields appends,
// first_seq, max_duration_ms, end_marker_seq besides those of a single
// append, where seq is the last and duration_ms the sum); an event without
// them is one append, as older daemons recorded every one.
func (a *appendRun) add(f map[string]any, took float64, hasTook bool) {
	n := 1
	if x, ok := fieldFloat(f, "appends"); ok && x >= 1 {
		// A count no daemon wrote (fractional, past int's range) still
		// counts for at least one, and never overflows.
		n = int(min(x, 1<<40))
	}
	a.n += n
	seq, _ := fieldString(f, "seq")
	first := seq
	if s, ok := fieldString(f, "first_seq"); ok {
		first = s
	}
	if a.n == n {
		a.first = first
	}
	a.last = seq
	if b, ok := fieldString(f, "bytes"); ok {
		a.bytes = b
	}
	if seen, _ := f["end_marker_seen"].(bool); seen && !a.hasMarker {
		a.marker, a.hasMarker = seq, true
		if s, ok := fieldString(f, "end_marker_seq"); ok {
			a.marker = s
		}
	}
	if hasTook {
		slowest := took
		if x, ok := fieldFloat(f, "max_duration_ms"); ok {
			slowest = x
		}
		a.took += took
		a.slowest = max(a.slowest, slowest)
		a.hasTook = true
	}
}

func (a *appendRun) lines() []string {
	var out []string
	chunks := "seq " + a.first
	if a.n > 1 {
		chunks = fmt.Sprintf("seq %s–%s (%d requests)", a.first, a.last, a.n)
	}
	out = append(out, "Method: session.append", "Chunks: "+chunks)
	if a.bytes != "" {
		out = append(out, "Received: "+pluralStr(a.bytes, "byte", "bytes"))
	}
	if a.hasMarker {
		out = append(out, "End marker: seen at seq "+a.marker)
	} else {
		out = append(out, "End marker: not yet")
	}
	if a.hasTook {
		t := ms(roundMS(a.took))
		if a.n > 1 {
			t += " in all, the slowest " + ms(a.slowest)
		}
		out = append(out, "Took: "+t)
	}
	return out
}

func roundMS(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func eventTitle(ev protocol.TraceEvent, f map[string]any) string {
	switch ev.Type {
	case protocol.TraceStage:
		stage, _ := fieldString(f, "stage")
		switch {
		case f["recovered"] != nil:
			return "RECOVERED AFTER A RESTART"
		case stage == string(protocol.StageTruncated):
			return "TRUNCATED (NO END MARKER)"
		case stage == string(protocol.StageExpired):
			return "EXPIRED"
		}
		return "STAGE " + strings.ToUpper(stage)
	case protocol.TraceWrite:
		return "WRITE"
	case protocol.TraceConflict:
		return "TARGET CHANGED ON DISK"
	case protocol.TraceTruncated:
		return "TRUNCATED"
	case protocol.TraceValidation:
		return "VALIDATION"
	case protocol.TraceError:
		return "ERROR"
	}
	return strings.ToUpper(display(string(ev.Type)))
}

// absorb adds what ev says to the rung.
func (r *rung) absorb(ev protocol.TraceEvent, f map[string]any) {
	switch ev.Type {
	case protocol.TraceStage:
		stage, _ := fieldString(f, "stage")
		r.stages = append(r.stages, stage)
		switch protocol.Stage(stage) {
		case protocol.StageTruncated, protocol.StageNeedsCorrections, protocol.StageExpired, protocol.StageAborted:
			r.worsen(statusAttention)
		}
		b, hasB := fieldString(f, "bytes")
		l, hasL := fieldString(f, "lines")
		if hasB || hasL {
			r.content = pluralStr(b, "byte", "bytes") + ", " + pluralStr(l, "line", "lines")
		}
		if target, ok := fieldString(f, "target"); ok {
			op, _ := fieldString(f, "operation")
			r.add("Target: %s (%s)", target, op)
		}
		if msg, ok := fieldString(f, "error"); ok {
			r.add("Error: %s", msg)
			r.worsen(statusFailed)
		}
		genericFields(r, f, "stage", "bytes", "lines", "target", "operation", "error")
	case protocol.TraceWrite:
		target, _ := fieldString(f, "target")
		b, _ := fieldString(f, "bytes")
		l, _ := fieldString(f, "lines")
		line := fmt.Sprintf("Wrote: %s, %s, %s", target, pluralStr(b, "byte", "bytes"), pluralStr(l, "line", "lines"))
		if mode, ok := fieldString(f, "mode"); ok {
			line += ", mode " + mode
		}
		r.add("%s", line)
		if sum, ok := fieldString(f, "sha256"); ok {
			r.add("SHA256: %s", sum)
		}
		if ws, ok := f["warnings"].([]any); ok {
			for _, w := range ws {
				wm, _ := w.(map[string]any)
				code, _ := fieldString(wm, "code")
				msg, _ := fieldString(wm, "message")
				r.add("Warning: %s: %s", code, msg)
				r.worsen(statusAttention)
			}
		}
		if fb, ok := fieldString(f, "file_bytes"); ok && fb != b {
			r.add("File now: %s", pluralStr(fb, "byte", "bytes"))
		}
		genericFields(r, f, "target", "bytes", "lines", "mode", "sha256", "warnings", "operation", "file_bytes")
	case protocol.TraceConflict:
		target, _ := fieldString(f, "target")
		event, _ := fieldString(f, "event")
		r.add("Changed: %s (%s)", target, event)
		r.worsen(statusAttention)
		genericFields(r, f, "target", "event")
	case protocol.TraceError:
		r.worsen(statusFailed)
		genericFields(r, f)
	case protocol.TraceValidation:
		if ok, isBool := f["ok"].(bool); isBool {
			if ok {
				r.add("Validation: passed")
			} else {
				r.add("Validation: refused")
				r.worsen(statusFailed)
			}
		}
		genericFields(r, f, "ok")
	default:
		r.worsen(statusUnknown)
		r.add("Event: %s", display(string(ev.Type)))
		genericFields(r, f)
	}
}

// genericFields adds the fields not named in skip as "Key: value" lines,
// leaving out empty ones (null, "", false) that say nothing.
func genericFields(r *rung, f map[string]any, skip ...string) {
	for _, k := range sortedKeys(f) {
		if containsString(skip, k) || f[k] == nil || f[k] == "" || f[k] == false {
			continue
		}
		name := strings.ReplaceAll(display(k), "_", " ")
		if name != "" {
			name = strings.ToUpper(name[:1]) + name[1:]
		}
		r.add("%s: %s", name, compact(f[k]))
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// renderLadder draws the session's events as a ladder width columns wide.
func renderLadder(w io.Writer, session string, events []protocol.TraceEvent, width int) error {
	inner := width - 4
	var out []string
	rule := func(l, r string) { out = append(out, l+strings.Repeat("─", width-2)+r) }
	row := func(text string) {
		for _, line := range wrap(text, inner, "    ") {
			out = append(out, "│ "+line+strings.Repeat(" ", max(0, inner-uniseg.StringWidth(line)))+" │")
		}
	}
	rule("┌", "┐")
	row("WRITE SESSION TRACE: " + display(session))
	rule("├", "┤")
	first, last := events[0].Time, events[len(events)-1].Time
	row("Started:  " + first.UTC().Format("2006-01-02T15:04:05.000Z"))
	target, outcome := "", ""
	for _, ev := range events {
		if ev.Type != protocol.TraceStage {
			continue
		}
		f := decodeFields(ev.Fields)
		if t, ok := fieldString(f, "target"); ok && target == "" {
			op, _ := fieldString(f, "operation")
			target = t + " (" + op + ")"
		}
		if s, ok := fieldString(f, "stage"); ok {
			outcome = s
			b, hasB := fieldString(f, "bytes")
			l, _ := fieldString(f, "lines")
			if hasB {
				outcome += ", " + pluralStr(b, "byte", "bytes") + ", " + pluralStr(l, "line", "lines")
			}
		}
	}
	if target != "" {
		row("Target:   " + target)
	}
	if outcome != "" {
		row("Stage:    " + outcome)
	}
	row(fmt.Sprintf("Events:   %d over %s", len(events), offset(last.Sub(first))))
	for i, r := range buildRungs(events) {
		rule("├", "┤")
		head := fmt.Sprintf("[%d] %s", i+1, r.title)
		if r.appends != nil && r.appends.n > 1 {
			head = fmt.Sprintf("[%d] %s ×%d", i+1, r.title, r.appends.n)
		}
		head += ": " + r.status.icon()
		at := "+" + offset(r.at.Sub(first))
		pad := inner - uniseg.StringWidth(head) - uniseg.StringWidth(at)
		if pad < 1 {
			row(head)
			row(strings.Repeat(" ", max(0, inner-uniseg.StringWidth(at))) + at)
		} else {
			row(head + strings.Repeat(" ", pad) + at)
		}
		lines := r.lines
		if r.appends != nil {
			lines = append(r.appends.lines(), lines...)
		}
		if len(r.stages) > 0 {
			st := "Stage: " + strings.Join(r.stages, " → ")
			// An append run says what it received; the stage's count is
			// from its first chunk.
			if r.content != "" && r.appends == nil {
				st += " (" + r.content + ")"
			}
			lines = append(lines, st)
		}
		for _, l := range lines {
			row("    " + l)
		}
	}
	rule("└", "┘")
	_, err := io.WriteString(w, strings.Join(out, "\n")+"\n")
	return err
}

// offset formats a duration since the first event compactly.
func offset(d time.Duration) string {
	switch {
	case d <= 0:
		return "0ms"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// wrap cuts s into lines of at most width columns, on grapheme
// boundaries, preferring spaces; continuation lines start with indent
// plus the line's own leading spaces.
func wrap(s string, width int, indent string) []string {
	if uniseg.StringWidth(s) <= width {
		return []string{s}
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	cont := lead + indent
	var lines []string
	var cur strings.Builder
	curW := 0
	prefix := len(lead) // bytes of cur that are indentation
	lastSpace := -1     // byte offset in cur just after a space
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		gs, gw := g.Str(), g.Width()
		if curW+gw > width && cur.Len() > prefix {
			line, rest := cur.String(), ""
			// Break at the last space if what follows it fits on the
			// next line, else right here.
			if lastSpace > prefix && lastSpace < len(line) &&
				uniseg.StringWidth(cont+line[lastSpace:])+gw <= width {
				line, rest = line[:lastSpace], line[lastSpace:]
			}
			lines = append(lines, strings.TrimRight(line, " "))
			cur.Reset()
			cur.WriteString(cont + rest)
			curW = uniseg.StringWidth(cont + rest)
			prefix, lastSpace = len(cont), -1
		}
		cur.WriteString(gs)
		curW += gw
		if gs == " " {
			lastSpace = cur.Len()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		lines = append(lines, cur.String())
	}
	return lines
}
