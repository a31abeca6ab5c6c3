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

// TestSplice: held params take the place of their placeholder as the value
// of "params", wherever jsonrpc2 puts that member; a placeholder anywhere
// else fails the send instead of sending a request without its params.
func TestSplice(t *testing.T) {
	c := NewClientCodec()
	placeholder, release := c.Hold([]byte(`{"chunk":"x"}`))
	defer release()
	p := string(placeholder)
	tests := []struct {
		name, in, want string
	}{
		{"ParamsLast", `{"id":1,"jsonrpc":"2.0","method":"m","params":` + p + `}`,
			`{"id":1,"jsonrpc":"2.0","method":"m","params":{"chunk":"x"}}`},
		{"ParamsFirst", `{"params":` + p + `,"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`,
			`{"params":{"chunk":"x"},"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`},
		{"Spaced", `{ "id" : 1 , "params" : ` + p + ` }`, `{"id":1,"params":{"chunk":"x"}}`},
		{"Misplaced", `{"id":1,"jsonrpc":"2.0","method":"m","meta":` + p + `}`, ""},
		{"NotJSON", `{"id":1,"params":` + p, ""},
		// Other requests, whatever their strings, pass untouched.
		{"Other", `{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`,
			`{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := c.splice([]byte(tc.in))
			out := bytes.Join(parts, nil)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("splice = %s, want an error", out)
				}
				return
			}
			if err != nil || string(out) != tc.want {
				t.Fatalf("splice = %s, %v; want %s", out, err, tc.want)
			}
		})
	}
	release()
	if n := c.Held(); n != 0 {
		t.Fatalf("%d params held after release", n)
	}
}

// writes records each Write it is given.
type writes struct{ calls [][]byte }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

// TestClientWritesOneFrameInOneWrite: a request with held params, a chunk
// of the usual sizes, reaches the socket in one write, header and all, so
// that the daemon is woken once for it; a chunk past directPart is written
// from where it is, not copied.
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
			placeholder, release := c.Hold(params)
			defer release()
			req := &jsonrpc2.Request{Method: "session.append", ID: jsonrpc2.ID{Num: 3}}
			raw := json.RawMessage(placeholder)
			req.Params = &raw
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
			if len(got) != 1 || string(got[0].ID) != "3" {
				t.Fatalf("frames written: %v", got)
			}
			var sent struct {
				Params json.RawMessage `json:"params"`
			}
			body := bytes.Join(w.calls, nil)
			json.Unmarshal(body[bytes.Index(body, []byte("\r\n\r\n"))+4:], &sent)
			if string(sent.Params) != string(params) {
				t.Errorf("params sent are not the ones held (%d bytes, want %d)", len(sent.Params), len(params))
			}
		})
	}
}

// TestClientCallTakesItsResultRaw: a call made through Expect gets its
// result byte for byte as the daemon sent it, while jsonrpc2 sees the reply
// settle the call; an error reply still fails the call with its code and
// data, and calls made without Expect, and notifications, are read as
// jsonrpc2 reads them.
func TestClientCallTakesItsResultRaw(t *testing.T) {
	server, conn := net.Pipe()
	defer server.Close()
	codec := NewClientCodec()
	notified := make(chan string, 1)
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(conn, codec),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			notified <- req.Method + " " + string(*req.Params)
			return nil, nil
		}), codec.OnSend())
	defer rpc.Close()
	// The daemon's side: each request read is answered by answer.
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
			for _, body := range strings.Split(answer(req), "\x00") {
				if _, err := io.WriteString(server, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
					return
				}
			}
		}
	}()
	ctx := context.Background()

	id, raw, done := codec.Expect()
	if err := rpc.Call(ctx, "ok", map[string]int{"a": 1}, nil, jsonrpc2.PickID(jsonrpc2.ID{Num: id})); err != nil {
		t.Fatal(err)
	}
	if got, ok := raw(); !ok || string(got) != `{"seq": 7 ,"stage":"streaming"}` {
		t.Errorf("result = %s, %v; want it as sent", got, ok)
	}
	done()

	id, raw, done = codec.Expect()
	err := rpc.Call(ctx, "fail", nil, nil, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32001 || rpcErr.Data == nil || !strings.Contains(string(*rpcErr.Data), "seq_gap") {
		t.Errorf("error reply = %v, want code -32001 with its data", err)
	}
	if _, ok := raw(); ok {
		t.Errorf("an error reply left a result")
	}
	done()

	var plain string
	if err := rpc.Call(ctx, "other", nil, &plain); err != nil || plain != "plain" {
		t.Errorf("a call without Expect = %q, %v", plain, err)
	}
	if got := <-notified; got != `session.idle {"session_id":"s"}` {
		t.Errorf("notification = %s", got)
	}
	codec.mu.Lock()
	left := len(codec.results)
	codec.mu.Unlock()
	if left != 0 {
		t.Errorf("%d results held after their calls were done", left)
	}
}

// TestClientEncodesWhatJSONRPC2Would: a request encoded from what OnSend
// showed reads as the one jsonrpc2 would marshal, held params put in.
func TestClientEncodesWhatJSONRPC2Would(t *testing.T) {
	c := NewClientCodec()
	placeholder, release := c.Hold([]byte(`{"chunk":"a\"<b>"}`))
	defer release()
	for _, tc := range []struct {
		name string
		req  jsonrpc2.Request
		want string
	}{
		{"Held", jsonrpc2.Request{Method: "session.append", ID: jsonrpc2.ID{Num: 1 << 50}, Params: ptr(json.RawMessage(placeholder))},
			`{"id":1125899906842624,"jsonrpc":"2.0","method":"session.append","params":{"chunk":"a\"<b>"}}`},
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
