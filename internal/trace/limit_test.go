package trace_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

type recorded struct {
	mu     sync.Mutex
	events []trace.Event
}

func (r *recorded) Record(ev trace.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorded) take() []trace.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func rejectedEvent(method, reason string) trace.Event {
	return trace.Event{Type: protocol.TraceRequest, Method: method, Fields: map[string]any{"reason": reason}}
}

// TestLimiter: a burst passes, the rest of a flood is counted in one
// summary an interval, and the bucket refills at the rate.
func TestLimiter(t *testing.T) {
	clk := clock.NewFake(t0)
	var rec recorded
	l := trace.NewLimiter(&rec, trace.LimiterOptions{Rate: 10, Burst: 5, Interval: time.Second, Clock: clk})
	for i := range 100 {
		l.Record(rejectedEvent("nope", []string{"unknown_method", "field_too_large"}[i%2]))
	}
	if got := rec.take(); len(got) != 5 {
		t.Fatalf("%d events passed at once, want the burst of 5", len(got))
	}
	if got := l.Suppressed(); got != 95 {
		t.Fatalf("suppressed %d, want 95", got)
	}
	clk.Advance(time.Second)
	got := rec.take()
	if len(got) != 1 || got[0].Type != protocol.TraceSuppressed {
		t.Fatalf("after the interval: %+v, want one summary", got)
	}
	f := got[0].Fields
	if f["events"] != uint64(95) || !f["since"].(time.Time).Equal(t0) {
		t.Fatalf("summary fields %v", f)
	}
	if r := f["by_reason"].(map[string]uint64); r["unknown_method"] != 47 || r["field_too_large"] != 48 {
		t.Fatalf("by_reason %v", r)
	}
	// A second later the bucket holds its burst again (10/s, capped at 5).
	for range 7 {
		l.Record(rejectedEvent("nope", "unknown_method"))
	}
	if got := rec.take(); len(got) != 5 {
		t.Fatalf("%d passed after a refill, want 5", len(got))
	}
	// 300 ms refill 3 tokens.
	clk.Advance(300 * time.Millisecond)
	for range 4 {
		l.Record(rejectedEvent("nope", "unknown_method"))
	}
	if got := rec.take(); len(got) != 3 {
		t.Fatalf("%d passed after 300ms, want 3", len(got))
	}
	// Stop records what is still held: 2 + 1.
	l.Stop()
	got = rec.take()
	if len(got) != 1 || got[0].Fields["events"] != uint64(3) {
		t.Fatalf("Stop recorded %+v, want a summary of 3", got)
	}
}

// TestLimiterSummaryIsBounded: a flood of distinct methods cannot grow a
// summary: 16 are named, the rest counted as other, each name cut.
func TestLimiterSummaryIsBounded(t *testing.T) {
	clk := clock.NewFake(t0)
	var rec recorded
	l := trace.NewLimiter(&rec, trace.LimiterOptions{Rate: 1, Burst: 1, Clock: clk})
	for i := range 1001 {
		l.Record(rejectedEvent(fmt.Sprintf("%d%s", i, strings.Repeat("m", 16<<10)), "field_too_large"))
	}
	clk.Advance(time.Second)
	got := rec.take()
	summary := got[len(got)-1]
	methods := summary.Fields["by_method"].(map[string]uint64)
	if len(methods) != 17 || methods["other"] != 1000-16 {
		t.Fatalf("%d methods in the summary, other %d", len(methods), methods["other"])
	}
	for m := range methods {
		if len(m) > protocol.MaxMethodBytes+64 {
			t.Fatalf("a method of %d bytes in the summary", len(m))
		}
	}
}

// storedBytes sums the keys and values of the trace buckets, as MaxBytes
// counts them.
func storedBytes(t *testing.T, st *store.Store) (int64, int) {
	t.Helper()
	var total int64
	events := 0
	for _, b := range []string{"trace.events", "trace.sessions"} {
		st.ScanKV(b, nil, func(k, v []byte) (bool, error) {
			total += int64(len(k) + len(v))
			if b == "trace.events" {
				events++
			}
			return true, nil
		})
	}
	return total, events
}

// TestMaxBytes: the stored events stay under the cap, the oldest go first
// with their index entries, the count agrees with the buckets, and a
// restart finds the same count.
func TestMaxBytes(t *testing.T) {
	const limit = 64 << 10
	st, _ := openStore(t)
	clk := clock.NewFake(t0)
	tr := trace.New(trace.Options{MaxBytes: limit, Clock: clk})
	if err := tr.Attach(st); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 200)
	const n = 3000
	for i := range n {
		tr.Record(trace.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Type: "x",
			SessionID: fmt.Sprintf("s%d", i%7), Fields: map[string]any{"n": i, "pad": pad}})
		if i%500 == 499 {
			tr.Flush()
		}
	}
	tr.Flush()
	s := tr.Stats()
	if s.Bytes > limit || s.Bytes < limit/2 || s.MaxBytes != limit || s.Evicted == 0 {
		t.Fatalf("stats %+v: want bytes under %d (and not far under), some evicted", s, limit)
	}
	total, events := storedBytes(t, st)
	if total != s.Bytes || uint64(events) != n-s.Evicted {
		t.Fatalf("buckets hold %d bytes in %d events; stats say %d bytes, %d evicted", total, events, s.Bytes, s.Evicted)
	}
	res := list(t, tr, protocol.TraceListParams{Limit: 10000})
	var first, last struct{ N int }
	json.Unmarshal(res.Events[0].Fields, &first)
	json.Unmarshal(res.Events[len(res.Events)-1].Fields, &last)
	if first.N != int(s.Evicted) || last.N != n-1 {
		t.Fatalf("kept events %d..%d, want %d..%d: the oldest go first", first.N, last.N, s.Evicted, n-1)
	}
	// The index lost the evicted events too: a session's listing has
	// exactly its kept events.
	bySession := list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s3"}, Limit: 10000})
	want := 0
	for i := int(s.Evicted); i < n; i++ {
		if i%7 == 3 {
			want++
		}
	}
	if len(bySession.Events) != want {
		t.Fatalf("session s3 lists %d events, want %d", len(bySession.Events), want)
	}
	tr.Close()

	again := trace.New(trace.Options{MaxBytes: limit, Clock: clk})
	defer again.Close()
	if err := again.Attach(st); err != nil {
		t.Fatal(err)
	}
	if got := again.Stats().Bytes; got != total {
		t.Fatalf("after a restart the count is %d, want %d", got, total)
	}
}

// TestMaxBytesShrinksAnOldStore: a store filled before the cap was set is
// brought under it when the tracer starts.
func TestMaxBytesShrinksAnOldStore(t *testing.T) {
	st, path := openStore(t)
	clk := clock.NewFake(t0)
	tr := trace.New(trace.Options{MaxBytes: -1, Clock: clk})
	if err := tr.Attach(st); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		tr.Record(trace.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Type: "x", Fields: map[string]any{"pad": strings.Repeat("p", 500)}})
	}
	tr.Close()
	before, _ := storedBytes(t, st)
	if before < 1<<20 {
		t.Fatalf("only %d bytes stored", before)
	}
	fi, _ := os.Stat(path)
	capped := trace.New(trace.Options{MaxBytes: 256 << 10, Clock: clk})
	if err := capped.Attach(st); err != nil {
		t.Fatal(err)
	}
	capped.Flush()
	after, _ := storedBytes(t, st)
	capped.Close()
	if after > 256<<10 {
		t.Fatalf("%d bytes stored (file %d bytes) after starting with a cap of 256 KiB", after, fi.Size())
	}
}
