package controller_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// appendLog is a proxy in front of the daemon that holds every
// session.append reply for delay, as a slower daemon or a remote socket
// would, and notes each append: when it came, its size, when its reply
// went back, and how many were unanswered at once.
type appendLog struct {
	ln     net.Listener
	daemon string
	delay  time.Duration

	mu          sync.Mutex
	appends     []loggedAppend
	open        map[string]int // request id -> index in appends
	inflight    int
	maxInflight int
	sentBytes   int
}

// covered waits until an append is out or the appends so far hold n bytes:
// a controller that holds text back while no append is out never gets
// there.
func (p *appendLog) covered(n int, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Microsecond) {
		p.mu.Lock()
		ok := p.inflight > 0 || p.sentBytes >= n
		p.mu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

type loggedAppend struct {
	sent, answered time.Time
	bytes          int
}

func newAppendLog(t *testing.T, daemon string, delay time.Duration) *appendLog {
	dir, err := paths.SocketTempDir("orion-proxy", "p.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &appendLog{ln: ln, daemon: daemon, delay: delay, open: map[string]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("unix", daemon)
			if err != nil {
				c.Close()
				continue
			}
			go p.pipe(c, d)
		}
	}()
	return p
}

func (p *appendLog) socket() string { return p.ln.Addr().String() }

func (p *appendLog) pipe(c, d net.Conn) {
	defer c.Close()
	defer d.Close()
	go func() {
		defer d.Close()
		br := bufio.NewReader(c)
		for {
			frame, body, err := readFrame(br)
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Chunk string `json:"chunk"`
				} `json:"params"`
			}
			json.Unmarshal(body, &req)
			if req.Method == "session.append" {
				p.mu.Lock()
				p.open[string(req.ID)] = len(p.appends)
				p.appends = append(p.appends, loggedAppend{sent: time.Now(), bytes: len(req.Params.Chunk)})
				p.inflight++
				p.maxInflight = max(p.maxInflight, p.inflight)
				p.sentBytes += len(req.Params.Chunk)
				p.mu.Unlock()
			}
			if _, err := d.Write(frame); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReader(d)
	for {
		frame, body, err := readFrame(br)
		if err != nil {
			return
		}
		var resp struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &resp)
		p.mu.Lock()
		i, isAppend := p.open[string(resp.ID)]
		p.mu.Unlock()
		if isAppend {
			time.Sleep(p.delay)
			p.mu.Lock()
			delete(p.open, string(resp.ID))
			p.appends[i].answered = time.Now()
			p.inflight--
			p.mu.Unlock()
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// TestTokenStreamCoalesces: a model streaming a token per delta (5,000
// deltas of about 4 bytes, fed as fast as the controller takes them) costs
// at most one append per round trip, never two at once, and no delta waits
// more than one round trip: it goes out at once when no append is out, and
// otherwise in the append after the one that is. Every byte lands, in
// order.
func TestTokenStreamCoalesces(t *testing.T) {
	d := testdaemon.Start(t)
	const delay = 2 * time.Millisecond
	proxy := newAppendLog(t, d.Socket, delay)

	deltas := make([]string, 5000)
	var want strings.Builder
	for i := range deltas {
		deltas[i] = fmt.Sprintf("%03d ", i%1000)
		if i%16 == 15 || i == len(deltas)-1 {
			deltas[i] = fmt.Sprintf("%03d\n", i%1000)
		}
		want.WriteString(deltas[i])
	}

	opts := harnessOptions(d)
	opts.ChunkBytes = 1 << 20 // only the round trip may bound an append here
	opts.FlushAfter = 0       // the default: send whenever no append is out
	opts.Dial = func(ctx context.Context, co client.Options) (*client.Client, error) {
		return client.Dial(ctx, proxy.socket(), co)
	}
	var events []controller.Event
	opts.OnEvent = func(e controller.Event) { events = append(events, e) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl, err := controller.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	begin := newRecorder()
	begin.start()
	begin.toolStart(0, "call_1", "WritePlanTool_begin")
	begin.toolArgs(0, `{"intent":"x","target_file":"tokens.txt","operation":"create"}`)
	begin.finish("tool_calls")
	if err := ctl.Run(ctx, strings.NewReader(begin.String())); err != nil {
		t.Fatal(err)
	}
	feed := func(content string) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content}}}})
		for _, line := range []string{"data: " + string(b), ""} {
			if err := ctl.Line(ctx, line); err != nil {
				t.Fatal(err)
			}
		}
	}
	// fed[k] is when delta k had been taken in, and how many bytes had.
	type mark struct {
		at    time.Time
		bytes int
	}
	fed := make([]mark, len(deltas))
	total := 0
	for k, delta := range deltas {
		feed(delta)
		total += len(delta)
		fed[k] = mark{time.Now(), total}
		// Nothing is out and the delta was not sent: it waits for the
		// next delta or the marker, however long the model takes.
		if !proxy.covered(total, 10*time.Second) {
			t.Fatalf("delta %d (byte %d) is held back with no append out", k, total)
		}
	}
	feed(ctl.Marker() + "\n")
	if err := ctl.Line(ctx, "data: [DONE]"); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(filepath.Join(d.Root, "tokens.txt"))
	if err != nil {
		t.Fatalf("%v; events %+v", err, events)
	}
	if string(got) != want.String() {
		t.Fatalf("the file differs from the deltas: %d bytes, want %d", len(got), want.Len())
	}

	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	appends := proxy.appends
	if proxy.maxInflight != 1 {
		t.Fatalf("%d appends were out at once; want one at a time", proxy.maxInflight)
	}
	// Round trips: how many sequential appends fit between the first
	// append and the last reply, at the shortest round trip seen.
	span := appends[len(appends)-1].answered.Sub(appends[0].sent)
	shortest := span
	for _, a := range appends {
		shortest = min(shortest, a.answered.Sub(a.sent))
	}
	roundTrips := int(span / shortest)
	t.Logf("%d deltas, %d appends, %d round trips of at least %v in %v", len(deltas), len(appends), roundTrips, shortest, span)
	if len(appends) > roundTrips+1 {
		t.Fatalf("%d appends in %d round trips; want at most one per round trip", len(appends), roundTrips)
	}
	// No delta waits past the next reply: the bytes taken in before
	// append j was answered are all in appends 0..j+1.
	sent, k := 0, 0
	for j, a := range appends {
		sent += a.bytes
		if j == 0 {
			continue
		}
		prev := appends[j-1].answered
		for k < len(fed) && fed[k].at.Before(prev) {
			k++
		}
		if k > 0 && fed[k-1].bytes > sent {
			t.Fatalf("append %d holds bytes up to %d, but %d had come before append %d was answered: a delta waited more than one round trip",
				j, sent, fed[k-1].bytes, j-1)
		}
	}
}
