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
	// text is what the model wrote, session content included: the next
	// request repeats the conversation as the model said it. It is kept up
	// to maxHistoryText, more than a model writes in one response; what
	// is beyond (a file of many MiB streamed into a session, or a hostile
	// upstream) is counted in elided and said so, not held.
	text   strings.Builder
	elided int64
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

// maxHistoryText bounds the text of one round kept for the next request:
// 4 MiB is about a million tokens, beyond any model's output per response.
const maxHistoryText = 4 << 20

// addText keeps s for the history, up to maxHistoryText.
func (rd *round) addText(s string) {
	room := maxHistoryText - rd.text.Len()
	if len(s) > room {
		rd.elided += int64(len(s) - room)
		s = s[:room]
	}
	rd.text.WriteString(s)
}

// historyText is the round's text as the next request repeats it.
func (rd *round) historyText() string {
	if rd.elided == 0 {
		return rd.text.String()
	}
	return rd.text.String() + fmt.Sprintf("\n[orionctl proxy: %d more bytes of this reply are not repeated here]", rd.elided)
}

// loop is one agent request's run of the session loop.
type loop struct {
	p      *Proxy
	d      dialect
	req    *agentRequest
	out    agentWriter
	ws     string
	w      http.ResponseWriter
	rounds []*round
	cur    *round
	held   []controller.ToolCall
	usage  map[string]int64
	// targets names each session's file, for the log; refused holds the
	// begin calls refused in this response until their targets are known.
	targets map[string]string
	refused []refusedBegin
	// ctrl waits for the controller dialled at the start (dial caches
	// the outcome).
	ctrl func() (*controller.Controller, error)
	dial *dialed
	// handedBack: the model's answer asked for no tool; the agent hands
	// back to the person, and the turn ends.
	handedBack bool
}

type refusedBegin struct{ id, reason, msg string }

// dialed is the outcome of connecting the controller to oriond.
type dialed struct {
	ctrl *controller.Controller
	err  error
}

// serveLoop answers a chat request through the session loop. It returns
// false when the request was passed through instead: it carried
// WritePlanTool_begin itself (that agent drives sessions on its own), or
// oriond is down and Config.DaemonDown says to pass.
func (p *Proxy) serveLoop(w http.ResponseWriter, r *http.Request, d dialect) bool {
	// The body's size is held against the budget while the request is
	// served; a body of unknown length holds the most it may be.
	hold := p.cfg.MaxRequestBytes
	if r.ContentLength >= 0 && r.ContentLength < hold {
		hold = r.ContentLength
	}
	if r.ContentLength > p.cfg.MaxRequestBytes {
		p.tooLarge(w, r, d)
		return true
	}
	wait, cancel := context.WithTimeout(r.Context(), p.cfg.QueueWait)
	err := p.budget.acquire(wait, hold)
	cancel()
	if err != nil {
		if r.Context().Err() == nil {
			p.log.Warn("request refused: too many large bodies at once", "path", r.URL.Path, "bytes", hold)
			w.Header().Set("Retry-After", "5")
			writeError(w, d, http.StatusTooManyRequests, "rate_limit_error",
				"orionctl proxy holds as many large requests as it may at once; try again shortly")
		}
		return true
	}
	defer p.budget.release(hold)

	ws := p.cfg.WorkspaceRoot
	if h := r.Header.Get(HeaderWorkspace); h != "" {
		if p.cfg.FixedWorkspace {
			if err := below(p.cfg.WorkspaceRoot, h); err != nil {
				p.log.Warn("request refused: workspace header outside the workspace", "path", r.URL.Path, "workspace", p.cfg.WorkspaceRoot)
				w.Header().Set("X-Should-Retry", "false")
				writeError(w, d, http.StatusBadRequest, "invalid_request_error", err.Error())
				return true
			}
		}
		ws = h
	}
	if ws == "" {
		// Not the proxy's own directory: files would land where the proxy
		// was started (for a service, the home directory), not in the
		// agent's project.
		p.log.Warn("request refused: no workspace", "path", r.URL.Path)
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, d, http.StatusBadRequest, "invalid_request_error", NoWorkspaceMessage)
		return true
	}
	l := &loop{p: p, d: d, ws: ws, usage: map[string]int64{}, targets: map[string]string{}}
	// oriond is dialled while the request is read and encoded; the first
	// upstream request waits for it, so that no model request is paid
	// for when the daemon is down (a dial costs ~20 µs).
	l.startDial(r.Context(), agentName(r.Header.Get("User-Agent")))
	defer l.close()

	body, err := readBody(r.Body, r.ContentLength, p.cfg.MaxRequestBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			p.tooLarge(w, r, d)
			return true
		}
		writeError(w, d, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error())
		return true
	}
	agentic := p.turnStart(r.Context(), r, d, ws, body)
	if p.cfg.DaemonDown == DaemonDownPass {
		if _, err := l.ctrl(); err != nil {
			p.log.Warn("oriond is down: passing the request to the upstream unchanged; files are written by the agent's own tools",
				"path", r.URL.Path, "err", err)
			p.passBody(w, r, d, body)
			return false
		}
	}
	req, err := d.prepare(body)
	if err != nil {
		writeError(w, d, http.StatusBadRequest, "invalid_request_error", err.Error())
		return true
	}
	if req.carries {
		p.passBody(w, r, d, body)
		return false
	}
	body = nil // the prefix holds what is needed of it
	req.header = r.Header
	req.path = r.URL.Path
	req.query = r.URL.RawQuery
	if g, ok := d.(gemini); ok {
		// The model and the method are in the path, not the body.
		req.path, req.query, req.stream = g.streamPath(req.path, req.query)
	}
	l.req = req
	l.w = w
	l.out = d.newWriter(w, req)
	l.run(r.Context())
	p.turnDone(ws, agentic, l.handedBack)
	return true
}

// NoWorkspaceMessage answers a chat request that names no workspace on a
// proxy that has no default one.
const NoWorkspaceMessage = "orionctl proxy: this request names no workspace, so the proxy cannot tell where its files belong. " +
	"Send the header " + HeaderWorkspace + " with your project's directory (Claude Code: ANTHROPIC_CUSTOM_HEADERS=\"" + HeaderWorkspace + ": $PWD\"), " +
	"or run the agent as `orionctl exec -- AGENT`, or start the proxy with --workspace-root DIR"

func (p *Proxy) tooLarge(w http.ResponseWriter, r *http.Request, d dialect) {
	p.log.Warn("request refused: body too large", "path", r.URL.Path, "max_bytes", p.cfg.MaxRequestBytes)
	w.Header().Set("X-Should-Retry", "false")
	writeError(w, d, http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("the request body is over %d MiB, the proxy's limit (--max-request-bytes)", p.cfg.MaxRequestBytes>>20))
}

// passBody sends a request whose body was read already to the upstream
// unchanged.
func (p *Proxy) passBody(w http.ResponseWriter, r *http.Request, d dialect, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.pass[d.name()].ServeHTTP(w, r)
}

// readBody reads a body of at most limit bytes: one of a stated length
// into a buffer of exactly that size (io.ReadAll, or a bytes.Buffer that
// must keep 512 bytes free, would grow one by doubling, up to twice the
// memory); one of unknown length as it comes, up to limit.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if length >= 0 && length <= limit {
		// net/http ends a body at its Content-Length.
		b := make([]byte, length)
		if _, err := io.ReadFull(body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return b, nil
}

// startDial connects the controller in the background; ctrl waits for it.
func (l *loop) startDial(ctx context.Context, agent string) {
	ch := make(chan dialed, 1)
	go func() {
		ctrl, err := controller.New(ctx, controller.Options{
			Socket: l.p.cfg.Socket,
			Dial: func(ctx context.Context, o client.Options) (*client.Client, error) {
				return l.p.cfg.Dial(ctx, l.p.cfg.Socket, o)
			},
			WorkspaceRoot: l.ws,
			Agent:         agent,
			// Without a secret, nothing proves the caller may read the
			// files whose lines a failed edit would quote.
			WithholdFileText: l.p.cfg.Token == "",
			IdleMS:           l.p.cfg.IdleMS,
			AutoFinalizeMS:   l.p.cfg.AutoFinalizeMS,
			StreamText:       true,
			OnEvent:          l.event,
		})
		ch <- dialed{ctrl, err}
	}()
	l.ctrl = func() (*controller.Controller, error) {
		if l.dial == nil {
			d := <-ch
			if d.err != nil {
				d.err = fmt.Errorf("%v. Once oriond runs, try again; or send the header %s: 1 to skip write sessions", d.err, HeaderBypass)
			}
			l.dial = &d
		}
		return l.dial.ctrl, l.dial.err
	}
}

func (l *loop) close() {
	if ctrl, err := l.ctrl(); err == nil {
		ctrl.Close()
	}
}

func (l *loop) run(ctx context.Context) {
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
			l.handedBack = true
			l.out.end(l.finishReason(rd), l.usage)
			return
		}
	}
}

// request sends one upstream request and feeds its stream to the
// controller. False means the turn ended (an error went to the agent).
func (l *loop) request(ctx context.Context, rd *round) bool {
	body, size, err := upstreamBody(l.d, l.req, l.rounds)
	if err != nil {
		l.out.fail(http.StatusBadRequest, l.d.errorJSON("invalid_request_error", err.Error()))
		return false
	}
	// A model request is not sent when its writes could not land: it
	// costs the user tokens.
	ctrl, err := l.ctrl()
	if err != nil {
		l.p.log.Warn("oriond unreachable: request answered with an error", "path", l.req.path, "err", err)
		l.daemonDown("orionctl proxy: " + err.Error())
		return false
	}
	u := l.p.upstreamURL(l.d, l.req.path)
	u.RawQuery = l.req.query
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), body)
	if err != nil {
		l.out.fail(http.StatusInternalServerError, l.d.errorJSON("api_error", err.Error()))
		return false
	}
	hreq.ContentLength = size
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
			l.daemonDown("orionctl proxy: " + err.Error())
			return false
		}
		l.p.log.Warn("upstream stream ended early", "api", l.d.name(), "err", err)
	}
	if err := ctrl.EndOfStream(ctx); err != nil {
		if ctx.Err() == nil {
			l.daemonDown("orionctl proxy: " + err.Error())
		}
		return false
	}
	return true
}

// daemonDown answers that oriond cannot be reached, so that the agent
// shows it at once: 503 with x-should-retry: false, which the OpenAI and
// Anthropic SDKs and Claude Code honour instead of retrying a 5xx for
// minutes. (A stream already begun gets an error event instead.)
func (l *loop) daemonDown(msg string) {
	l.w.Header().Set("X-Should-Retry", "false")
	l.out.fail(http.StatusServiceUnavailable, l.d.errorJSON("oriond_unreachable", msg))
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
		var res struct {
			OK         bool   `json:"ok"`
			Error      string `json:"error"`
			Message    string `json:"message"`
			TargetFile string `json:"target_file"`
		}
		if json.Unmarshal([]byte(e.Message.Content), &res) == nil {
			if res.OK {
				l.targets[e.SessionID] = res.TargetFile
			} else {
				// Logged once the call's arguments (its target) are known,
				// at the end of the response.
				l.refused = append(l.refused, refusedBegin{id: e.Message.ToolCallID, reason: res.Error, msg: res.Message})
			}
		}
	case controller.EventFinalized:
		l.out.text(l.wroteText(e.Result))
		rd.summaries = append(rd.summaries, protocol.Fill(protocol.PromptWritten, "summary", e.Text))
	case controller.EventContinue, controller.EventIdle:
		if e.Message != nil {
			rd.prompts = append(rd.prompts, e.Message.Content)
		}
	case controller.EventTruncated, controller.EventError, controller.EventConflict:
		if e.Error != nil && e.Error.Reason == "stream_error" {
			rd.streamErr = l.d.errorJSON("upstream_error", e.Error.Message)
			return
		}
		if e.Type != controller.EventTruncated {
			// The event's text is the person's; its error message, the
			// model's, says what to send next.
			reason, msg := e.Type, e.Text
			if e.Error != nil {
				reason = e.Error.Reason
			}
			l.p.log.Warn("write failed", "reason", reason, "path", l.targets[e.SessionID], "session", e.SessionID,
				"workspace", l.ws, "detail", msg)
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
		for _, r := range l.refused {
			target := ""
			for _, c := range e.ToolCalls {
				if c.ID == r.id {
					var a struct {
						TargetFile string `json:"target_file"`
					}
					_ = json.Unmarshal([]byte(c.Arguments), &a)
					target = a.TargetFile
				}
			}
			l.p.log.Warn("write refused", "reason", r.reason, "path", target, "workspace", l.ws, "detail", withoutAdvice(r.msg))
		}
		l.refused = nil
		rd.finish = e.FinishReason
	}
}

// withoutAdvice drops from a refusal the advice written for the model
// (protocol.RefusalAdvice): the log line is for the person.
func withoutAdvice(msg string) string {
	msg = strings.TrimSpace(msg)
	for _, adv := range protocol.RefusalAdvice {
		if m, ok := strings.CutSuffix(msg, adv); ok {
			return strings.TrimSpace(m)
		}
	}
	return msg
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
	s := lineBreak(l.out) + fmt.Sprintf("Wrote %s: %s, %s.\n", shown, textfmt.CountGrouped(r.Lines, "line", "lines"), textfmt.Size(r.Bytes))
	if l.p.cfg.Echo == EchoContent {
		if l.p.cfg.Token == "" && r.Operation != protocol.OpCreate && r.Operation != protocol.OpOverwrite {
			// After an edit or an append the file holds text the request
			// did not send, which a caller without the secret may not be
			// allowed to read.
			return s + "(not echoed: this proxy has no secret, and the file holds text the request did not send)\n"
		}
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
		return fmt.Sprintf("(%s is over %d MiB; not echoed)\n", termsafe.String(r.TargetFile), maxEcho>>20)
	}
	if sha := sha256hex(b); sha != r.FileSHA256 {
		return fmt.Sprintf("(%s changed on disk after the write; not echoed)\n", termsafe.String(r.TargetFile))
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

// agentName is the agent a request comes from, by its User-Agent, for
// session listings: the agents that say who they are in it.
func agentName(ua string) string {
	ua = strings.ToLower(ua)
	for _, a := range []struct{ prefix, name string }{
		{"codex", "codex"}, {"geminicli", "gemini"}, {"claude-cli", "claude"}, {"qwen", "qwen"},
	} {
		if strings.HasPrefix(ua, a.prefix) {
			return a.name
		}
	}
	return ""
}
