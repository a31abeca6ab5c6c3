package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// maxErrorBody bounds how much of an upstream error reply is read and
// relayed.
const maxErrorBody = 1 << 20

// round is one upstream response of the inner loop and what the loop
// makes of it.
type round struct {
	id, model string
	// text is everything the model wrote, session content included: the
	// next request repeats the conversation as the model said it.
	text strings.Builder
	// blocks are Anthropic thinking blocks, kept for the history.
	blocks []json.RawMessage
	// calls are the WritePlanTool_begin calls (the agent's own are held
	// apart and never shown to the model again).
	calls []controller.ToolCall
	// results answer calls; prompts (continue, idle, truncation, errors)
	// and summaries (files written) go back as the user's side.
	results   []toolResult
	prompts   []string
	summaries []string
	// finish is the controller's finish reason ("stop", "length", ...);
	// stopReason the provider's own where it has one.
	finish     string
	stopReason string
	usage      map[string]int64
	// streamErr is an error event inside the upstream stream.
	streamErr []byte
}

type toolResult struct{ id, content string }

// loop is one agent request's run of the session loop.
type loop struct {
	p      *Proxy
	d      dialect
	req    *agentRequest
	out    agentWriter
	ws     string
	rounds []*round
	cur    *round
	held   []controller.ToolCall
	usage  map[string]int64
	// ctrl waits for the controller dialled at the start (dial caches
	// the outcome).
	ctrl func() (*controller.Controller, error)
	dial *dialed
}

// dialed is the outcome of connecting the controller to oriond.
type dialed struct {
	ctrl *controller.Controller
	err  error
}

// serveLoop answers a chat request through the session loop. It returns
// false when the request carried WritePlanTool_begin itself and was passed
// through: that agent drives sessions on its own.
func (p *Proxy) serveLoop(w http.ResponseWriter, r *http.Request, d dialect) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, d, http.StatusRequestEntityTooLarge, "request_too_large",
				fmt.Sprintf("the request body is over %d MiB, the proxy's limit", MaxRequestBytes>>20))
			return true
		}
		writeError(w, d, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error())
		return true
	}
	req, err := d.prepare(body)
	if err != nil {
		writeError(w, d, http.StatusBadRequest, "invalid_request_error", err.Error())
		return true
	}
	if req.carries {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		p.pass[d.name()].ServeHTTP(w, r)
		return false
	}
	req.header = r.Header
	req.path = r.URL.Path
	req.query = r.URL.RawQuery
	ws := p.cfg.WorkspaceRoot
	if h := r.Header.Get(HeaderWorkspace); h != "" {
		ws = h
	}
	l := &loop{p: p, d: d, req: req, ws: ws, usage: map[string]int64{}}
	l.out = d.newWriter(w, req)
	l.run(r.Context())
	return true
}

func (l *loop) run(ctx context.Context) {
	// oriond is dialled while the request is encoded; the first upstream
	// request waits for it, so that no model request is paid for when the
	// daemon is down (a dial costs ~20 µs).
	ch := make(chan dialed, 1)
	go func() {
		ctrl, err := controller.New(ctx, controller.Options{
			Socket: l.p.cfg.Socket,
			Dial: func(ctx context.Context, o client.Options) (*client.Client, error) {
				return l.p.cfg.Dial(ctx, l.p.cfg.Socket, o)
			},
			WorkspaceRoot:  l.ws,
			IdleMS:         l.p.cfg.IdleMS,
			AutoFinalizeMS: l.p.cfg.AutoFinalizeMS,
			StreamText:     true,
			OnEvent:        l.event,
		})
		ch <- dialed{ctrl, err}
	}()
	l.ctrl = func() (*controller.Controller, error) {
		if l.dial == nil {
			d := <-ch
			if d.err != nil {
				d.err = fmt.Errorf("%v. Start the daemon, or send the header %s: 1 to skip write sessions", d.err, HeaderBypass)
			}
			l.dial = &d
		}
		return l.dial.ctrl, l.dial.err
	}
	defer func() {
		if ctrl, err := l.ctrl(); err == nil {
			ctrl.Close()
		}
	}()

	stop := l.keepAlive()
	defer stop()

	for n := 0; ; n++ {
		if n == l.p.cfg.MaxRounds {
			l.out.text(fmt.Sprintf("\n[orionctl proxy: stopped after %d model requests in one turn]\n", n))
			l.out.end(l.finishReason(l.cur), l.usage)
			return
		}
		rd := &round{usage: map[string]int64{}}
		l.cur = rd
		if !l.request(ctx, rd) {
			return
		}
		l.rounds = append(l.rounds, rd)
		for k, v := range rd.usage {
			l.usage[k] += v
		}
		if rd.streamErr != nil {
			l.out.fail(http.StatusBadGateway, rd.streamErr)
			return
		}
		switch {
		case len(rd.results) > 0 || len(rd.prompts) > 0:
			// A session is owed its content, or the model must hear
			// what went wrong.
		case len(l.held) > 0:
			// A mixed turn: the writes are done; the agent's calls now.
			l.out.toolCalls(l.held)
			l.out.end(l.finishReason(rd), l.usage)
			return
		case len(rd.summaries) > 0:
			// The model hears what was written, and may go on.
		default:
			if ctrl, err := l.ctrl(); err == nil && ctrl.Open() > 0 {
				// Nothing more to say to the model, yet a file is
				// unfinished: the daemon's auto-finalize keeps what
				// came, truncated and continuable.
				l.out.text(lineBreak(l.out) + "[orionctl proxy: a file was left unfinished; oriond keeps what arrived]\n")
			}
			l.out.end(l.finishReason(rd), l.usage)
			return
		}
	}
}

// request sends one upstream request and feeds its stream to the
// controller. False means the turn ended (an error went to the agent).
func (l *loop) request(ctx context.Context, rd *round) bool {
	body, err := l.d.upstreamBody(l.req, l.rounds)
	if err != nil {
		l.out.fail(http.StatusBadRequest, l.d.errorJSON("invalid_request_error", err.Error()))
		return false
	}
	// A model request is not sent when its writes could not land: it
	// costs the user tokens.
	ctrl, err := l.ctrl()
	if err != nil {
		l.out.fail(http.StatusServiceUnavailable, l.d.errorJSON("oriond_unreachable", "orionctl proxy: "+err.Error()))
		return false
	}
	u := l.p.upstreamURL(l.d, l.req.path)
	u.RawQuery = l.req.query
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		l.out.fail(http.StatusInternalServerError, l.d.errorJSON("api_error", err.Error()))
		return false
	}
	copyHeaders(hreq.Header, l.req.header)
	resp, err := l.p.cfg.HTTPClient.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		l.out.fail(http.StatusBadGateway, l.d.errorJSON("upstream_unreachable",
			fmt.Sprintf("orionctl proxy could not reach the %s upstream: %v", l.d.name(), redactURLError(err))))
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if !json.Valid(b) {
			b = l.d.errorJSON("upstream_error", fmt.Sprintf("the upstream answered %s: %s", resp.Status, bytes.TrimSpace(b)))
		}
		l.out.fail(resp.StatusCode, b)
		return false
	}
	l.out.begin(rd)
	feed := func(line string) error { return ctrl.Line(ctx, line) }
	// The deltas of one burst from the upstream go out in one flush
	// (the reader flushes before any read that could wait): a flush per
	// delta cost a write system call and a wake-up of the agent each.
	l.out.hold(true)
	err = l.d.read(ctx, resp.Body, rd, feed, l.out)
	l.out.hold(false)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		if ctx.Err() != nil {
			return false
		}
		var rerr *readError
		if !errors.As(err, &rerr) {
			// The daemon is gone for good (the controller already
			// reconnected as often as it would).
			l.out.fail(http.StatusServiceUnavailable, l.d.errorJSON("oriond_unreachable", "orionctl proxy: "+err.Error()))
			return false
		}
		l.p.log.Warn("upstream stream ended early", "api", l.d.name(), "err", err)
	}
	if err := ctrl.EndOfStream(ctx); err != nil {
		if ctx.Err() == nil {
			l.out.fail(http.StatusServiceUnavailable, l.d.errorJSON("oriond_unreachable", "orionctl proxy: "+err.Error()))
		}
		return false
	}
	return true
}

// readError is a failure reading the upstream stream (as opposed to the
// controller failing to reach the daemon).
type readError struct{ err error }

func (e *readError) Error() string { return "reading the upstream stream: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// event acts on one controller event, on the request's goroutine.
func (l *loop) event(e controller.Event) {
	rd := l.cur
	switch e.Type {
	case controller.EventText:
		l.out.text(e.Text)
	case controller.EventToolCall:
		l.held = append(l.held, *e.ToolCall)
	case controller.EventToolResult:
		rd.results = append(rd.results, toolResult{id: e.Message.ToolCallID, content: e.Message.Content})
	case controller.EventFinalized:
		l.out.text(l.wroteText(e.Result))
		rd.summaries = append(rd.summaries, "WritePlanTool_begin: the file is written: "+e.Text+
			". Do not write it again; go on with the task.")
	case controller.EventContinue, controller.EventIdle:
		if e.Message != nil {
			rd.prompts = append(rd.prompts, e.Message.Content)
		}
	case controller.EventTruncated, controller.EventError, controller.EventConflict:
		if e.Error != nil && e.Error.Reason == "stream_error" {
			rd.streamErr = l.d.errorJSON("upstream_error", e.Error.Message)
			return
		}
		if e.Text != "" {
			l.out.text(lineBreak(l.out) + "[" + termsafe.Text(e.Text) + "]\n")
		}
		if e.Message != nil && e.Message.Content != "" {
			rd.prompts = append(rd.prompts, e.Message.Content)
		}
	case controller.EventResponseEnd:
		for _, c := range e.ToolCalls {
			if c.Name == protocol.ToolName {
				rd.calls = append(rd.calls, c)
			}
		}
		rd.finish = e.FinishReason
	}
}

func (l *loop) finishReason(rd *round) string {
	if rd == nil {
		return "stop"
	}
	return rd.finish
}

// wroteText is what the agent sees of a written file.
func (l *loop) wroteText(r *protocol.FinalizeResult) string {
	shown := termsafe.String(displayPath(r.TargetFile, l.ws))
	s := lineBreak(l.out) + fmt.Sprintf("Wrote %s: %s, %s.\n", shown, textfmt.CountGrouped(r.Lines, "line", "lines"), sizeText(r.Bytes))
	if l.p.cfg.Echo == EchoContent {
		s += fence(shown, readWritten(r))
	}
	return s
}

// readWritten reads the file as written, for --echo content. The proxy
// runs as the daemon's user, so it reads the target itself; a file that
// changed since is said to have.
func readWritten(r *protocol.FinalizeResult) string {
	f, err := os.Open(r.TargetFile)
	if err != nil {
		return termsafe.Text(fmt.Sprintf("(could not read %s back: %v)\n", r.TargetFile, err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEcho+1))
	if err != nil {
		return termsafe.Text(fmt.Sprintf("(could not read %s back: %v)\n", r.TargetFile, err))
	}
	if len(b) > maxEcho {
		return fmt.Sprintf("(%s is over %d MiB; not echoed)\n", r.TargetFile, maxEcho>>20)
	}
	if sha := sha256hex(b); sha != r.FileSHA256 {
		return fmt.Sprintf("(%s changed on disk after the write; not echoed)\n", r.TargetFile)
	}
	return string(b)
}

const maxEcho = 4 << 20

// keepAlive sends keep-alives while the response is silent, until the
// returned func is called.
func (l *loop) keepAlive() func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(l.p.cfg.KeepAlive / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.out.keepAlive(l.p.cfg.KeepAlive)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// copyHeaders forwards the agent's headers (its API key among them)
// upstream, but not those that describe the agent's own body or
// connection, and not the proxy's.
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Accept-Encoding", "Connection", "Keep-Alive", "Proxy-Connection",
			"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host":
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
	dropOrionHeaders(dst)
	dst.Set("Content-Type", "application/json")
	dst.Set("Accept", "text/event-stream")
}
