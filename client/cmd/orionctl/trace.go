package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rivo/uniseg"
	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/ladder"
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
				return usageError{fmt.Errorf("trace takes at most one SESSION, got %d arguments (usage: %s)", len(args), cmd.UseLine())}
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
				return ladder.Build(session, res.Events).WriteText(out, ladder.Width)
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
	fields := ladder.DecodeFields(ev.Fields)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
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

// clip cuts s to at most n display columns in the middle, marking the
// cut: the end of a path is its file name, the part a person looks for,
// so the end is kept, from the last slash when that part fits.
func clip(s string, n int) string {
	if uniseg.StringWidth(s) <= n {
		return s
	}
	var gs []string
	var ws []int
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		gs, ws = append(gs, g.Str()), append(ws, g.Width())
	}
	budget := n - 1 // the mark takes one column
	tailW := budget / 2
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		if w := uniseg.StringWidth(s[i:]); w <= budget*2/3 {
			tailW = max(tailW, w)
		}
	}
	// The tail: whole graphemes from the end within tailW.
	start, w := len(gs), 0
	for start > 0 && w+ws[start-1] <= tailW {
		start--
		w += ws[start]
	}
	var b strings.Builder
	hw := 0
	for i := 0; i < start && hw+ws[i] <= budget-w; i++ {
		b.WriteString(gs[i])
		hw += ws[i]
	}
	return b.String() + "…" + strings.Join(gs[start:], "")
}
