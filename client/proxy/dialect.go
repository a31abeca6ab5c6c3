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
	"slices"
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
	// prepare decodes the agent's request body and encodes what every
	// round sends of it (agentRequest.prefix), so that the body itself
	// can be dropped.
	prepare(body []byte) (*agentRequest, error)
	// roundMessages are the messages the rounds so far add to the
	// conversation, encoded; upstreamBody puts them after the agent's.
	roundMessages(rounds []*round) ([]json.RawMessage, error)
	// read consumes one upstream stream, handing the controller an
	// OpenAI-compatible line at a time, and fills rd.
	read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error
	newWriter(w http.ResponseWriter, req *agentRequest) agentWriter
	// errorJSON is an error body in the API's shape.
	errorJSON(kind, msg string) []byte
}

// agentRequest is the agent's request as the proxy keeps it while the
// loop runs: what it needs to know, and the upstream request's encoded
// prefix (every member, the tool and the instruction added, and the
// agent's messages, the array left open). The agent's body is not kept:
// a request is held once in memory, not three times.
type agentRequest struct {
	prefix []byte
	// nmsgs is the number of messages in prefix.
	nmsgs int
	model string
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

// decoded is the agent's body, decoded for prepare.
type decoded struct {
	fields map[string]json.RawMessage
	tools  []json.RawMessage
}

// decodeRequest reads the members both APIs share. The members are
// slices of body, not copies: a request is held once while it is read.
func decodeRequest(body []byte, toolName func(json.RawMessage) string) (*agentRequest, *decoded, error) {
	req, dec := &agentRequest{}, &decoded{fields: map[string]json.RawMessage{}}
	body = bytes.TrimSpace(body)
	if !json.Valid(body) || len(body) == 0 || body[0] != '{' {
		var probe any
		err := json.Unmarshal(body, &probe)
		if err == nil {
			err = errors.New("not an object")
		}
		return nil, nil, fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	keys, vals := splitJSON(body)
	for i, k := range keys {
		var name string
		if err := json.Unmarshal(k, &name); err != nil {
			return nil, nil, fmt.Errorf("the request body is not a JSON object: %v", err)
		}
		dec.fields[name] = vals[i]
	}
	if m, ok := dec.fields["messages"]; ok && string(m) != "null" && m[0] != '[' {
		return nil, nil, fmt.Errorf("messages: want an array")
	}
	if t, ok := dec.fields["tools"]; ok && string(t) != "null" {
		if err := json.Unmarshal(t, &dec.tools); err != nil {
			return nil, nil, fmt.Errorf("tools: want an array: %v", err)
		}
	}
	for _, t := range dec.tools {
		if toolName(t) == "WritePlanTool_begin" {
			req.carries = true
		}
	}
	if s, ok := dec.fields["stream"]; ok {
		_ = json.Unmarshal(s, &req.stream)
	}
	if m, ok := dec.fields["model"]; ok {
		_ = json.Unmarshal(m, &req.model)
	}
	return req, dec, nil
}

// encodePrefix writes the upstream request's members, sorted, with
// "messages" last and left open: the agent's messages, and instr (when
// not nil) after the leading ones that lead says belong before it. The
// messages are copied one at a time, never decoded as a whole.
func encodePrefix(fields map[string]json.RawMessage, instr json.RawMessage, lead func(json.RawMessage) bool) ([]byte, int, error) {
	return encodePrefixAt(fields, "messages", instr, lead)
}

// encodePrefixAt is encodePrefix for an API whose conversation is the
// array under key (the Responses API's "input", Gemini's "contents").
func encodePrefixAt(fields map[string]json.RawMessage, key string, instr json.RawMessage, lead func(json.RawMessage) bool) ([]byte, int, error) {
	size := 64
	for k, v := range fields {
		size += len(k) + len(v) + 4
	}
	b := bytes.NewBuffer(make([]byte, 0, size+len(instr)))
	b.WriteByte('{')
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != key {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.Write(mustJSON(k))
		b.WriteByte(':')
		b.Write(fields[k])
		b.WriteByte(',')
	}
	b.Write(mustJSON(key))
	b.WriteString(`:[`)
	n := 0
	add := func(m json.RawMessage) {
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
		n++
	}
	placed := instr == nil
	if raw := fields[key]; len(raw) > 0 && string(raw) != "null" {
		_, elems := splitJSON(raw)
		for _, m := range elems {
			if !placed && !lead(m) {
				add(instr)
				placed = true
			}
			add(m)
		}
	}
	if !placed {
		add(instr)
	}
	return b.Bytes(), n, nil
}

// splitJSON returns the members of a valid JSON object (keys and values)
// or the elements of a valid JSON array (values only) as slices of raw,
// without decoding or copying them. raw must be valid JSON (json.Valid)
// starting with '{' or '['.
func splitJSON(raw []byte) (keys, vals [][]byte) {
	object := raw[0] == '{'
	i := 1
	for {
		i = skipSpace(raw, i)
		if raw[i] == '}' || raw[i] == ']' {
			return keys, vals
		}
		if object {
			end := valueEnd(raw, i)
			keys = append(keys, raw[i:end])
			i = skipSpace(raw, end) + 1 // the colon
			i = skipSpace(raw, i)
		}
		end := valueEnd(raw, i)
		vals = append(vals, raw[i:end])
		i = skipSpace(raw, end)
		if raw[i] == ',' {
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index just past the valid JSON value starting at i.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	return j
}

// stringEnd is the index just past the JSON string starting at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// upstreamBody is the request for the next round: the prefix, the rounds'
// messages, and the closing brackets, read in place rather than copied
// into one more buffer.
func upstreamBody(d dialect, req *agentRequest, rounds []*round) (io.Reader, int64, error) {
	msgs, err := d.roundMessages(rounds)
	if err != nil {
		return nil, 0, err
	}
	var tail bytes.Buffer
	for i, m := range msgs {
		if req.nmsgs > 0 || i > 0 {
			tail.WriteByte(',')
		}
		tail.Write(m)
	}
	tail.WriteString("]}")
	return io.MultiReader(bytes.NewReader(req.prefix), &tail), int64(len(req.prefix) + tail.Len()), nil
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

// eachData reads an upstream stream to its end and hands fn the payload
// of each "data:" line; it stops at a read error, when ctx ends, or at
// fn's error. The stream's end is no error: the controller decides
// whether the reply was cut off.
func eachData(ctx context.Context, body io.Reader, flush func(), fn func(data string) error) error {
	lr := newLineReader(body, flush)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if data, ok := sseData(line); ok {
			if err := fn(data); err != nil {
				return err
			}
		}
	}
}

// controllerFeed hands the controller the OpenAI-compatible stream a
// dialect's upstream stream is translated into.
type controllerFeed func(line string) error

// chunk feeds one chunk.
func (f controllerFeed) chunk(v any) error { return f("data: " + string(mustJSON(v))) }

// finish feeds the chunk that gives the reply's finish reason.
func (f controllerFeed) finish(reason string) error {
	return f.chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}}})
}

// done feeds the end of the stream.
func (f controllerFeed) done() error { return f("data: [DONE]") }

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
