package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// callReader is a client codec on the connection given to it (Conn), and
// a daemon on the other end that answers each request by its method:
//
//	echo          its params as its result
//	notify-echo   the notification "told" with its params, then as echo
//	hold          as echo, once release is sent to
//	close         closes the connection instead of answering
type callReader struct {
	codec    *ClientCodec
	rpc      *jsonrpc2.Conn
	server   net.Conn
	notified chan string
	release  chan struct{}
	// out is what the daemon writes, in order, by a goroutine of its
	// own: a reply never stops the reading of the next request, as a
	// socket's buffer does not.
	out chan string
}

func newCallReader(t *testing.T) *callReader {
	t.Helper()
	server, conn := net.Pipe()
	codec := NewClientCodec()
	r := &callReader{codec: codec, server: server, notified: make(chan string, 16), release: make(chan struct{}), out: make(chan string, 64)}
	r.rpc = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(codec.Conn(conn), codec),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			r.notified <- req.Method + " " + string(*req.Params)
			return nil, nil
		}), codec.OnSend())
	t.Cleanup(func() {
		r.rpc.Close()
		server.Close()
	})
	go r.serve()
	go func() {
		for body := range r.out {
			if _, err := io.WriteString(server, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
				return
			}
		}
	}()
	return r
}

func (r *callReader) serve() {
	defer close(r.out)
	in := bufio.NewReader(r.server)
	for {
		var req struct {
			ID     json.RawMessage
			Method string
			Params json.RawMessage
		}
		if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(in, &req); err != nil {
			return
		}
		switch req.Method {
		case "close":
			r.server.Close()
			return
		case "hold":
			<-r.release
		case "notify-echo":
			r.send(`{"jsonrpc":"2.0","method":"told","params":` + string(req.Params) + `}`)
		}
		r.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + string(req.Params) + `}`)
	}
}

func (r *callReader) send(body string) { r.out <- body }

// call sends method with params and waits for its result.
func (r *callReader) call(ctx context.Context, method, params string) (string, error) {
	k := r.codec.NewCall()
	defer k.Release()
	if err := k.Send(ctx, r.rpc, method, []byte(params)); err != nil {
		return "", err
	}
	got, err := k.Wait(ctx)
	return string(got), err
}

func (r *callReader) ownReads() int {
	r.codec.mu.Lock()
	defer r.codec.mu.Unlock()
	return r.codec.rd.ownReads
}

// waitFor waits until cond holds, c.mu held while it is asked.
func waitFor(t *testing.T, c *ClientCodec, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCallReadsItsOwnReply: calls made one after another read their own
// replies (all but the first, which the read loop was already waiting
// for), each gets its own result, and a notification read by a Call, or
// sent to a client gone idle, reaches the handler.
func TestCallReadsItsOwnReply(t *testing.T) {
	r := newCallReader(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const calls = 20
	for i := range calls {
		method, params := "echo", strconv.Itoa(i)
		if i == calls/2 {
			method = "notify-echo"
		}
		got, err := r.call(ctx, method, params)
		if err != nil || got != params {
			t.Fatalf("call %d = %q, %v; want %q", i, got, err, params)
		}
	}
	if n := r.ownReads(); n < calls-1 {
		t.Errorf("%d of %d calls read their own reply, want at least %d", n, calls, calls-1)
	}
	if got := <-r.notified; got != "told "+strconv.Itoa(calls/2) {
		t.Errorf("notification read by a call reached the handler as %q", got)
	}
	// Nothing is waiting now: the read loop reads again, after a while.
	r.send(`{"jsonrpc":"2.0","method":"told","params":"idle"}`)
	if got := <-r.notified; got != `told "idle"` {
		t.Errorf("notification to an idle client reached the handler as %q", got)
	}
	if got, err := r.call(ctx, "echo", `"after"`); err != nil || got != `"after"` {
		t.Errorf("call after the idle notification = %q, %v", got, err)
	}
}

// TestCallReadingStopsWhenCancelled: a call reading its own reply stops
// when its context ends, its late reply is dropped, and the connection
// serves the next call, which reads its own reply again.
func TestCallReadingStopsWhenCancelled(t *testing.T) {
	r := newCallReader(t)
	if _, err := r.call(context.Background(), "echo", "1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := r.codec.NewCall()
	if err := k.Send(ctx, r.rpc, "hold", []byte(`"late"`)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := k.Wait(ctx)
		errc <- err
	}()
	waitFor(t, r.codec, "the held call reads its own reply", func() bool { return r.codec.rd.by == k })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait of a cancelled call = %v, want context.Canceled", err)
	}
	k.Release()
	close(r.release)
	before := r.ownReads()
	for i := range 3 {
		want := strconv.Itoa(10 + i)
		if got, err := r.call(context.Background(), "echo", want); err != nil || got != want {
			t.Fatalf("call after a cancelled one = %q, %v; want %q", got, err, want)
		}
	}
	if n := r.ownReads() - before; n < 2 {
		t.Errorf("%d of the 3 calls after a cancelled one read their own reply", n)
	}
}

// TestCallReadingSeesTheEnd: a call reading its own reply when the
// connection ends fails with jsonrpc2.ErrClosed, and the connection is
// seen to end.
func TestCallReadingSeesTheEnd(t *testing.T) {
	r := newCallReader(t)
	if _, err := r.call(context.Background(), "echo", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.call(context.Background(), "close", "2"); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("call when the connection ended = %v, want jsonrpc2.ErrClosed", err)
	}
	r.codec.mu.Lock()
	ended := r.codec.rd.ended
	r.codec.mu.Unlock()
	if ended == nil {
		t.Fatal("the read loop saw the end, not the call: the test shows nothing")
	}
	select {
	case <-r.rpc.DisconnectNotify():
	case <-time.After(10 * time.Second):
		t.Fatal("the connection's end never reached jsonrpc2")
	}
}

// TestCloseEndsReadLoopLeftIdle: closing the client while its read loop
// leaves reading to the calls ends the read loop too.
func TestCloseEndsReadLoopLeftIdle(t *testing.T) {
	r := newCallReader(t)
	for i := range 2 {
		if _, err := r.call(context.Background(), "echo", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.rpc.Close()
	waitFor(t, r.codec, "the read loop ends", func() bool { return r.codec.closed })
}

// TestCallsInFlightTogether: several calls sent before any waits, after
// calls that read their own replies, all get theirs.
func TestCallsInFlightTogether(t *testing.T) {
	r := newCallReader(t)
	for i := range 3 {
		if _, err := r.call(context.Background(), "echo", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	ks := make([]*Call, 4)
	for i := range ks {
		ks[i] = r.codec.NewCall()
		if err := ks[i].Send(context.Background(), r.rpc, "echo", []byte(strconv.Itoa(100+i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range ks {
		if got, err := k.Wait(context.Background()); err != nil || string(got) != strconv.Itoa(100+i) {
			t.Fatalf("call %d of 4 in flight = %q, %v", i, got, err)
		}
		k.Release()
	}
}
