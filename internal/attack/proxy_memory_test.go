package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// Peak resident memory (VmHWM) of `orionctl proxy` under the attacks of
// its memory finding, each on a proxy of its own. Each comment gives the
// peak measured on the 2-core dev box with the bounds in place, and before
// them (the same test with ORION_ATTACK_ORIONCTL pointing at an orionctl
// built from the commit before the bounds).
const (
	// 256 MiB of model text outside any session, stream: false. Measured
	// 80-93 MiB (the agent gets 502 response_too_large past 16 MiB of text);
	// before: 2,468 MiB (and a 256 MiB JSON answer).
	proxyTextUnstreamedBound = 160 << 20
	// The same with stream: true. Measured 34 MiB; before: 962 MiB.
	proxyTextStreamedBound = 96 << 20
	// A 256 MiB file inside a session. Measured 49-54 MiB; before: 2,026 MiB.
	proxySessionBound = 128 << 20
	// 24 concurrent 30 MiB request bodies, the upstream taking 2 s to
	// answer each. Measured 462-519 MiB (about four bodies served at a time,
	// each held once once encoded); before: 3,741 MiB.
	proxyBodiesBound = 640 << 20

	proxyFloodBytes = 256 << 20
	// floodDelta is one text delta of the flood: 32 KiB of text lines.
	floodDelta = 32 << 10
)

// orionctlUnderTest is the orionctl to attack: ORION_ATTACK_ORIONCTL when
// set (to measure another build), else one built now.
func orionctlUnderTest(t *testing.T) string {
	if p := os.Getenv("ORION_ATTACK_ORIONCTL"); p != "" {
		return p
	}
	return buildOrionctl(t)
}

// floodModel streams n bytes of text in OpenAI chunks: outside a session
// when inSession is false; else it calls WritePlanTool_begin first and
// streams the text as the file's content, then its end marker.
type floodModel struct {
	n         int64
	inSession bool
	delay     time.Duration
	requests  atomic.Int64
}

func (m *floodModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := m.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := w.(http.Flusher).Flush
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
	}
	text := func() {
		line := strings.Repeat("x", 63) + "\n"
		c, _ := json.Marshal(strings.Repeat(line, floodDelta/len(line)))
		delta := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":" + string(c) + "},\"finish_reason\":null}]}\n\n")
		for sent := int64(0); sent < m.n; sent += floodDelta {
			if _, err := w.Write(delta); err != nil {
				return
			}
		}
	}
	switch {
	case m.n == 0:
		chunk(`{"content":"ok"}`, "stop")
	case !m.inSession:
		text()
		chunk(`{}`, "stop")
	case n == 1:
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"WritePlanTool_begin","arguments":"{\"intent\":\"big\",\"target_file\":\"big.txt\",\"operation\":\"create\"}"}}]}`, "tool_calls")
	case n == 2:
		text()
		marker := endMarkerRE.FindString(string(body))
		chunk(`{"content":"`+marker+`\n"}`, "stop")
	default:
		chunk(`{"content":"done"}`, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush()
}

// proxyPeak runs attack against a proxy of its own and returns its
// VmHWM.
func proxyPeak(t *testing.T, bin string, d *testdaemon.Daemon, up http.Handler, attack func(addr string)) int64 {
	t.Helper()
	srv := httptest.NewServer(up)
	defer srv.Close()
	p := startProxy(t, bin, d, "--workspace-root", d.Root, "--openai-upstream", srv.URL+"/v1", "--anthropic-upstream", srv.URL)
	start := time.Now()
	attack(p.addr)
	_, hwm := rss(t, p.cmd.Process.Pid)
	t.Logf("proxy peak RSS %d MiB (%v)", hwm>>20, time.Since(start).Round(time.Millisecond))
	p.cmd.Process.Kill()
	return hwm
}

func chatBody(stream bool, content string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "m", "stream": stream,
		"messages": []any{map[string]string{"role": "user", "content": content}}})
	return b
}

// post sends a chat request and reads the whole answer; it returns the
// status and at most the first KiB of the answer.
func postChat(t *testing.T, addr string, body []byte) (int, string) {
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Errorf("posting: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(resp.Body, head)
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, string(head[:n])
}

// TestProxyMemoryBounded: the proxy held whole responses, histories and
// request bodies several times over, with no cap on how many at once.
func TestProxyMemoryBounded(t *testing.T) {
	if raceBuild {
		t.Skip("memory figures of a -race build mean nothing; run without -race")
	}
	bin := orionctlUnderTest(t)
	d := testdaemon.Start(t)

	t.Run("TextUnstreamed", func(t *testing.T) {
		peak := proxyPeak(t, bin, d, &floodModel{n: proxyFloodBytes}, func(addr string) {
			status, head := postChat(t, addr, chatBody(false, "talk"))
			t.Logf("answer: %d %.200s", status, head)
		})
		if peak > proxyTextUnstreamedBound {
			t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, proxyTextUnstreamedBound>>20)
		}
	})
	t.Run("TextStreamed", func(t *testing.T) {
		peak := proxyPeak(t, bin, d, &floodModel{n: proxyFloodBytes}, func(addr string) {
			status, _ := postChat(t, addr, chatBody(true, "talk"))
			if status != 200 {
				t.Errorf("status %d", status)
			}
		})
		if peak > proxyTextStreamedBound {
			t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, proxyTextStreamedBound>>20)
		}
	})
	t.Run("FileInSession", func(t *testing.T) {
		// Just under the daemon's default session limit (256 MiB), marker
		// and all.
		peak := proxyPeak(t, bin, d, &floodModel{n: proxyFloodBytes - 2*floodDelta, inSession: true}, func(addr string) {
			status, head := postChat(t, addr, chatBody(true, "write big.txt"))
			if status != 200 || !strings.Contains(head, "Wrote big.txt") {
				t.Errorf("answer: %d %.300s", status, head)
			}
		})
		if st, err := os.Stat(d.Root + "/big.txt"); err != nil || st.Size() < proxyFloodBytes-2*floodDelta {
			t.Errorf("big.txt was not written whole: %v", err)
		}
		if peak > proxySessionBound {
			t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, proxySessionBound>>20)
		}
	})
	t.Run("ConcurrentBodies", func(t *testing.T) {
		body := chatBody(false, strings.Repeat("y", 30<<20))
		var mu sync.Mutex
		statuses := map[int]int{}
		peak := proxyPeak(t, bin, d, &floodModel{delay: 2 * time.Second}, func(addr string) {
			var wg sync.WaitGroup
			for range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, _ := postChat(t, addr, body)
					mu.Lock()
					statuses[status]++
					mu.Unlock()
				}()
			}
			wg.Wait()
		})
		// Served in turn; one that waited too long is told to come back
		// (429 with Retry-After, which the SDKs honour).
		t.Logf("answers by status: %v", statuses)
		if statuses[200] < 4 || statuses[200]+statuses[429] != 24 {
			t.Errorf("answers by status %v: want each served (200) or told to retry (429), at least 4 served", statuses)
		}
		if peak > proxyBodiesBound {
			t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, proxyBodiesBound>>20)
		}
	})
}
