package daemon_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A session names the process that opened it, from the socket's peer
// credentials, and a client cannot claim another name on the wire.
func TestSessionNamesItsClientProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process name is read from /proc (Linux)")
	}
	d := testdaemon.Start(t)
	c, ctx := dialWrite(t, d)
	var b protocol.BeginResult
	// "client" in the params is not a field of session.begin: ignored.
	raw := json.RawMessage(`{"target_file":"n.txt","workspace_root":` + quote(d.Root) + `,"operation":"create","client":"someone-else"}`)
	if err := c.Call(ctx, protocol.MethodSessionBegin, raw, &b); err != nil {
		t.Fatal(err)
	}
	info, err := c.Get(ctx, b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "daemon.test"; info.Client != want {
		t.Fatalf("session info's client %q, want this test's process %q", info.Client, want)
	}
	list, err := c.List(ctx, true)
	if err != nil || len(list) != 1 || list[0].Client != info.Client {
		t.Fatalf("session.list: %+v, %v", list, err)
	}
	w, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "w.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}, Content: "x\n"})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Get(ctx, w.SessionID); !strings.HasPrefix(info.Client, "daemon.test") {
		t.Fatalf("session.write's session names client %q", info.Client)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
