package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The transport sets a call's arguments aside whatever the order of the
// members, gives them back to the tool, and lets go of them with the
// answer; other messages pass as they are.
func TestTransportArguments(t *testing.T) {
	s := &Server{stash: newArgStash()}
	var out bytes.Buffer
	c := &conn{w: &out, stash: s.stash, closed: make(chan struct{})}
	args := `{"target_file":"a.txt","content":"x \"y\" \\ z\n"}`
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":` + args + `}}`,
		`{"params":{"arguments":` + args + `,"name":"write_file","_meta":{"progressToken":1}},"method":"tools/call","id":"s-1","jsonrpc":"2.0"}`,
	} {
		msg, err := c.decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		req := msg.(*jsonrpc.Request)
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name != "write_file" {
			t.Fatalf("params %s: %v", req.Params, err)
		}
		if bytes.Contains(req.Params, []byte("content")) {
			t.Errorf("the SDK was handed the arguments: %s", req.Params)
		}
		if got := s.arguments(p.Arguments); string(got) != args {
			t.Errorf("arguments given back: %s", got)
		}
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.stash.args); n != 0 {
		t.Errorf("%d arguments still held after the answers", n)
	}
	// Not a call: as it came.
	msg, err := c.decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{"a":1}}}`))
	if err != nil || !bytes.Contains(msg.(*jsonrpc.Request).Params, []byte(`"a":1`)) {
		t.Errorf("tools/list: %v %v", msg, err)
	}
	// A placeholder a client makes up is not taken for one.
	fake := []byte(`{"_orion_args":"orion-args-guess-7"}`)
	if got := s.arguments(fake); !bytes.Equal(got, fake) {
		t.Errorf("a made-up placeholder resolved to %s", got)
	}
	for _, bad := range []string{`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":1,`, `"x"`} {
		if _, err := c.decode([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The arguments held for unanswered calls are bounded in count and bytes.
func TestArgStashBounds(t *testing.T) {
	s := newArgStash()
	for i := range 2 * maxStashed {
		s.put(string(rune('a'+i%26))+string(rune('0'+i/26)), []byte("{}"))
	}
	if len(s.args) > maxStashed {
		t.Errorf("%d held, limit %d", len(s.args), maxStashed)
	}
	big := make([]byte, maxStashedBytes/3)
	for i := range 5 {
		s.put(string(rune('A'+i)), big)
	}
	if s.bytes > maxStashedBytes || len(s.args) > maxStashed {
		t.Errorf("%d bytes in %d held, limits %d and %d", s.bytes, len(s.args), maxStashedBytes, maxStashed)
	}
	if _, ok := s.get("E"); !ok {
		t.Error("the newest was let go")
	}
}
