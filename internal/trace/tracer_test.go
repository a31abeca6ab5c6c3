package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orion.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// newTracer returns an attached Tracer on a fresh store and a fake clock.
func newTracer(t *testing.T, opts trace.Options) (*trace.Tracer, *clock.Fake, *store.Store) {
	t.Helper()
	st, _ := openStore(t)
	clk := clock.NewFake(t0)
	opts.Clock = clk
	tr := trace.New(opts)
	t.Cleanup(func() { tr.Close() })
	if err := tr.Attach(st); err != nil {
		t.Fatal(err)
	}
	return tr, clk, st
}

func list(t *testing.T, tr *trace.Tracer, p protocol.TraceListParams) protocol.TraceListResult {
	t.Helper()
	res, err := tr.List(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A listing for a caller that is gone stops with its context's error.
func TestListStopsForACallerGone(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	tr.Record(trace.Event{Type: protocol.TraceRequest, Method: "daemon.status"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := tr.List(ctx, protocol.TraceListParams{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("trace list for a caller gone: %d events, %v; want context.Canceled", len(res.Events), err)
	}
	if res := list(t, tr, protocol.TraceListParams{}); len(res.Events) != 1 {
		t.Fatalf("trace list for a caller still there: %d events, want 1", len(res.Events))
	}
}

// describe is a compact view of events for comparisons: "type/session#n".
func describe(events []protocol.TraceEvent) []string {
	var out []string
	for _, ev := range events {
		var f struct {
			N int `json:"n"`
		}
		json.Unmarshal(ev.Fields, &f)
		out = append(out, fmt.Sprintf("%s/%s#%d", ev.Type, ev.SessionID, f.N))
	}
	return out
}

// record stores a fixed history: for i in 0..9, at t0+i seconds, a request
// of session "a" or "b" alternately and a stage event of session a.
func record(tr *trace.Tracer) {
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Second)
		sess := "a"
		if i%2 == 1 {
			sess = "b"
		}
		tr.Record(trace.Event{Time: at, Type: "request", SessionID: sess, Method: "session.append", Fields: map[string]any{"n": i}})
		if i%3 == 0 {
			tr.Record(trace.Event{Time: at.Add(time.Millisecond), Type: "session.stage", SessionID: "a", Fields: map[string]any{"n": i}})
		}
	}
	tr.Record(trace.Event{Time: t0.Add(20 * time.Second), Type: "error", Fields: map[string]any{"n": 99}})
}

func TestList(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	record(tr)
	tests := []struct {
		name string
		p    protocol.TraceListParams
		want []string
		more bool
	}{
		{"All", protocol.TraceListParams{Limit: 100}, []string{
			"request/a#0", "session.stage/a#0", "request/b#1", "request/a#2", "request/b#3", "session.stage/a#3",
			"request/a#4", "request/b#5", "request/a#6", "session.stage/a#6", "request/b#7", "request/a#8",
			"request/b#9", "session.stage/a#9", "error/#99"}, false},
		{"Limit", protocol.TraceListParams{Limit: 3}, []string{"request/a#0", "session.stage/a#0", "request/b#1"}, true},
		{"Newest", protocol.TraceListParams{Limit: 2, Newest: true}, []string{"session.stage/a#9", "error/#99"}, true},
		{"Session", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "b"}}, []string{
			"request/b#1", "request/b#3", "request/b#5", "request/b#7", "request/b#9"}, false},
		{"SessionNewest", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "a"}, Limit: 2, Newest: true},
			[]string{"request/a#8", "session.stage/a#9"}, true},
		{"SessionType", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "a", Types: []string{"session.*"}}},
			[]string{"session.stage/a#0", "session.stage/a#3", "session.stage/a#6", "session.stage/a#9"}, false},
		{"Types", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{Types: []string{"error", "session.stage"}}, Limit: 2},
			[]string{"session.stage/a#0", "session.stage/a#3"}, true},
		{"SinceUntil", protocol.TraceListParams{Since: t0.Add(3 * time.Second), Until: t0.Add(5 * time.Second)},
			[]string{"request/b#3", "session.stage/a#3", "request/a#4"}, false},
		{"SessionSinceUntil", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "a"},
			Since: t0.Add(3 * time.Second), Until: t0.Add(6 * time.Second)},
			[]string{"session.stage/a#3", "request/a#4"}, false},
		{"NewestUntil", protocol.TraceListParams{Until: t0.Add(4 * time.Second), Limit: 2, Newest: true},
			[]string{"request/b#3", "session.stage/a#3"}, true},
		{"SessionNewestUntil", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "a"},
			Until: t0.Add(3 * time.Second), Newest: true},
			[]string{"request/a#0", "session.stage/a#0", "request/a#2"}, false},
		{"UnknownSession", protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "zz"}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := list(t, tr, tt.p)
			if got := describe(res.Events); !slices.Equal(got, tt.want) {
				t.Fatalf("got  %v\nwant %v", got, tt.want)
			}
			if res.More != tt.more {
				t.Fatalf("more = %v, want %v", res.More, tt.more)
			}
			if res.Events == nil {
				t.Fatal("events is null, want []")
			}
		})
	}
}

func TestListPages(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	record(tr)
	for _, sess := range []string{"", "a"} {
		t.Run("Session"+sess, func(t *testing.T) {
			all := list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: sess}, Limit: 1000})
			var paged []protocol.TraceEvent
			p := protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: sess}, Limit: 2}
			for {
				res := list(t, tr, p)
				paged = append(paged, res.Events...)
				if !res.More {
					break
				}
				p.After = res.Next
			}
			if got, want := describe(paged), describe(all.Events); !slices.Equal(got, want) {
				t.Fatalf("paged %v\nwant  %v", got, want)
			}
			// Newest first, a page at a time back to the oldest: each
			// page's Next is the Before of the next.
			var back []protocol.TraceEvent
			p = protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: sess}, Limit: 2, Newest: true}
			for {
				res := list(t, tr, p)
				back = append(res.Events, back...)
				if !res.More {
					break
				}
				p.Before = res.Next
			}
			if got, want := describe(back), describe(all.Events); !slices.Equal(got, want) {
				t.Fatalf("paged back %v\nwant       %v", got, want)
			}
		})
	}
}

func TestListBadParams(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	for _, p := range []protocol.TraceListParams{{Limit: -1}, {After: "xyz"}, {After: "00"}, {Before: "xyz", Newest: true}} {
		_, err := tr.List(context.Background(), p)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams {
			t.Fatalf("%+v: err %v, want invalid params", p, err)
		}
	}
}

func TestListBeforeAttach(t *testing.T) {
	tr := trace.New(trace.Options{})
	defer tr.Close()
	if _, err := tr.List(context.Background(), protocol.TraceListParams{}); !errors.Is(err, trace.ErrNotAttached) {
		t.Fatalf("err %v, want ErrNotAttached", err)
	}
}

func TestStoredEventsAreValidJSON(t *testing.T) {
	tr, _, st := newTracer(t, trace.Options{Limits: trace.Limits{MaxString: 32}})
	tr.Record(trace.Event{Type: "error\x00", SessionID: "s\xff", Method: "m\xed\xa0\x80", Fields: map[string]any{
		"nul": "a\x00b", "bad": "\xff\xfe", "raw": json.RawMessage(`{"x":"\ud800\u0000"}`), "nan": [2]float64{1, 0},
		"inf": json.Number("1e999"), "long": string(make([]byte, 1000)),
	}})
	tr.Flush()
	n := 0
	st.ScanKV("trace.events", nil, func(k, v []byte) (bool, error) {
		checkJSONSafe(t, v)
		n++
		return true, nil
	})
	if n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
	// The session index uses the cleaned id, so a query for it finds it.
	res := list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s\uFFFD"}})
	if len(res.Events) != 1 || res.Events[0].Type != "error␀" || res.Events[0].Method != "m\uFFFD" {
		t.Fatalf("events %+v", res.Events)
	}
}

func TestTimeAndIDs(t *testing.T) {
	st, _ := openStore(t)
	clk := clock.NewFake(t0)
	first := trace.New(trace.Options{Clock: clk})
	first.Attach(st)
	// Same time twice, and no time (the clock's now).
	first.Record(trace.Event{Time: t0.Add(time.Second), Type: "x"})
	first.Record(trace.Event{Time: t0.Add(time.Second), Type: "x"})
	first.Record(trace.Event{Type: "x"})
	first.Close()
	// A restarted daemon records at the very same time again.
	second := trace.New(trace.Options{Clock: clk})
	second.Attach(st)
	defer second.Close()
	second.Record(trace.Event{Time: t0.Add(time.Second), Type: "x"})
	res := list(t, second, protocol.TraceListParams{})
	if len(res.Events) != 4 {
		t.Fatalf("%d events, want 4 (ids collided?)", len(res.Events))
	}
	ids := map[string]bool{}
	for i, ev := range res.Events {
		ids[ev.ID] = true
		if i > 0 && ev.ID <= res.Events[i-1].ID {
			t.Fatalf("ids out of order: %v", res.Events)
		}
	}
	if len(ids) != 4 {
		t.Fatalf("duplicate ids: %v", res.Events)
	}
	if !res.Events[0].Time.Equal(t0) {
		t.Fatalf("an event without a time got %v, want the clock's %v", res.Events[0].Time, t0)
	}
}

func TestTraceRequestsAreNotTraced(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	tr.Record(trace.Event{Type: "request", Method: protocol.MethodTraceList})
	tr.Record(trace.Event{Type: "request", Method: protocol.MethodDaemonStatus})
	if res := list(t, tr, protocol.TraceListParams{}); len(res.Events) != 1 || res.Events[0].Method != protocol.MethodDaemonStatus {
		t.Fatalf("events %+v", res.Events)
	}
}

// blockingStore stalls every write until released, as a store under a
// slow disk would.
type blockingStore struct {
	*store.Store
	release chan struct{}
	once    sync.Once
}

func (b *blockingStore) PutKVs(puts ...store.Put) error {
	<-b.release
	return b.Store.PutKVs(puts...)
}

func (b *blockingStore) open() { b.once.Do(func() { close(b.release) }) }

func TestRecordNeverBlocks(t *testing.T) {
	st, _ := openStore(t)
	bs := &blockingStore{Store: st, release: make(chan struct{})}
	defer bs.open()
	tr := trace.New(trace.Options{Buffer: 8, MaxBatch: 2, FlushEvery: time.Millisecond})
	defer tr.Close()
	tr.Attach(bs)
	done := make(chan struct{})
	go func() {
		for i := range 10000 {
			tr.Record(trace.Event{Type: "request", Fields: map[string]any{"n": i}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked behind a stalled store")
	}
	s := tr.Stats()
	if s.Recorded+s.Dropped != 10000 || s.Dropped == 0 {
		t.Fatalf("stats %+v: want 10000 events, some dropped", s)
	}
	bs.open()
	tr.Flush()
	if s := tr.Stats(); s.Stored != s.Recorded {
		t.Fatalf("stats %+v: every accepted event should be stored", s)
	}
}

func TestFollow(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{})
	got := make(chan protocol.TraceEventNotification, 100)
	stop := tr.Follow(protocol.TraceFilter{SessionID: "a", Types: []string{"session.*"}}, func(n protocol.TraceEventNotification) { got <- n })
	record(tr)
	tr.Flush()
	var evs []protocol.TraceEvent
	for len(evs) < 4 {
		select {
		case n := <-got:
			evs = append(evs, n.Event)
		case <-time.After(10 * time.Second):
			t.Fatalf("followed %v, want 4 stage events", describe(evs))
		}
	}
	if want := []string{"session.stage/a#0", "session.stage/a#3", "session.stage/a#6", "session.stage/a#9"}; !slices.Equal(describe(evs), want) {
		t.Fatalf("followed %v, want %v", describe(evs), want)
	}
	stop()
	stop() // twice is fine
	tr.Record(trace.Event{Type: "session.stage", SessionID: "a"})
	tr.Flush()
	select {
	case n := <-got:
		t.Fatalf("delivered %+v after stop", n)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestFollowSlowReaderMissesAndCounts(t *testing.T) {
	tr, _, _ := newTracer(t, trace.Options{FollowBuffer: 2})
	release := make(chan struct{})
	got := make(chan protocol.TraceEventNotification, 100)
	stop := tr.Follow(protocol.TraceFilter{}, func(n protocol.TraceEventNotification) {
		<-release
		got <- n
	})
	defer stop()
	for i := range 10 {
		tr.Record(trace.Event{Type: "x", Fields: map[string]any{"n": i}})
	}
	tr.Flush()
	close(release)
	var delivered, dropped uint64
	for delivered+dropped < 10 {
		select {
		case n := <-got:
			delivered++
			dropped += n.Dropped
		case <-time.After(10 * time.Second):
			t.Fatalf("delivered %d, dropped %d; want 10 in all", delivered, dropped)
		}
	}
	if dropped == 0 {
		t.Fatal("a follower that blocked missed nothing")
	}
}

func TestPrune(t *testing.T) {
	tr, clk, _ := newTracer(t, trace.Options{Retention: time.Hour, PruneEvery: 10 * time.Minute})
	for i := range 3000 {
		tr.Record(trace.Event{Time: t0.Add(time.Duration(i) * time.Second), Type: "x", SessionID: "s", Fields: map[string]any{"n": i}})
	}
	tr.Flush()
	// The first sweep runs a minute after Attach: at t0+1m, nothing is an
	// hour old yet.
	clk.Advance(time.Minute)
	if s := tr.Stats(); s.Pruned != 0 {
		t.Fatalf("pruned %d too early", s.Pruned)
	}
	// At t0+1h41m, the sweep deletes events before t0+41m: 2460 of them.
	clk.Advance(100 * time.Minute)
	if s := tr.Stats(); s.Pruned != 41*60 {
		t.Fatalf("pruned %d, want %d", s.Pruned, 41*60)
	}
	res := list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s"}, Limit: 10000})
	if len(res.Events) != 3000-41*60 || !res.Events[0].Time.Equal(t0.Add(41*time.Minute)) {
		t.Fatalf("%d events left, the first at %v", len(res.Events), res.Events[0].Time)
	}
	// The session index was pruned along: a newest-first listing of the
	// session reaches the oldest kept event, not a dangling entry.
	res = list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s"}, Limit: 10000, Newest: true})
	if len(res.Events) != 3000-41*60 {
		t.Fatalf("%d events by session, newest first", len(res.Events))
	}
}

type fakeSink struct {
	mu      sync.Mutex
	entries []trace.Entry
	closed  bool
}

func (s *fakeSink) Send(e trace.Entry) {
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

func (s *fakeSink) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func TestSinks(t *testing.T) {
	sink := &fakeSink{}
	tr, _, _ := newTracer(t, trace.Options{Sinks: []trace.Sink{sink}})
	tr.Record(trace.Event{Type: "x", Fields: map[string]any{"bad": "\x00"}})
	tr.Close()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.entries) != 1 || !sink.closed {
		t.Fatalf("sink got %d entries, closed %v", len(sink.entries), sink.closed)
	}
	checkJSONSafe(t, sink.entries[0].JSON)
	var ev protocol.TraceEvent
	if err := json.Unmarshal(sink.entries[0].JSON, &ev); err != nil || ev.ID != sink.entries[0].Event.ID {
		t.Fatalf("entry JSON %s does not hold the event %+v", sink.entries[0].JSON, sink.entries[0].Event)
	}
}

func TestCloseWithoutAttachFeedsSinks(t *testing.T) {
	sink := &fakeSink{}
	tr := trace.New(trace.Options{Sinks: []trace.Sink{sink}})
	tr.Record(trace.Event{Type: "x"})
	tr.Close()
	tr.Record(trace.Event{Type: "late"})
	if len(sink.entries) != 1 || tr.Stats().Dropped != 1 {
		t.Fatalf("sink got %d entries, stats %+v", len(sink.entries), tr.Stats())
	}
}
