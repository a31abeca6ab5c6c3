package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

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
		if got, err := s.arguments("write_file", p.Arguments); err != nil || string(got) != args {
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
	if got, _ := s.arguments("write_file", fake); !bytes.Equal(got, fake) {
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

// The skimmer finds the id, the method and the tool's name of a message
// it never holds, wherever they lie and however the stream is cut, and
// is not fooled by the same names inside the arguments or their strings.
func TestSkimmer(t *testing.T) {
	content := `x \"id\":9, \\ \"method\":\"ping\" \u00e9 {"name":"no"}`
	for _, tc := range []struct {
		name, line, id, method, tool string
	}{
		{"IDFirst", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + content + `"}}}`, "7", "tools/call", "write_file"},
		{"IDLast", `{"method":"tools/call","params":{"arguments":{"name":"decoy","content":"` + content + `"},"name":"write_file"},"jsonrpc":"2.0","id":"s-1"}`, `"s-1"`, "tools/call", "write_file"},
		{"Spaces", "{ \"params\" : { \"arguments\" : [ {\"id\":1} ] , \"name\" : \"edit_file\" } , \"id\" : 12 , \"method\" : \"tools/call\" }", "12", "tools/call", "edit_file"},
		{"Notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"name":"x","data":"` + content + `"}}`, "", "notifications/progress", "x"},
		{"ObjectID", `{"id":{"a":1},"method":"ping"}`, "", "ping", ""},
		{"NullID", `{"id":null,"method":"ping"}`, "", "ping", ""},
		{"Garbage", `{"id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"unterminated`, "5", "tools/call", "write_file"},
		{"NotObject", `["id",1]`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for cut := 0; cut <= len(tc.line); cut++ {
				var s skimmer
				s.feed([]byte(tc.line[:cut]))
				s.feed([]byte(tc.line[cut:]))
				s.endLiteral()
				m := s.result()
				if m.id != tc.id || m.method != tc.method || m.name != tc.tool || m.size != int64(len(tc.line)) {
					t.Fatalf("cut at %d: id %q method %q name %q size %d, want %q %q %q %d", cut, m.id, m.method, m.name, m.size, tc.id, tc.method, tc.tool, len(tc.line))
				}
			}
		})
	}
}

// A line over the bound is read to its end and not kept, whatever the
// size of the reader's buffer; the next line reads as usual.
func TestReadLineOverBound(t *testing.T) {
	big := `{"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + strings.Repeat("a\\\"", 100_000) + `"}},"id":3}`
	r := bufio.NewReaderSize(strings.NewReader(big+"\n"+`{"id":4}`+"\n"), 16)
	line, over, err := readLine(r, 1000)
	if err != nil || line != nil || over == nil {
		t.Fatalf("line %d bytes, over %v, err %v", len(line), over, err)
	}
	if m := over.result(); m.id != "3" || m.name != "write_file" || m.size != int64(len(big)+1) {
		t.Fatalf("%+v", m)
	}
	if line, over, err := readLine(r, 1000); string(line) != `{"id":4}`+"\n" || over != nil || err != nil {
		t.Fatalf("next line %q %v %v", line, over, err)
	}
}

// A line that is not a message is answered with a parse error and
// skipped, one that is a malformed response of the host only skipped
// (JSON-RPC answers no response); Read goes on to the next message.
func TestReadSkipsBadLines(t *testing.T) {
	var out bytes.Buffer
	c := &conn{w: &out, stash: newArgStash(), log: slog.New(slog.DiscardHandler), incoming: make(chan lineOrErr, 4), closed: make(chan struct{})}
	c.incoming <- lineOrErr{line: []byte(`{"id":9,"result":`)}
	c.incoming <- lineOrErr{line: []byte(`{"id":"a","method":"ping",`)}
	c.incoming <- lineOrErr{line: []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)}
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" || req.ID.Raw() != int64(2) {
		t.Fatalf("read %#v", msg)
	}
	if got, want := out.String(), `{"jsonrpc":"2.0","id":"a","error":{"code":-32700,`; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("answered %q, want one line starting %q", got, want)
	}
}

// When the input ends, Read reports it only once every request it handed
// over is answered (the SDK writes nothing after), or after the bound.
func TestReadDrainsBeforeTheEnd(t *testing.T) {
	newConn := func(drainFor time.Duration) *conn {
		return &conn{w: io.Discard, stash: newArgStash(), log: slog.New(slog.DiscardHandler),
			incoming: make(chan lineOrErr, 4), closed: make(chan struct{}), drainFor: drainFor}
	}
	readRequest := func(c *conn, line string) *jsonrpc.Request {
		t.Helper()
		c.incoming <- lineOrErr{line: []byte(line)}
		msg, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return msg.(*jsonrpc.Request)
	}
	t.Run("Answered", func(t *testing.T) {
		c := newConn(time.Hour)
		req := readRequest(c, `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
		readRequest(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) // nothing to answer
		c.incoming <- lineOrErr{err: io.EOF}
		ended := make(chan error, 1)
		go func() {
			_, err := c.Read(context.Background())
			ended <- err
		}()
		// It cannot end before the answer, however long that takes; a
		// Read that would is usually caught within this wait.
		select {
		case err := <-ended:
			t.Fatalf("Read ended (%v) with the request unanswered", err)
		case <-time.After(100 * time.Millisecond):
		}
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; err != io.EOF {
			t.Fatalf("Read after the answer: %v, want EOF", err)
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		c := newConn(10 * time.Millisecond)
		readRequest(c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
		c.incoming <- lineOrErr{err: io.EOF}
		if _, err := c.Read(context.Background()); err != io.EOF {
			t.Fatalf("Read with a request never answered: %v, want EOF after the bound", err)
		}
	})
}
