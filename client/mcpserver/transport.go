package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// The SDK's own stdio transport reads a tool call's arguments over and
// over: encoding/json's Decoder scans the line, the SDK tries it as a
// batch (its depth check scans it whole before the parse fails), decodes
// it as a message (the depth check and segmentio's decoder), decodes the
// params (both again) and looks into them for _meta (once more); then the
// tool decodes the arguments itself. For write_file with 64 KiB of
// content that was about 0.8 ms of CPU per call, most of the server's own
// cost. This transport reads each line once with jsontext, keeps the
// arguments of a tools/call aside and hands the SDK the message with a
// small placeholder in their place; the tool takes the arguments back
// (Server.arguments) and decodes them once. Everything else is the SDK's:
// the messages are its jsonrpc types, decoded and encoded by its own
// functions.

// argsKey is the placeholder's only member: {"_orion_args":"<key>"}.
const argsKey = "_orion_args"

// maxStashed and maxStashedBytes bound the arguments held for calls not
// yet answered: a host cancelling calls whose answers never come cannot
// grow them further (the oldest are let go; their calls then see the
// placeholder, which no tool takes for arguments).
const (
	maxStashed      = 64
	maxStashedBytes = 64 << 20
)

// argStash holds the arguments of calls in progress, by placeholder key.
type argStash struct {
	prefix string
	mu     sync.Mutex
	args   map[string][]byte
	order  []string
	bytes  int
}

func newArgStash() *argStash {
	// A key a client could guess would let its arguments name another
	// call's: the prefix is random per process.
	return &argStash{prefix: "orion-args-" + uuid.NewString() + "-", args: map[string][]byte{}}
}

func (s *argStash) put(key string, args []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.order) > 0 && (len(s.order) >= maxStashed || s.bytes+len(args) > maxStashedBytes) {
		s.bytes -= len(s.args[s.order[0]])
		delete(s.args, s.order[0])
		s.order = s.order[1:]
	}
	s.args[key] = args
	s.order = append(s.order, key)
	s.bytes += len(args)
}

func (s *argStash) get(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.args[key]
	return a, ok
}

func (s *argStash) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.args[key]
	if !ok {
		return
	}
	s.bytes -= len(a)
	delete(s.args, key)
	for i, k := range s.order {
		if k == key {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// arguments are a call's arguments: taken back from the transport when it
// left a placeholder, else as the SDK passed them. A call the transport
// could not read, being too large, is an error saying so.
func (s *Server) arguments(tool string, raw []byte) ([]byte, error) {
	if !bytes.HasPrefix(raw, []byte(`{"`+argsKey+`":"`+s.stash.prefix)) {
		return raw, nil
	}
	var ph struct {
		Key string `json:"_orion_args"`
	}
	if jsonv2.Unmarshal(raw, &ph) != nil {
		return raw, nil
	}
	if rest, ok := strings.CutPrefix(ph.Key, s.stash.prefix+tooLargePrefix); ok {
		size, _, _ := strings.Cut(rest, "-")
		n, _ := strconv.ParseInt(size, 10, 64)
		return nil, &argError{protocol.ReasonMessageTooLarge, protocol.Fill(protocol.PromptMCPMessageTooLarge, "tool", tool,
			"size", textfmt.Size(n), "limit", textfmt.Size(int64(s.maxMessage.Load())), "lines", fmt.Sprint(ChunkAdviceLines))}
	}
	if args, ok := s.stash.get(ph.Key); ok {
		return args, nil
	}
	return raw, nil
}

// Transport returns an MCP transport on r and w (newline-delimited JSON,
// as the SDK's stdio transport) that sets tool arguments aside for this
// server, so that they are parsed once. maxMessage bounds one message: a
// longer one is answered with an error and skipped, never held.
func (s *Server) Transport(r io.Reader, w io.Writer, maxMessage int) mcp.Transport {
	s.maxMessage.Store(int64(maxMessage))
	return &transport{r: r, w: w, max: maxMessage, stash: s.stash, log: s.log}
}

type transport struct {
	r     io.Reader
	w     io.Writer
	max   int
	stash *argStash
	log   *slog.Logger
}

// Connect implements mcp.Transport.
func (t *transport) Connect(context.Context) (mcp.Connection, error) {
	c := &conn{w: t.w, stash: t.stash, log: t.log, max: t.max, incoming: make(chan lineOrErr), closed: make(chan struct{}),
		drainFor: drainTimeout}
	go c.readLines(bufio.NewReaderSize(t.r, 64<<10), t.max)
	return c, nil
}

// lineOrErr is what the reading goroutine passes on: a line, a message
// it made in place of one too large, or the error that ended reading.
type lineOrErr struct {
	line []byte
	msg  jsonrpc.Message
	err  error
}

type conn struct {
	w     io.Writer
	wmu   sync.Mutex
	stash *argStash
	log   *slog.Logger
	max   int

	incoming  chan lineOrErr
	closed    chan struct{}
	closeOnce sync.Once

	// pending are the ids (as JSON text) of the requests handed to the
	// SDK and not answered yet; answered is signalled as each is.
	pmu      sync.Mutex
	pending  map[string]bool
	answered chan struct{}
	drainFor time.Duration
}

// drainTimeout bounds how long the server goes on answering the requests
// it has read once its input ends. The SDK stops writing answers as soon as
// Read reports the end, so a host that pipes a request and closes stdin
// (printf ... | orionctl mcp) would get nothing; a handler waiting for what
// only the host could send (its answer to a request of ours) must not
// keep the process alive for ever either.
const drainTimeout = 30 * time.Second

// handedOver notes a request Read returns to the SDK, which will answer it.
func (c *conn) handedOver(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return // a notification: nothing to answer
	}
	id, err := marshalID(req.ID)
	if err != nil {
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		c.pending = map[string]bool{}
	}
	c.pending[id] = true
}

// answer notes that the request id (JSON text) was answered.
func (c *conn) answer(id string) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if !c.pending[id] {
		return
	}
	delete(c.pending, id)
	if c.answered == nil {
		c.answered = make(chan struct{}, 1)
	}
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// drain waits, once the input has ended, until every request handed to
// the SDK is answered, for at most drainFor.
func (c *conn) drain(ctx context.Context) {
	c.pmu.Lock()
	if c.answered == nil {
		c.answered = make(chan struct{}, 1)
	}
	answered := c.answered
	c.pmu.Unlock()
	timer := time.NewTimer(c.drainFor)
	defer timer.Stop()
	for {
		c.pmu.Lock()
		n := len(c.pending)
		c.pmu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-answered:
		case <-timer.C:
			c.log.Warn("the host closed its input; exiting with requests unanswered", "requests", n, "waited", c.drainFor)
			return
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// readLines reads lines on its own goroutine, so that Close unblocks Read
// (a read of stdin cannot be interrupted).
func (c *conn) readLines(r *bufio.Reader, max int) {
	for {
		line, over, err := readLine(r, max)
		var v lineOrErr
		switch {
		case over != nil:
			msg := c.tooLarge(over.result())
			if msg == nil {
				if err != nil {
					return
				}
				continue
			}
			v.msg = msg
		case len(bytes.TrimSpace(line)) == 0 && err == nil:
			continue
		default:
			v.line, v.err = line, err
		}
		select {
		case c.incoming <- v:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line of at most max bytes. A longer line is read to
// its end through a skimmer and not kept: over is that skimmer.
func readLine(r *bufio.Reader, max int) (line []byte, over *skimmer, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if over == nil && len(line)+len(frag) > max {
			over = &skimmer{}
			over.feed(line)
			line = nil
		}
		if over != nil {
			over.feed(frag)
		} else {
			line = append(line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if over != nil {
			over.endLiteral()
			if err == io.EOF {
				err = nil
			}
			return nil, over, err
		}
		if err == io.EOF && len(line) > 0 {
			return line, nil, nil
		}
		return line, nil, err
	}
}

// tooLarge answers a message over the bound. A tool call becomes a call
// of its tool whose arguments say so, for the tool to answer as it
// answers any other mistake (the model reads it and can send the content
// in chunks); any other request, or a message whose method and id cannot
// be found, gets a JSON-RPC error; a notification or a response is only
// logged.
func (c *conn) tooLarge(m skimmed) jsonrpc.Message {
	c.log.Warn("skipped an MCP message over the size limit", "bytes", m.size, "limit", c.max, "method", m.method, "id", m.id)
	if m.method == "tools/call" && m.id != "" && m.name != "" {
		key := c.stash.prefix + tooLargePrefix + strconv.FormatInt(m.size, 10) + "-" + m.id
		ph, _ := jsontext.AppendQuote(nil, key)
		name, _ := jsontext.AppendQuote(nil, m.name)
		msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + m.id + `,"method":"tools/call","params":{"name":` +
			string(name) + `,"arguments":{"` + argsKey + `":` + string(ph) + `}}}`))
		if err == nil {
			return msg
		}
	}
	if m.method != "" && m.id == "" || m.method == "" && m.id != "" {
		// A notification, or a response (JSON-RPC answers neither).
		return nil
	}
	c.writeError(m.id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is %s, over the %s one message to this server may carry; it was not read",
		textfmt.Size(m.size), textfmt.Size(int64(c.max))))
	return nil
}

// tooLargePrefix follows the stash's prefix in the placeholder of a call
// too large to read: the size and the id follow it.
const tooLargePrefix = "too-large-"

// writeError answers the request whose id is the JSON text id ("": one
// whose id could not be read, answered with null as JSON-RPC asks).
func (c *conn) writeError(id string, code int64, message string) {
	if id == "" {
		id = "null"
	}
	msg, _ := jsontext.AppendQuote(nil, message)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, msg)
}

// Read implements mcp.Connection. A line that is not a message is
// answered with a parse error and skipped: one bad line from a host does
// not end every tool for the rest of its session.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case v := <-c.incoming:
			if v.msg != nil {
				c.handedOver(v.msg)
				return v.msg, nil
			}
			if v.err != nil {
				// The SDK stops answering once told the input ended:
				// answer what it was given first.
				c.drain(ctx)
				return nil, v.err
			}
			msg, err := c.decode(v.line)
			if err == nil {
				c.handedOver(msg)
				return msg, nil
			}
			m := skim(v.line)
			c.log.Warn("skipped a line that is not an MCP message", "bytes", len(v.line), "id", m.id, "err", err)
			if m.method == "" && m.id != "" {
				continue // a response of the host's, which JSON-RPC does not answer
			}
			code := int64(jsonrpc.CodeParseError)
			if jsontext.Value(bytes.TrimSpace(v.line)).IsValid() {
				code = jsonrpc.CodeInvalidRequest
			}
			c.writeError(m.id, code, err.Error())
		}
	}
}

// decode reads one message, setting a tools/call's arguments aside.
func (c *conn) decode(line []byte) (jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		// Batches left the protocol in 2025-06-18; no host sends them.
		return nil, fmt.Errorf("JSON-RPC batches are not supported")
	}
	m, err := scanMessage(line)
	if err != nil {
		return nil, fmt.Errorf("reading an MCP message: %w", err)
	}
	if m.method == "tools/call" && m.argsEnd > m.argsStart && m.id != "" {
		key := c.stash.prefix + m.id
		ph, _ := jsontext.AppendQuote(nil, key)
		small := make([]byte, 0, len(line)-(m.argsEnd-m.argsStart)+len(ph)+20)
		small = append(small, line[:m.argsStart]...)
		small = append(small, `{"`+argsKey+`":`...)
		small = append(small, ph...)
		small = append(small, '}')
		small = append(small, line[m.argsEnd:]...)
		// Not a copy: the line is this message's own (readLine makes
		// each), and the arguments are nearly all of it.
		c.stash.put(key, line[m.argsStart:m.argsEnd:m.argsEnd])
		line = small
	}
	return jsonrpc.DecodeMessage(line)
}

// scanned is what one pass over a message found.
type scanned struct {
	method string
	// id is the request's id as its JSON text, "" for none.
	id                 string
	argsStart, argsEnd int
}

// scanMessage walks a message once: its method, its id and where
// params.arguments lies. The walk also checks that the line is one JSON
// object.
func scanMessage(line []byte) (scanned, error) {
	var m scanned
	// As lenient as the SDK's own decoding (encoding/json).
	dec := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil {
		return m, err
	} else if tok.Kind() != '{' {
		return m, fmt.Errorf("a message is a JSON object, not %s", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return m, err
		}
		switch name.String() {
		case "method":
			v, err := dec.ReadToken()
			if err != nil {
				return m, err
			}
			m.method = v.String()
		case "id":
			v, err := dec.ReadValue()
			if err != nil {
				return m, err
			}
			m.id = string(v)
		case "params":
			if dec.PeekKind() != '{' {
				if err := dec.SkipValue(); err != nil {
					return m, err
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return m, err
			}
			for dec.PeekKind() != '}' {
				pname, err := dec.ReadToken()
				if err != nil {
					return m, err
				}
				if pname.String() != "arguments" {
					if err := dec.SkipValue(); err != nil {
						return m, err
					}
					continue
				}
				v, err := dec.ReadValue()
				if err != nil {
					return m, err
				}
				m.argsEnd = int(dec.InputOffset())
				m.argsStart = m.argsEnd - len(v)
			}
			if _, err := dec.ReadToken(); err != nil {
				return m, err
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return m, err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return m, err
	}
	return m, nil
}

// Write implements mcp.Connection. The answer to a call lets go of its
// arguments.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	answered := ""
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		if raw, err := marshalID(resp.ID); err == nil {
			c.stash.drop(c.stash.prefix + raw)
			answered = raw
		}
	}
	c.wmu.Lock()
	_, err = c.w.Write(append(data, '\n'))
	c.wmu.Unlock()
	if answered != "" {
		// Once written: the process may exit right after.
		c.answer(answered)
	}
	return err
}

// marshalID is an id as its JSON text, as scanMessage keeps it.
func marshalID(id jsonrpc.ID) (string, error) {
	switch v := id.Raw().(type) {
	case string:
		b, err := jsontext.AppendQuote(nil, v)
		return string(b), err
	case int64:
		return fmt.Sprint(v), nil
	default:
		return "", fmt.Errorf("id %v", v)
	}
}

// Close implements mcp.Connection.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *conn) SessionID() string { return "" }
