package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// traceStatus is daemon.status's trace object, as a client reads it.
type traceStatus struct {
	Stored     uint64 `json:"stored"`
	Bytes      int64  `json:"bytes"`
	MaxBytes   int64  `json:"max_bytes"`
	Evicted    uint64 `json:"evicted"`
	Suppressed uint64 `json:"suppressed"`
}

func (r *rpc) traceStatus() traceStatus {
	r.t.Helper()
	st, ok := r.traceStatusOK()
	if !ok {
		r.t.Fatal("daemon.status has no trace object")
	}
	return st
}

// traceStatusOK is traceStatus for a daemon that may not report it.
func (r *rpc) traceStatusOK() (traceStatus, bool) {
	r.t.Helper()
	var st struct {
		Trace *traceStatus `json:"trace"`
	}
	r.must(protocol.MethodDaemonStatus, nil, &st)
	if st.Trace == nil {
		return traceStatus{}, false
	}
	return *st.Trace, true
}

// flood sends n requests on r's connection, up to 64 unanswered at a time,
// and counts the answers by error reason ("" for a result).
func (r *rpc) flood(n int, method func(i int) string, params any) map[string]int {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	reasons := map[string]int{}
	window := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range n {
		window <- struct{}{}
		w, err := r.conn.DispatchCall(ctx, method(i), params)
		if err != nil {
			r.t.Fatalf("request %d: %v", i, err)
		}
		wg.Go(func() {
			defer func() { <-window }()
			err := w.Wait(ctx, nil)
			je, _ := err.(*jsonrpc2.Error)
			if err != nil && je == nil {
				r.t.Errorf("request %d: %v", i, err)
			}
			mu.Lock()
			reasons[reason(je)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return reasons
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRejectedRequestsDoNotGrowTheTraceStore: 50,000 requests with 16 KB
// method names grew the store from 129 MiB to 1 GiB, each traced with its
// method and an error quoting it. Now each is refused (field_too_large),
// traced with the method cut to 64 bytes, and past 10 a second (bursts of
// 50) only counted in a requests.suppressed event a second. Here a few
// thousand such requests (fewer under the race detector, whose daemon
// decodes JSON slowly) add under 256 KiB of trace data, where they added
// 16 KiB each.
func TestRejectedRequestsDoNotGrowTheTraceStore(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	db := filepath.Join(d.StateDir, "orion.db")
	n := 3000
	if testdaemon.Race {
		n = 600
	}
	before, _ := r.traceStatusOK()
	sizeBefore := fileSize(t, db)
	long := strings.Repeat("m", 16<<10)
	start := time.Now()
	reasons := r.flood(n, func(i int) string { return fmt.Sprintf("%d.%s", i, long) }, struct{}{})
	elapsed := time.Since(start)
	if reasons["field_too_large"] != n {
		t.Errorf("answers by reason: %v, want %d field_too_large", reasons, n)
	}
	// The summary of what was held back is recorded within a second.
	var after traceStatus
	var summaries []protocol.TraceEvent
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		after, ok = r.traceStatusOK()
		var res protocol.TraceListResult
		r.must(protocol.MethodTraceList, protocol.TraceListParams{
			TraceFilter: protocol.TraceFilter{Types: []string{"requests.suppressed"}}, Limit: 1000}, &res)
		summaries = res.Events
		counted := uint64(0)
		for _, ev := range summaries {
			var f struct{ Events uint64 }
			json.Unmarshal(ev.Fields, &f)
			counted += f.Events
		}
		if ok && after.Suppressed > 0 && counted == after.Suppressed {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("suppressed %d, counted in summaries %d", after.Suppressed, counted)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	traced, tracedBytes := 0, 0
	for p := (protocol.TraceListParams{TraceFilter: protocol.TraceFilter{Types: []string{"request"}}, Limit: 1000}); ; {
		var res protocol.TraceListResult
		r.must(protocol.MethodTraceList, p, &res)
		for _, ev := range res.Events {
			if strings.Contains(ev.Method, "mmmm") {
				traced++
				tracedBytes += len(ev.Method) + len(ev.Fields)
			}
		}
		if !res.More {
			break
		}
		p.After = res.Next
	}
	t.Logf("%d rejected requests with 16 KiB methods in %v: %d traced (%d bytes of method and fields), %d suppressed in %d summaries; trace data %d -> %d bytes",
		n, elapsed.Round(time.Millisecond), traced, tracedBytes, after.Suppressed, len(summaries), before.Bytes, after.Bytes)
	// At most the burst plus the rate over the flood, with a second of
	// slack for the timing of the bucket; each under 2 KiB.
	if limit := 50 + int(10*(elapsed.Seconds()+1)); traced > limit || tracedBytes > 2<<10*traced {
		t.Errorf("%d rejected requests traced (%d bytes) in %v, over the limit of %d", traced, tracedBytes, elapsed, limit)
	}
	if grew := after.Bytes - before.Bytes; grew > 256<<10 {
		t.Errorf("trace data grew by %d bytes for %d rejected requests", grew, n)
	}
	d.Stop()
	sizeAfter := fileSize(t, db)
	t.Logf("orion.db %d -> %d bytes", sizeBefore, sizeAfter)
	if sizeAfter-sizeBefore > 4<<20 {
		t.Errorf("orion.db grew from %d to %d bytes", sizeBefore, sizeAfter)
	}
}

// TestTraceStoreStaysUnderMaxBytes: with --trace-max-bytes the stored
// events stay under the cap as requests keep coming, the oldest (a
// session's begin) go first, and the newest are kept.
func TestTraceStoreStaysUnderMaxBytes(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	d := testdaemon.Start(t, "--trace-max-bytes", fmt.Sprint(limit))
	r := dial(t, d)
	var b protocol.BeginResult
	r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/old.txt", Operation: protocol.OpCreate}, &b)
	// About 140 bytes of trace data each: 4 times the cap.
	const n = 2000
	before := r.traceStatus()
	if reasons := r.flood(n, func(int) string { return protocol.MethodSessionList }, nil); reasons[""] != n {
		t.Fatalf("answers: %v", reasons)
	}
	var after traceStatus
	deadline := time.Now().Add(10 * time.Second)
	for {
		if after = r.traceStatus(); after.Stored >= before.Stored+n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d events stored", after.Stored-before.Stored, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("after %d requests: %d bytes of trace data stored (cap %d), %d events evicted", n, after.Bytes, after.MaxBytes, after.Evicted)
	if after.MaxBytes != limit || after.Bytes > limit || after.Evicted == 0 {
		t.Fatalf("trace status %+v: want bytes under %d and the oldest evicted", after, limit)
	}
	var res protocol.TraceListResult
	r.must(protocol.MethodTraceList, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: b.SessionID}}, &res)
	if len(res.Events) != 0 {
		t.Fatalf("the session's begin, the oldest events, are still there: %d", len(res.Events))
	}
	r.must(protocol.MethodTraceList, protocol.TraceListParams{Limit: 1, Newest: true}, &res)
	if len(res.Events) != 1 || res.Events[0].Method != protocol.MethodDaemonStatus && res.Events[0].Method != protocol.MethodSessionList {
		t.Fatalf("the newest event: %+v", res.Events)
	}
}
