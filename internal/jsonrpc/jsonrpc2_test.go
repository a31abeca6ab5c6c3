package jsonrpc

// Each test here pins one behaviour of github.com/sourcegraph/jsonrpc2 that
// this package or its users rely on, through a real jsonrpc2.Conn: an
// upgrade that changes one fails here, named, instead of in production.
// The list is in doc.go.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// scriptedStream is an ObjectStream that hands the Conn the given messages,
// as ServerStream does (JSON unmarshalled into the value ReadObject is
// given), and keeps what the Conn writes as the JSON it marshals to.
type scriptedStream struct {
	in      chan string
	reads   chan struct{}
	mu      sync.Mutex
	written []json.RawMessage
	wrote   chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newScripted() *scriptedStream {
	return &scriptedStream{in: make(chan string, 16), reads: make(chan struct{}, 16),
		wrote: make(chan struct{}, 16), closed: make(chan struct{})}
}

func (s *scriptedStream) ReadObject(v any) error {
	s.reads <- struct{}{}
	select {
	case msg, ok := <-s.in:
		if !ok {
			return io.EOF
		}
		return json.Unmarshal([]byte(msg), v)
	case <-s.closed:
		return io.EOF
	}
}

func (s *scriptedStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.written = append(s.written, b)
	s.mu.Unlock()
	s.wrote <- struct{}{}
	return nil
}

func (s *scriptedStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *scriptedStream) last(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	select {
	case <-s.wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("the Conn wrote nothing")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.written[len(s.written)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// What ReadObject hands the Conn for each request, the placeholder (an
// empty method, nothing else), reaches the handler as a Request with no
// params, taken for a notification; and a reply with an id jsonrpc2 never
// saw is written all the same: the stream keeps the request and its id.
func TestJSONRPC2DecodesThePlaceholder(t *testing.T) {
	s := newScripted()
	got := make(chan *jsonrpc2.Request, 2)
	conn := jsonrpc2.NewConn(context.Background(), s, handlerFunc(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) {
		got <- r
	}))
	defer conn.Close()
	s.in <- string(placeholder)
	r := <-got
	if !r.Notif || r.Method != "" || r.Params != nil || r.Meta != nil || len(r.ExtraFields) != 0 {
		t.Fatalf("request %+v (params %v)", r, r.Params)
	}
	resp := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 7}}
	resp.SetResult(true)
	if err := conn.SendResponse(context.Background(), resp); err != nil {
		t.Fatal(err)
	}
	if m := s.last(t); string(m["id"]) != "7" || string(m["result"]) != "true" {
		t.Fatalf("reply %v", m)
	}
}

// The handler runs on the read loop: requests reach it one at a time in the
// order read, and the next ReadObject waits until it returns. The daemon
// fixes each request's place in its session's queue there.
func TestJSONRPC2HandlesOnTheReadLoop(t *testing.T) {
	s := newScripted()
	release := make(chan struct{})
	var order []uint64
	var mu sync.Mutex
	conn := jsonrpc2.NewConn(context.Background(), s, handlerFunc(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) {
		mu.Lock()
		order = append(order, r.ID.Num)
		mu.Unlock()
		if r.ID.Num == 1 {
			<-release
		}
	}))
	defer conn.Close()
	s.in <- `{"jsonrpc":"2.0","id":1,"method":"a"}`
	s.in <- `{"jsonrpc":"2.0","id":2,"method":"b"}`
	<-s.reads // the read that returns request 1, then handled
	select {
	case <-s.reads:
		t.Fatal("ReadObject was called again while the handler ran")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-s.reads
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Fatalf("handled %v, want [1 2]", order)
	}
}

// Reply and ReplyWithError write one object whose JSON is a response: the
// request's id as a number, and a result, or an error with code, message
// and data. ServerStream reads exactly these members to put back the id
// the client sent.
func TestJSONRPC2RepliesAsAResponseObject(t *testing.T) {
	s := newScripted()
	conn := jsonrpc2.NewConn(context.Background(), s, handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	defer conn.Close()
	id := jsonrpc2.ID{Num: 42}
	if err := conn.Reply(context.Background(), id, map[string]int{"seq": 3}); err != nil {
		t.Fatal(err)
	}
	m := s.last(t)
	if string(m["id"]) != "42" || string(m["result"]) != `{"seq":3}` || m["error"] != nil || m["method"] != nil {
		t.Fatalf("reply %v", m)
	}
	e := &jsonrpc2.Error{Code: -32001, Message: "no"}
	e.SetError(map[string]string{"reason": "session_not_found"})
	if err := conn.ReplyWithError(context.Background(), id, e); err != nil {
		t.Fatal(err)
	}
	m = s.last(t)
	var got struct {
		Code    int64             `json:"code"`
		Message string            `json:"message"`
		Data    map[string]string `json:"data"`
	}
	if err := json.Unmarshal(m["error"], &got); err != nil || string(m["id"]) != "42" || m["result"] != nil ||
		got.Code != -32001 || got.Message != "no" || got.Data["reason"] != "session_not_found" {
		t.Fatalf("error reply %v (%v)", m, err)
	}
}

// Notify writes an object with the method and params and no id, which
// ServerStream passes through as it is (a response has an id).
func TestJSONRPC2NotifiesWithoutID(t *testing.T) {
	s := newScripted()
	conn := jsonrpc2.NewConn(context.Background(), s, handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	defer conn.Close()
	if err := conn.Notify(context.Background(), "session.idle", map[string]string{"session_id": "s"}); err != nil {
		t.Fatal(err)
	}
	m := s.last(t)
	if _, hasID := m["id"]; hasID || string(m["method"]) != `"session.idle"` || string(m["params"]) != `{"session_id":"s"}` {
		t.Fatalf("notification %v", m)
	}
}

// OnSend shows each message, typed, right before the WriteObject that
// writes it, and no other message's WriteObject comes in between, however
// many are sent at once: ServerStream keeps the message OnSend showed and
// writes it in WriteObject, without marshalling what it is given.
func TestJSONRPC2ShowsEachMessageBeforeWritingIt(t *testing.T) {
	s := newScripted()
	var mu sync.Mutex
	var events []string
	conn := jsonrpc2.NewConn(context.Background(), &orderedStream{scriptedStream: s, mu: &mu, events: &events},
		handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}),
		jsonrpc2.OnSend(func(req *jsonrpc2.Request, resp *jsonrpc2.Response) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp != nil && resp.Result != nil:
				events = append(events, "shown "+string(*resp.Result))
			case resp != nil:
				events = append(events, "shown error "+resp.Error.Message)
			case req != nil && req.Notif:
				events = append(events, "shown "+req.Method+" "+string(*req.Params))
			}
		}))
	defer conn.Close()
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 3 {
			case 0:
				err = conn.Reply(context.Background(), jsonrpc2.ID{Num: uint64(i)}, i)
			case 1:
				err = conn.ReplyWithError(context.Background(), jsonrpc2.ID{Num: uint64(i)}, &jsonrpc2.Error{Code: 1, Message: fmt.Sprint(i)})
			default:
				err = conn.Notify(context.Background(), "n", i)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2*n {
		t.Fatalf("%d events for %d messages: %q", len(events), n, events)
	}
	for i := 0; i < len(events); i += 2 {
		shown, written := events[i], events[i+1]
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimPrefix(written, "written ")), &m); err != nil {
			t.Fatalf("event %d: %q", i+1, written)
		}
		var want string
		switch {
		case m["result"] != nil:
			want = "shown " + string(m["result"])
		case m["error"] != nil:
			var e jsonrpc2.Error
			json.Unmarshal(m["error"], &e)
			want = "shown error " + e.Message
		default:
			var method string
			json.Unmarshal(m["method"], &method)
			want = "shown " + method + " " + string(m["params"])
		}
		if shown != want {
			t.Fatalf("events %d and %d: %q then %q: what was shown is not what was written next", i, i+1, shown, written)
		}
	}
}

// orderedStream records each WriteObject among the events OnSend records.
type orderedStream struct {
	*scriptedStream
	mu     *sync.Mutex
	events *[]string
}

func (o *orderedStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	o.mu.Lock()
	*o.events = append(*o.events, "written "+string(b))
	o.mu.Unlock()
	return nil
}

// A ReadObject error ends the Conn: DisconnectNotify is closed, the
// stream closed, and a reply after that fails with ErrClosed, which the
// daemon's handler does not log as a failure.
func TestJSONRPC2ReadErrorEndsTheConn(t *testing.T) {
	s := newScripted()
	conn := jsonrpc2.NewConn(context.Background(), s, handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	close(s.in)
	select {
	case <-conn.DisconnectNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("a read error did not end the Conn")
	}
	// jsonrpc2 closes the stream right after DisconnectNotify, not before.
	select {
	case <-s.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was not closed")
	}
	if err := conn.Reply(context.Background(), jsonrpc2.ID{Num: 1}, "x"); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("reply after the end: %v, want ErrClosed", err)
	}
}

// A client Call marshals a json.RawMessage params verbatim as the value of
// "params", gives the request a numeric id, and completes when a response with that id
// arrives, through VSCodeObjectCodec's reading of frames as WriteFrame
// writes them; an error response comes back as a *jsonrpc2.Error with its
// data.
func TestJSONRPC2ClientCall(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	codec := NewClientCodec()
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(client, codec),
		handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	defer conn.Close()
	params := json.RawMessage(`{"chunk":"x"}`)

	done := make(chan error, 1)
	var result map[string]int
	go func() { done <- conn.Call(context.Background(), "session.append", params, &result) }()
	r := bufio.NewReader(server)
	length, err := readHeader(r, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body, err := readBody(r, length)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if string(req["params"]) != `{"chunk":"x"}` || string(req["method"]) != `"session.append"` || string(req["jsonrpc"]) != `"2.0"` {
		t.Fatalf("request %s", body)
	}
	var id uint64
	if err := json.Unmarshal(req["id"], &id); err != nil {
		t.Fatalf("the request id %s is not a number: %v", req["id"], err)
	}
	// The daemon's reply, as ServerStream writes it.
	if err := WriteFrame(server, []byte(`{"jsonrpc":"2.0","id":`+string(req["id"])+`,"result":{"seq":1}}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || result["seq"] != 1 {
		t.Fatalf("call: %v, %v", result, err)
	}

	go func() { done <- conn.Call(context.Background(), "session.get", map[string]string{}, nil) }()
	length, _ = readHeader(r, 1<<20)
	body, _ = readBody(r, length)
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	reply, _ := EncodeErrorReply(req["id"], nil)
	reply = []byte(strings.Replace(string(reply), `"error":null`, `"error":{"code":-32001,"message":"gone","data":{"reason":"session_not_found"}}`, 1))
	if err := WriteFrame(server, reply); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32001 || rpcErr.Data == nil || !strings.Contains(string(*rpcErr.Data), "session_not_found") {
		t.Fatalf("error reply: %v", err)
	}
}

// ServerStream through a real Conn, with its OnSend and without: a
// client's odd id (negative, fraction, string) comes back byte for byte on
// results and errors, notifications go out as sent, the params reach the
// handler through the stream (Take), never through jsonrpc2.
func TestServerStreamThroughJSONRPC2(t *testing.T) {
	for _, onSend := range []bool{true, false} {
		t.Run(fmt.Sprintf("OnSend=%v", onSend), func(t *testing.T) {
			server, client := net.Pipe()
			defer client.Close()
			stream := NewServerStream(server, Limits{MaxMessage: 1 << 20}, nil)
			var opts []jsonrpc2.ConnOpt
			if onSend {
				opts = append(opts, stream.OnSend())
			}
			seen := make(chan string, 4)
			conn := jsonrpc2.NewConn(context.Background(), stream, handlerFunc(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
				in, _ := stream.Take()
				p := in.Params.JSON
				if r.Params != nil {
					p = []byte("jsonrpc2 held params")
				}
				seen <- string(p)
				switch in.Method {
				case "fail":
					go c.ReplyWithError(ctx, in.RPCID(), &jsonrpc2.Error{Code: -32001, Message: "no"})
				default:
					go func() {
						c.Notify(ctx, "note", map[string]int{"n": 1})
						c.Reply(ctx, in.RPCID(), map[string]string{"method": in.Method})
					}()
				}
			}), opts...)
			defer conn.Close()
			r := bufio.NewReader(client)
			next := func() string {
				t.Helper()
				length, err := readHeader(r, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				body, err := readBody(r, length)
				if err != nil {
					t.Fatal(err)
				}
				return string(body)
			}
			for _, id := range []string{`-1`, `1.5`, `"a\"b"`, `18446744073709551616`} {
				req := `{"jsonrpc":"2.0","id":` + id + `,"method":"m","params":{"x":[1,2]}}`
				go WriteFrame(client, []byte(req))
				if got, want := next(), `{"jsonrpc":"2.0","method":"note","params":{"n":1}}`; got != want {
					t.Fatalf("notification %s, want %s", got, want)
				}
				if got, want := next(), `{"jsonrpc":"2.0","id":`+id+`,"result":{"method":"m"}}`; got != want {
					t.Fatalf("reply %s, want %s", got, want)
				}
				if p := <-seen; p != `{"x":[1,2]}` {
					t.Fatalf("the handler got params %q", p)
				}
			}
			go WriteFrame(client, []byte(`{"jsonrpc":"2.0","id":"e","method":"fail"}`))
			if got, want := next(), `{"jsonrpc":"2.0","id":"e","error":{"code":-32001,"message":"no"}}`; got != want {
				t.Fatalf("error reply %s, want %s", got, want)
			}
			<-seen
		})
	}
}

// ServerStream hands a real Conn the placeholder decoded once, then copies
// of that message: each request still reaches the Handler, one at a time,
// as a Request (the same *Request each time, which jsonrpc2 passes on as
// it is), and the handler takes the request itself from the stream. What
// the stream does per request costs the Conn no decoding: nothing beyond
// the message it reads into (BenchmarkRequestRead).
func TestServerStreamHandsJSONRPC2OneMessage(t *testing.T) {
	const n = 3
	var in strings.Builder
	for i := range n {
		in.WriteString(frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m%d","params":[%d]}`, 10+i, i, i)))
	}
	stream := NewServerStream(&pipeConn{in: strings.NewReader(in.String())}, Limits{MaxMessage: 1 << 20}, nil)
	type seen struct {
		req *jsonrpc2.Request
		in  Request
		ok  bool
	}
	got := make(chan seen, n)
	conn := jsonrpc2.NewConn(context.Background(), stream, handlerFunc(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) {
		in, ok := stream.Take()
		got <- seen{r, in, ok}
	}))
	defer conn.Close()
	var first *jsonrpc2.Request
	for i := range n {
		var s seen
		select {
		case s = <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("request %d never reached the handler", i)
		}
		if s.req == nil || !s.req.Notif || s.req.Method != "" || s.req.Params != nil {
			t.Fatalf("request %d reached the handler as %+v", i, s.req)
		}
		if i == 0 {
			first = s.req
		} else if s.req != first {
			t.Errorf("request %d reached the handler as another *Request than the first", i)
		}
		if !s.ok || s.in.Method != fmt.Sprintf("m%d", i) || string(s.in.Params.JSON) != fmt.Sprintf("[%d]", i) {
			t.Fatalf("request %d: the handler took %+v (%v)", i, s.in, s.ok)
		}
	}
}
