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

// TestCallsEndWithTheConnection: a frame jsonrpc2 cannot read as a message
// ends the connection (jsonrpc2 closes it), and the calls still waiting
// for their replies, read by no one now, fail with jsonrpc2.ErrClosed
// rather than wait for a reply that cannot come.
func TestCallsEndWithTheConnection(t *testing.T) {
	server, conn := net.Pipe()
	codec := NewClientCodec()
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(codec.Conn(conn), codec),
		jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }),
		codec.OnSend())
	t.Cleanup(func() {
		rpc.Close()
		server.Close()
	})
	// A daemon that reads two requests, answers neither, and sends a frame
	// that is neither a request nor a response; then reads on, so that
	// nothing waits for it.
	go func() {
		in := bufio.NewReader(server)
		for i := 0; ; i++ {
			var req json.RawMessage
			if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(in, &req); err != nil {
				return
			}
			if i == 1 {
				body := `{"jsonrpc":"2.0","id":7}`
				go io.WriteString(server, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			}
		}
	}()
	// Two calls at once: neither reads its own reply, the read loop does.
	ks := []*Call{codec.NewCall(), codec.NewCall()}
	for _, k := range ks {
		if err := k.Send(context.Background(), rpc, "m", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-rpc.DisconnectNotify():
	case <-time.After(10 * time.Second):
		t.Fatal("a frame jsonrpc2 cannot read did not end the connection")
	}
	for i, k := range ks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := k.Wait(ctx)
		cancel()
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			t.Errorf("call %d waiting when the connection ended: %v, want jsonrpc2.ErrClosed", i, err)
		}
		k.Release()
	}
}
