// Package proxyload holds the memory attacks on `orionctl proxy`: a
// scripted upstream that floods the proxy with model text, and the agent
// requests that go with it. The attack suite asserts the proxy's peak RSS
// under each (internal/attack), and orionbench --proxy-memory reports it.
package proxyload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FloodBytes is the model text of the flood attacks: 256 MiB.
const FloodBytes = 256 << 20

// floodDelta is one text delta of a flood: 32 KiB of text lines.
const floodDelta = 32 << 10

// Attack is one memory attack: the upstream it needs and the agent's side.
type Attack struct {
	Name string
	// What says what it does, for a report.
	What string
	// Upstream is a fresh scripted upstream for one run.
	Upstream func() http.Handler
	// Run attacks the proxy at addr (host:port) whose workspace is root,
	// and says what the agent got, or what went wrong.
	Run func(addr, root string) (string, error)
}

// Attacks are the four attacks of the proxy's memory finding.
func Attacks() []Attack {
	return []Attack{
		{
			Name: "text-unstreamed", What: "256 MiB of model text outside a session, stream: false",
			Upstream: func() http.Handler { return &Model{N: FloodBytes} },
			Run: func(addr, _ string) (string, error) {
				status, head, err := PostChat(addr, ChatBody(false, "talk"))
				return fmt.Sprintf("%d %.120s", status, head), err
			},
		},
		{
			Name: "text-streamed", What: "256 MiB of model text outside a session, stream: true",
			Upstream: func() http.Handler { return &Model{N: FloodBytes} },
			Run: func(addr, _ string) (string, error) {
				status, _, err := PostChat(addr, ChatBody(true, "talk"))
				if err == nil && status != 200 {
					err = fmt.Errorf("status %d", status)
				}
				return fmt.Sprint(status), err
			},
		},
		{
			// Just under the daemon's default session limit (256 MiB),
			// marker and all.
			Name: "file-in-session", What: "a 256 MiB file inside a session",
			Upstream: func() http.Handler { return &Model{N: FloodBytes - 2*floodDelta, InSession: true} },
			Run: func(addr, root string) (string, error) {
				status, head, err := PostChat(addr, ChatBody(true, "write big.txt"))
				if err != nil {
					return "", err
				}
				if status != 200 || !strings.Contains(head, "Wrote big.txt") {
					return "", fmt.Errorf("answer %d %.300s", status, head)
				}
				st, err := os.Stat(filepath.Join(root, "big.txt"))
				if err != nil || st.Size() < FloodBytes-2*floodDelta {
					return "", fmt.Errorf("big.txt was not written whole: %v", err)
				}
				return fmt.Sprintf("wrote big.txt, %d MiB", st.Size()>>20), nil
			},
		},
		{
			Name: "concurrent-bodies", What: "24 concurrent 30 MiB request bodies, the upstream taking 2 s to answer each",
			Upstream: func() http.Handler { return &Model{Delay: 2 * time.Second} },
			Run: func(addr, _ string) (string, error) {
				body := ChatBody(false, strings.Repeat("y", 30<<20))
				var mu sync.Mutex
				statuses := map[int]int{}
				var wg sync.WaitGroup
				for range 24 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						status, _, _ := PostChat(addr, body)
						mu.Lock()
						statuses[status]++
						mu.Unlock()
					}()
				}
				wg.Wait()
				// Served in turn; one that waited too long is told to come
				// back (429 with Retry-After, which the SDKs honour).
				var err error
				if statuses[200] < 4 || statuses[200]+statuses[429] != 24 {
					err = fmt.Errorf("answers by status %v: want each served (200) or told to retry (429), at least 4 served", statuses)
				}
				return fmt.Sprintf("answers by status %v", statuses), err
			},
		},
	}
}

var endMarkerRE = regexp.MustCompile(`__END_WRITE_[0-9a-f]+__`)

// Model is an OpenAI-compatible upstream. With N zero it answers "ok";
// else it streams N bytes of text: outside a session, or, InSession, as
// the content of a file it begins with WritePlanTool_begin first (one
// conversation at a time), then the end marker. Delay holds each answer.
type Model struct {
	N         int64
	InSession bool
	Delay     time.Duration
	requests  atomic.Int64
}

func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := m.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	if m.Delay > 0 {
		time.Sleep(m.Delay)
	}
	w.Header().Set("Content-Type", "text/event-stream")
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
		for sent := int64(0); sent < m.N; sent += floodDelta {
			if _, err := w.Write(delta); err != nil {
				return
			}
		}
	}
	switch {
	case m.N == 0:
		chunk(`{"content":"ok"}`, "stop")
	case !m.InSession:
		text()
		chunk(`{}`, "stop")
	case n == 1:
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"WritePlanTool_begin","arguments":"{\"intent\":\"big\",\"target_file\":\"big.txt\",\"operation\":\"create\"}"}}]}`, "tool_calls")
	case n == 2:
		text()
		chunk(`{"content":"`+endMarkerRE.FindString(string(body))+`\n"}`, "stop")
	default:
		chunk(`{"content":"done"}`, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// ChatBody is a chat request with one user message.
func ChatBody(stream bool, content string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "m", "stream": stream,
		"messages": []any{map[string]string{"role": "user", "content": content}}})
	return b
}

// PostChat sends a chat request to the proxy at addr and reads the whole
// answer; it returns the status and at most its first KiB.
func PostChat(addr string, body []byte) (int, string, error) {
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(resp.Body, head)
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, string(head[:n]), err
}
