package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// rpc is one well-behaved connection to the daemon under attack.
type rpc struct {
	t    testing.TB
	conn *jsonrpc2.Conn
}

func dial(t testing.TB, d *testdaemon.Daemon) *rpc {
	t.Helper()
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatalf("dialing oriond: %v", err)
	}
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(c, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	t.Cleanup(func() { conn.Close() })
	return &rpc{t: t, conn: conn}
}

// call sends one request and decodes the result into out (may be nil). It
// returns the daemon's error as a *jsonrpc2.Error, or fails the test on a
// transport error.
func (r *rpc) call(method string, params, out any) *jsonrpc2.Error {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := r.conn.Call(ctx, method, params, out)
	if err == nil {
		return nil
	}
	if je, ok := err.(*jsonrpc2.Error); ok {
		return je
	}
	r.t.Fatalf("%s: %v", method, err)
	return nil
}

// must is call that fails the test on any error.
func (r *rpc) must(method string, params, out any) {
	r.t.Helper()
	if je := r.call(method, params, out); je != nil {
		r.t.Fatalf("%s: code %d: %s (data %s)", method, je.Code, je.Message, rawData(je))
	}
}

// reason returns the stable data.reason of a daemon error.
func reason(je *jsonrpc2.Error) string {
	if je == nil || je.Data == nil {
		return ""
	}
	var d struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(*je.Data, &d)
	return d.Reason
}

func rawData(je *jsonrpc2.Error) string {
	if je.Data == nil {
		return ""
	}
	return string(*je.Data)
}

// write runs a whole session: begin, one append ending in the marker,
// finalize. It returns the finalize error (nil when the file was written).
func (r *rpc) write(p protocol.BeginParams, content string) *jsonrpc2.Error {
	r.t.Helper()
	var b protocol.BeginResult
	if je := r.call(protocol.MethodSessionBegin, p, &b); je != nil {
		return je
	}
	var a protocol.AppendResult
	if je := r.call(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1,
		Chunk: content + "\n" + b.EndMarker + "\n"}, &a); je != nil {
		return je
	}
	var f protocol.FinalizeResult
	return r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, &f)
}

// rss returns the daemon's resident set size and its peak, in bytes, from
// /proc (the suite runs on Linux; elsewhere the memory tests skip).
func rss(t testing.TB, pid int) (cur, peak int64) {
	t.Helper()
	st := procStatus(t, pid)
	return st["VmRSS"], st["VmHWM"]
}

// procStatus reads the memory figures (kB) of /proc/PID/status, in bytes.
func procStatus(t testing.TB, pid int) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("reading the daemon's memory needs /proc: %v", err)
	}
	st := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			st[k] = kb << 10
		}
	}
	return st
}
