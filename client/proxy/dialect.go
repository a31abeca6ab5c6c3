package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/orion-agent/orion/protocol"
)

const (
	dialectOpenAI    = "openai"
	dialectAnthropic = "anthropic"
)

// instruction is what the proxy adds to the system prompt: when to use
// the tool it added, in the fewest words that make models use it.
const instruction = protocol.PromptSystem

// dialect is one API's shape: how its requests are read and extended, how
// its stream is fed to the controller, and how the agent's response and
// errors are written.
type dialect interface {
	name() string
	// prepare decodes the agent's request body.
	prepare(body []byte) (*agentRequest, error)
	// upstreamBody is the request for the next round: the agent's request
	// with the tool and the instruction added, streamed, and the rounds so
	// far appended to the conversation.
	upstreamBody(req *agentRequest, rounds []*round) ([]byte, error)
	// read consumes one upstream stream, handing the controller an
	// OpenAI-compatible line at a time, and fills rd.
	read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error
	newWriter(w http.ResponseWriter, req *agentRequest) agentWriter
	// errorJSON is an error body in the API's shape.
	errorJSON(kind, msg string) []byte
}

// agentRequest is the agent's request, kept as raw members so that what
// the proxy does not know passes upstream unchanged.
type agentRequest struct {
	fields   map[string]json.RawMessage
	messages []json.RawMessage
	tools    []json.RawMessage
	model    string
	// stream is whether the agent asked for a stream (upstream is always
	// streamed, so the loop can act as text arrives).
	stream bool
	// includeUsage: the agent asked for OpenAI's final usage chunk.
	includeUsage bool
	// carries: the request has WritePlanTool_begin already; the agent
	// runs sessions itself.
	carries bool

	header http.Header
	path   string
	query  string
}

// decodeRequest reads the members both APIs share.
func decodeRequest(body []byte, toolName func(json.RawMessage) string) (*agentRequest, error) {
	req := &agentRequest{}
	if err := json.Unmarshal(body, &req.fields); err != nil || req.fields == nil {
		return nil, fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	if m, ok := req.fields["messages"]; ok {
		if err := json.Unmarshal(m, &req.messages); err != nil {
			return nil, fmt.Errorf("messages: want an array: %v", err)
		}
	}
	if t, ok := req.fields["tools"]; ok && string(t) != "null" {
		if err := json.Unmarshal(t, &req.tools); err != nil {
			return nil, fmt.Errorf("tools: want an array: %v", err)
		}
	}
	for _, t := range req.tools {
		if toolName(t) == "WritePlanTool_begin" {
			req.carries = true
		}
	}
	if s, ok := req.fields["stream"]; ok {
		_ = json.Unmarshal(s, &req.stream)
	}
	if m, ok := req.fields["model"]; ok {
		_ = json.Unmarshal(m, &req.model)
	}
	return req, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the proxy's own values are marshalled here.
		return json.RawMessage("null")
	}
	return b
}

// maxLine bounds one line of an upstream stream; a tool call's arguments
// or a text delta never come near it.
const maxLine = 8 << 20

// lineReader reads lines without their line ending, refusing one over
// maxLine instead of growing without bound.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	// drain runs before a read that could wait for the upstream: the
	// agent's writer flushes what it held, so that nothing the proxy has
	// waits on the upstream's next bytes.
	drain func()
}

func newLineReader(r io.Reader, drain func()) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), drain: drain}
}

// lineBuffered reports whether a whole line is buffered already, so that
// the next ReadSlice will not read (and perhaps wait).
func (l *lineReader) lineBuffered() bool {
	n := l.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := l.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// next returns the next line; io.EOF at the end (a last line without a
// newline is returned first).
func (l *lineReader) next() (string, error) {
	l.buf = l.buf[:0]
	for {
		if l.drain != nil && !l.lineBuffered() {
			l.drain()
		}
		frag, err := l.br.ReadSlice('\n')
		l.buf = append(l.buf, frag...)
		if len(l.buf) > maxLine {
			return "", &readError{fmt.Errorf("a line of the upstream stream is over %d MiB", maxLine>>20)}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(l.buf) > 0 && errors.Is(err, io.EOF) {
				return strings.TrimRight(string(l.buf), "\r\n"), nil
			}
			if errors.Is(err, io.EOF) {
				return "", io.EOF
			}
			return "", &readError{err}
		}
		return string(bytes.TrimRight(l.buf, "\r\n")), nil
	}
}

// sseData returns the payload of a "data:" line.
func sseData(line string) (string, bool) {
	if !strings.HasPrefix(line, "data:") {
		return "", false
	}
	return strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "), true
}

// addUsage sets the numeric members of a usage object into u: providers
// report cumulative counts within a response, so later values replace
// earlier ones, and rounds are summed by the loop.
func addUsage(u map[string]int64, raw json.RawMessage) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			u[k] = int64(f)
		}
	}
}
