package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// writes records each Write it is given.
type writes struct{ calls [][]byte }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

// sendingCall makes c about to write the request of a Call with params, as
// Send makes it: the Call waiting, jsonrpc2 showing its request to OnSend.
func sendingCall(c *ClientCodec, method string, params []byte) *jsonrpc2.Request {
	k := c.NewCall()
	k.params = params
	c.calls[k.id] = k
	c.sending = &jsonrpc2.Request{Method: method, Notif: true, ID: jsonrpc2.ID{Num: k.id}}
	return c.sending
}

// TestClientWritesOneFrameInOneWrite: a Call's request, a chunk of the
// usual sizes, reaches the socket in one write, header and all, so that
// the daemon is woken once for it; a chunk past directPart is written from
// where it is, not copied.
func TestClientWritesOneFrameInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		// whole: the frame in one write; else the params in one of
		// their own.
		whole bool
	}{
		{"Small", 100, true},
		{"FourKiB", 4 << 10, true},
		{"Large", directPart + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClientCodec()
			params := []byte(`{"chunk":"` + strings.Repeat("x", tc.size) + `"}`)
			req := sendingCall(c, "session.append", params)
			var w writes
			if err := c.WriteObject(&w, req); err != nil {
				t.Fatal(err)
			}
			apart := false
			for _, c := range w.calls {
				apart = apart || bytes.Equal(c, params)
			}
			if tc.whole && len(w.calls) != 1 {
				t.Errorf("%d writes, want 1", len(w.calls))
			}
			if !tc.whole && !apart {
				t.Errorf("the params were copied into the frame, not written from where they are")
			}
			got := readReplies(t, bytes.Join(w.calls, nil))
			if len(got) != 1 || string(got[0].ID) != strconv.FormatUint(req.ID.Num, 10) {
				t.Fatalf("frames written: %v", got)
			}
			var sent struct {
				Params json.RawMessage `json:"params"`
			}
			body := bytes.Join(w.calls, nil)
			json.Unmarshal(body[bytes.Index(body, []byte("\r\n\r\n"))+4:], &sent)
			if string(sent.Params) != string(params) {
				t.Errorf("params sent are not the Call's (%d bytes, want %d)", len(sent.Params), len(params))
			}
		})
	}
}

// TestClientCallTakesItsResultRaw: a Call gets its result byte for byte as
// the daemon sent it, and jsonrpc2 never sees its reply; an error reply
// fails the call with its code and data; calls made through jsonrpc2, and
// notifications, are read as jsonrpc2 reads them, also between a Call's
// request and its reply.
func TestClientCallTakesItsResultRaw(t *testing.T) {
	forEachReader(t, testClientCallTakesItsResultRaw)
}

// forEachReader runs test with the codec on a stream of its own, where
// jsonrpc2's read loop reads every reply, and on the connection given to
// it (Conn), where a Call waiting alone reads its own.
func forEachReader(t *testing.T, test func(t *testing.T, stream func(*ClientCodec, net.Conn) net.Conn)) {
	t.Run("ReadLoop", func(t *testing.T) {
		test(t, func(_ *ClientCodec, conn net.Conn) net.Conn { return conn })
	})
	t.Run("CallReads", func(t *testing.T) {
		test(t, (*ClientCodec).Conn)
	})
}

func testClientCallTakesItsResultRaw(t *testing.T, stream func(*ClientCodec, net.Conn) net.Conn) {
	server, conn := net.Pipe()
	defer server.Close()
	codec := NewClientCodec()
	notified := make(chan string, 1)
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(stream(codec, conn), codec),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			notified <- req.Method + " " + string(*req.Params)
			return nil, nil
		}), codec.OnSend())
	defer rpc.Close()
	// The daemon's side: each request read is answered by answer.
	sent := make(chan map[string]json.RawMessage, 8)
	answer := func(req map[string]json.RawMessage) string {
		switch string(req["method"]) {
		case `"ok"`:
			return `{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":{"seq": 7 ,"stage":"streaming"}}`
		case `"fail"`:
			return `{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32001,"message":"no","data":{"reason":"seq_gap"}}}`
		}
		return `{"jsonrpc":"2.0","method":"session.idle","params":{"session_id":"s"}}` + "\x00" +
			`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"plain"}`
	}
	go func() {
		r := bufio.NewReader(server)
		for {
			var req map[string]json.RawMessage
			if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req); err != nil {
				return
			}
			sent <- req
			for _, body := range strings.Split(answer(req), "\x00") {
				if _, err := io.WriteString(server, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
					return
				}
			}
		}
	}()
	ctx := context.Background()

	k := codec.NewCall()
	if err := k.Send(ctx, rpc, "ok", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if req := <-sent; string(req["params"]) != `{"a":1}` || string(req["id"]) != strconv.FormatUint(k.id, 10) {
		t.Errorf("request sent as %v", req)
	}
	if got, err := k.Wait(ctx); err != nil || string(got) != `{"seq": 7 ,"stage":"streaming"}` {
		t.Errorf("result = %s, %v; want it as sent", got, err)
	}
	k.Release()

	// The Call released is the next one, and its id with it.
	k2 := codec.NewCall()
	if k2 != k {
		t.Errorf("a released Call was not reused")
	}
	if err := k2.Send(ctx, rpc, "fail", nil); err != nil {
		t.Fatal(err)
	}
	if req := <-sent; req["params"] != nil {
		t.Errorf("a call without params sent %s", req["params"])
	}
	_, err := k2.Wait(ctx)
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32001 || rpcErr.Data == nil || !strings.Contains(string(*rpcErr.Data), "seq_gap") {
		t.Errorf("error reply = %v, want code -32001 with its data", err)
	}
	k2.Release()

	var plain string
	if err := rpc.Call(ctx, "other", nil, &plain); err != nil || plain != "plain" {
		t.Errorf("a call through jsonrpc2 = %q, %v", plain, err)
	}
	<-sent
	if got := <-notified; got != `session.idle {"session_id":"s"}` {
		t.Errorf("notification = %s", got)
	}
	codec.mu.Lock()
	left := len(codec.calls)
	codec.mu.Unlock()
	if left != 0 {
		t.Errorf("%d calls held after their replies", left)
	}
}

// TestClientCallEnds: a Call waiting when the connection ends fails with
// jsonrpc2.ErrClosed, and so does one sent after; a Call whose context
// ends stops waiting, its id is never reused, and its late reply is
// dropped, not given to the call after it.
func TestClientCallEnds(t *testing.T) {
	forEachReader(t, testClientCallEnds)
}

func testClientCallEnds(t *testing.T, stream func(*ClientCodec, net.Conn) net.Conn) {
	server, conn := net.Pipe()
	codec := NewClientCodec()
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(stream(codec, conn), codec),
		jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }),
		codec.OnSend())
	defer rpc.Close()
	r := bufio.NewReader(server)
	read := func() map[string]json.RawMessage {
		t.Helper()
		var req map[string]json.RawMessage
		if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	reply := func(id json.RawMessage, result string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`
		if _, err := io.WriteString(server, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	late := codec.NewCall()
	errc := make(chan error, 1)
	go func() { errc <- late.Send(ctx, rpc, "slow", nil) }()
	lateReq := read()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := late.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after its context ended: %v", err)
	}
	late.Release()
	next := codec.NewCall()
	if next == late {
		t.Fatal("a Call given up on was reused: its late reply would answer the next")
	}
	go func() { errc <- next.Send(context.Background(), rpc, "quick", nil) }()
	nextReq := read()
	<-errc
	reply(lateReq["id"], `"late"`)
	reply(nextReq["id"], `"next"`)
	if got, err := next.Wait(context.Background()); err != nil || string(got) != `"next"` {
		t.Fatalf("the call after one given up on got %s, %v", got, err)
	}
	next.Release()

	// A call released unanswered is given up on too.
	unanswered := codec.NewCall()
	go func() { errc <- unanswered.Send(context.Background(), rpc, "unanswered", nil) }()
	unansweredReq := read()
	<-errc
	unanswered.Release()
	if next := codec.NewCall(); next == unanswered {
		t.Fatal("a Call released before its reply was reused")
	} else {
		next.Release()
	}
	reply(unansweredReq["id"], `"dropped"`)

	waiting := codec.NewCall()
	go func() { errc <- waiting.Send(context.Background(), rpc, "never", nil) }()
	read()
	<-errc
	server.Close()
	if _, err := waiting.Wait(context.Background()); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("Wait when the connection ended: %v, want jsonrpc2.ErrClosed", err)
	}
	waiting.Release()
	<-rpc.DisconnectNotify()
	after := codec.NewCall()
	if err := after.Send(context.Background(), rpc, "after", nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("Send after the end: %v, want jsonrpc2.ErrClosed", err)
	}
	after.Release()
}

// TestClientEncodesWhatJSONRPC2Would: a request encoded from what OnSend
// showed reads as the one jsonrpc2 would marshal, held params put in.
func TestClientEncodesWhatJSONRPC2Would(t *testing.T) {
	c := NewClientCodec()
	call := *sendingCall(c, "session.append", []byte(`{"chunk":"a\"<b>"}`))
	for _, tc := range []struct {
		name string
		req  jsonrpc2.Request
		want string
	}{
		{"Call", call, `{"id":` + strconv.FormatUint(call.ID.Num, 10) + `,"jsonrpc":"2.0","method":"session.append","params":{"chunk":"a\"<b>"}}`},
		{"Params", jsonrpc2.Request{Method: "m\"é", ID: jsonrpc2.ID{Num: 0}, Params: ptr(json.RawMessage(`[1,{"x":null}]`))},
			`{"id":0,"jsonrpc":"2.0","method":"m\"é","params":[1,{"x":null}]}`},
		{"NoParams", jsonrpc2.Request{Method: "daemon.status", ID: jsonrpc2.ID{Num: 3}}, `{"id":3,"jsonrpc":"2.0","method":"daemon.status"}`},
		{"Notification", jsonrpc2.Request{Method: "$/cancelRequest", Notif: true, Params: ptr(json.RawMessage(`{"id":3}`))},
			`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			c.sending = &tc.req
			if err := c.WriteObject(&w, &tc.req); err != nil {
				t.Fatal(err)
			}
			frame := bytes.Join(w.calls, nil)
			var got, want any
			if err := json.Unmarshal(frame[bytes.Index(frame, []byte("\r\n\r\n"))+4:], &got); err != nil {
				t.Fatalf("%s: %v", frame, err)
			}
			json.Unmarshal([]byte(tc.want), &want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("sent %s, want %s", frame, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
