package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orion-agent/orion/client/controller"
)

// agentWriter is the response the agent sees, in its API's shape. Every
// method is safe to call from the loop and the keep-alive goroutine.
type agentWriter interface {
	// begin opens the response once the first upstream reply is good (a
	// stream commits its headers here, so earlier errors keep their
	// status); later rounds only update what it says about the model.
	begin(rd *round)
	// text is assistant text, sent at once when streaming.
	text(s string)
	// toolCalls are the agent's own calls, returned at the end of a turn.
	toolCalls(calls []controller.ToolCall)
	// end closes the response: the finish reason and the summed usage.
	end(finish string, usage map[string]int64)
	// fail answers with an error in the API's shape: with its status
	// before the response began, as an error event in the stream after.
	fail(status int, body []byte)
	// keepAlive writes a keep-alive if the stream was silent for d.
	keepAlive(d time.Duration)
	// endsLine reports whether the text so far ends a line (or is empty).
	endsLine() bool
	// hold(true) lets writes wait in the response's buffer until flush or
	// hold(false); the loop holds while it relays what the upstream sent
	// in one burst and flushes before any read of the upstream that could
	// wait, so nothing waits on the upstream. The first write of a burst
	// still goes out at once: a burst costs two flushes, not one per
	// delta, and delays no first byte.
	hold(on bool)
	flush()
}

// sse is the part of a response every API shares: headers, framing,
// flushing, keep-alives, errors, and when it last wrote. Each API's writer
// embeds it and adds only its own events.
type sse struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
	closed  bool
	// crlf ends the lines of an event with "\r\n" rather than "\n", as
	// the API's own server does.
	crlf bool
	// ping is the API's own keep-alive event; without one, a keep-alive
	// is an SSE comment, which every client skips.
	ping []byte
	// holding defers flushes (see agentWriter.hold); inBurst says the
	// burst's first write went out; dirty says that something written is
	// not flushed yet.
	holding bool
	inBurst bool
	dirty   bool
	last    time.Time
	// lastByte is the last byte of assistant text, for line breaks
	// before the proxy's own lines.
	lastByte byte
	// kept counts the text a response that is not streamed holds;
	// overflow says it went over maxResponseText.
	kept     int64
	overflow bool
}

// maxResponseText bounds the text a response that is not streamed holds
// until it is sent: far more than a model writes in a turn, far less than
// what a hostile upstream could send.
const maxResponseText = 16 << 20

// keep reports whether n more bytes of text fit a response that is not
// streamed.
func (s *sse) keep(n int) bool {
	if s.overflow || s.kept+int64(n) > maxResponseText {
		s.overflow = true
		return false
	}
	s.kept += int64(n)
	return true
}

// overflowJSON is the error a response that outgrew maxResponseText gets.
func overflowJSON(d dialect) []byte {
	return d.errorJSON("response_too_large", fmt.Sprintf(
		"orionctl proxy: the model's reply is over %d MiB, more than the proxy holds for a response that is not streamed; ask for \"stream\": true",
		maxResponseText>>20))
}

func (s *sse) commitLocked() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// writeLocked writes one event and flushes it, unless the loop holds
// flushes while it relays a burst (it flushes before it waits).
func (s *sse) writeLocked(b []byte) {
	if s.closed {
		return
	}
	s.commitLocked()
	_, _ = s.w.Write(b)
	s.dirty = true
	s.last = time.Now()
	if !s.holding || !s.inBurst {
		s.flushLocked()
		s.inBurst = s.holding
	}
}

func (s *sse) flushLocked() {
	if !s.dirty {
		return
	}
	s.dirty = false
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sse) hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding, s.inBurst = on, false
	if !on {
		s.flushLocked()
	}
}

// flush sends what was held; the next write starts a new burst.
func (s *sse) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	s.inBurst = false
}

// sseEvent frames one event: an "event:" line when the API names its
// events (name is not empty), the data line, and the blank line that ends
// the event.
func sseEvent(crlf bool, name string, data []byte) []byte {
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	b := make([]byte, 0, len("event: ")+len(name)+len("data: ")+len(data)+3*len(eol))
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, eol...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, eol...)
	return append(b, eol...)
}

// sendLocked writes one event of the stream (see sseEvent).
func (s *sse) sendLocked(name string, data []byte) {
	s.writeLocked(sseEvent(s.crlf, name, data))
}

// keepAlive writes a keep-alive if the stream was silent for d.
func (s *sse) keepAlive(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed || time.Since(s.last) < d {
		return
	}
	ev := s.ping
	if ev == nil {
		ev = []byte(": keep-alive\n\n")
		if s.crlf {
			ev = []byte(": keep-alive\r\n\r\n")
		}
	}
	s.writeLocked(ev)
	// The keep-alive is for now, burst or not.
	s.flushLocked()
}

// replyLocked answers a request that is not streamed, once, with the
// whole body.
func (s *sse) replyLocked(status int, body []byte) {
	writeJSON(s.w, status, body)
	s.closed = true
}

// failLocked answers with the error body and its status if the response
// has not begun, and reports whether it has, so that the caller writes the
// error as an event of the stream in its API's shape instead.
func (s *sse) failLocked(status int, body []byte) (inStream bool) {
	if s.closed {
		return false
	}
	if !s.started {
		s.started = true
		s.replyLocked(status, body)
		return false
	}
	return true
}

// streamErrorBody is body when it is already an error in the API's shape
// (an upstream's own, or one the proxy made), and otherwise an error of
// the given kind saying the status and what came: the SDKs raise an error
// for an event only when it has an "error" member.
func streamErrorBody(d dialect, kind string, status int, body []byte) []byte {
	if json.Valid(body) && strings.Contains(string(body), `"error"`) {
		return body
	}
	return d.errorJSON(kind, fmt.Sprintf("status %d: %s", status, body))
}

func (s *sse) noteText(t string) {
	if t != "" {
		s.lastByte = t[len(t)-1]
	}
}

func (s *sse) endsLine() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastByte == 0 || s.lastByte == '\n'
}

// lineBreak is the newline that puts the proxy's own line on a line of its
// own after the model's text.
func lineBreak(out agentWriter) string {
	if out.endsLine() {
		return ""
	}
	return "\n"
}

// writeError answers with an error in the API's shape.
func writeError(w http.ResponseWriter, d dialect, status int, kind, msg string) {
	writeJSON(w, status, d.errorJSON(kind, msg))
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// displayPath shows a target relative to the workspace root when it is
// inside it, as the model named it.
func displayPath(target, ws string) string {
	if ws == "" {
		return target
	}
	rel, err := filepath.Rel(ws, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return target
	}
	return rel
}

// fence wraps a file's text in a Markdown code fence longer than any run
// of backticks inside it, tagged with the file's extension.
func fence(path, content string) string {
	n := 3
	run := 0
	for i := 0; i < len(content); i++ {
		if content[i] == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	lang := strings.TrimPrefix(filepath.Ext(path), ".")
	if !strings.HasSuffix(content, "\n") && content != "" {
		content += "\n"
	}
	return f + lang + "\n" + content + f + "\n"
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
