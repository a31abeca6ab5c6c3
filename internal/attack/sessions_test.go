package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// beginMany begins sessions with 4 KiB intents over 8 connections until
// n are open or the daemon refuses one; it returns how many began and the
// first refusal.
func beginMany(t *testing.T, d *testdaemon.Daemon, n int) (int, *protocol.Error) {
	t.Helper()
	intent := strings.Repeat("i", protocol.MaxIntentBytes)
	var (
		begun   atomic.Int64
		next    atomic.Int64
		refusal atomic.Pointer[protocol.Error]
		wg      sync.WaitGroup
	)
	for range 8 {
		r := dial(t, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for refusal.Load() == nil {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				var b protocol.BeginResult
				je := r.call(protocol.MethodSessionBegin, protocol.BeginParams{Intent: intent,
					TargetFile: filepath.Join(d.Root, fmt.Sprintf("f%06d.txt", i)), Operation: protocol.OpCreate}, &b)
				if je != nil {
					var pe protocol.Error
					pe.Code, pe.Message = je.Code, je.Message
					if je.Data != nil {
						json.Unmarshal(*je.Data, &pe.Data)
					}
					refusal.CompareAndSwap(nil, &pe)
					return
				}
				begun.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(begun.Load()), refusal.Load()
}

// listAll follows session.list's cursor on a raw connection, checking
// that every reply stays under the page bounds; it returns the sessions
// and the largest reply's size.
func listAll(t *testing.T, d *testdaemon.Daemon, limit int) (map[string]bool, int) {
	t.Helper()
	c := dialRaw(t, d)
	seen := map[string]bool{}
	largest, cursor := 0, ""
	for page := 1; ; page++ {
		p, _ := json.Marshal(protocol.ListParams{Limit: limit, Cursor: cursor})
		c.send(frameOf(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session.list","params":%s}`, page, p)))
		r := c.mustReply()
		if r.Error != nil {
			t.Fatalf("session.list page %d: %v", page, r)
		}
		largest = max(largest, len(r.Result))
		if len(r.Result) > protocol.MaxListReplyBytes+64<<10 {
			t.Fatalf("session.list reply of %d bytes, over the bound of %d", len(r.Result), protocol.MaxListReplyBytes)
		}
		var res protocol.ListResult
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Sessions {
			if seen[s.SessionID] {
				t.Fatalf("session %s listed twice", s.SessionID)
			}
			seen[s.SessionID] = true
		}
		if res.NextCursor == "" {
			return seen, largest
		}
		cursor = res.NextCursor
	}
}

// TestManySessions: a client that opens sessions without end is refused
// at --max-sessions with too_many_sessions; session.list answers them in
// bounded pages that `orionctl sessions list` follows to the end. With
// ORION_ATTACK_SESSIONS=40000 it opens 40,000 sessions (caps raised) and
// logs the figures.
func TestManySessions(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("ORION_ATTACK_SESSIONS"))
	args := []string{"--max-client-sessions", "100000"}
	want := 4096 // the default --max-sessions
	if n > 0 {
		args = []string{"--max-client-sessions", strconv.Itoa(n), "--max-sessions", strconv.Itoa(n)}
		want = n
	} else {
		n = want + 100
	}
	if testdaemon.Race && n > want {
		t.Log("under the race detector: a slow run")
	}
	d := testdaemon.Start(t, args...)
	begun, refusal := beginMany(t, d, n)
	cur, peak := rss(t, d.PID())
	t.Logf("%d sessions with 4 KiB intents begun; daemon RSS %d MiB (peak %d MiB)", begun, cur>>20, peak>>20)
	if begun != want {
		t.Fatalf("%d sessions began, want %d (refusal: %v)", begun, want, refusal)
	}
	if n > want && (refusal == nil || refusal.Code != protocol.CodeTooManySessions ||
		refusal.Data.Reason != protocol.ReasonTooManySessions || refusal.Data.Limit != int64(want)) {
		t.Fatalf("past --max-sessions: %+v, want too_many_sessions with limit %d", refusal, want)
	}
	seen, largest := listAll(t, d, 0)
	cur, peak = rss(t, d.PID())
	t.Logf("session.list in default pages: %d sessions, largest reply %d KiB; daemon RSS %d MiB (peak %d MiB)",
		len(seen), largest>>10, cur>>20, peak>>20)
	if len(seen) != want {
		t.Fatalf("the pages listed %d sessions, want %d", len(seen), want)
	}
	// The CLI follows the cursor.
	cmd := exec.Command(testdaemon.Orionctl(t), "sessions", "list", "--json", "--socket", d.Socket)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("orionctl sessions list: %v\n%s", err, errOut.String())
	}
	var res protocol.ListResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Sessions) != want {
		t.Fatalf("orionctl sessions list --json: %d sessions, %v", len(res.Sessions), err)
	}
}

// TestClientSessionCap: one process at --max-client-sessions is refused
// while another process (the real orionctl) still writes.
func TestClientSessionCap(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t, "--max-client-sessions", "3")
	begun, refusal := beginMany(t, d, 10)
	if begun != 3 || refusal == nil || refusal.Data.Reason != protocol.ReasonTooManySessions || refusal.Data.Limit != 3 ||
		!strings.Contains(refusal.Message, "--max-client-sessions") {
		t.Fatalf("%d began, refusal %+v; want 3 and too_many_sessions naming --max-client-sessions", begun, refusal)
	}
	// A session begun as a connection's very first request counts too
	// (the daemon once learned a connection's client only after it could
	// already be read).
	for i := range 30 {
		var b protocol.BeginResult
		je := dial(t, d).call(protocol.MethodSessionBegin, protocol.BeginParams{
			TargetFile: filepath.Join(d.Root, fmt.Sprintf("fresh%d.txt", i)), Operation: protocol.OpCreate}, &b)
		if je == nil || reason(je) != protocol.ReasonTooManySessions {
			t.Fatalf("begin %d on a fresh connection of a client at its cap: %v", i, je)
		}
	}
	target := filepath.Join(d.Root, "other-client.txt")
	cmd := exec.Command(testdaemon.Orionctl(t), "write", "--socket", d.Socket, target)
	cmd.Stdin = strings.NewReader("another client still writes\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("orionctl write while another process is at its cap: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "another client still writes\n" {
		t.Fatalf("%q, %v", b, err)
	}
}
