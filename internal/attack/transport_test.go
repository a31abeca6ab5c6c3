package attack

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// rawConn is a connection that sends whatever bytes a test gives it, for
// frames no JSON-RPC library would write.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, d *testdaemon.Daemon) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatalf("dialing oriond: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func frameOf(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatalf("sending: %v", err)
	}
}

// rawReply is a reply as it came over the wire, its id untouched.
type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *protocol.Error `json:"error"`
}

func (r rawReply) String() string {
	if r.Error != nil {
		return fmt.Sprintf("id %s: code %d, reason %s: %s", r.ID, r.Error.Code, r.Error.Data.Reason, r.Error.Message)
	}
	return fmt.Sprintf("id %s: result %.80s", r.ID, r.Result)
}

// readReply reads the next frame the daemon sends; an error means the
// connection ended (or stayed silent for 10 s) first.
func (c *rawConn) readReply() (rawReply, error) {
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var length int
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return rawReply{}, err
		}
		if line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			if length, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return rawReply{}, fmt.Errorf("reply header %q", line)
			}
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return rawReply{}, err
	}
	var r rawReply
	if err := json.Unmarshal(body, &r); err != nil {
		return rawReply{}, fmt.Errorf("reply %q: %v", body, err)
	}
	return r, nil
}

// mustReply is readReply that fails the test when no reply comes.
func (c *rawConn) mustReply() rawReply {
	c.t.Helper()
	r, err := c.readReply()
	if err != nil {
		c.t.Fatalf("no reply: %v", err)
	}
	return r
}

// expectClosed checks that the daemon closed the connection: the next read
// ends (EOF or reset) instead of timing out or bringing another frame.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := c.r.ReadByte()
	if err == nil {
		c.t.Fatalf("connection still open: read %q", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open after 10s")
	}
}

const statusRequest = `{"jsonrpc":"2.0","id":1000,"method":"daemon.status"}`

// stillServes checks that the connection answers a request after the
// malformed one.
func (c *rawConn) stillServes() {
	c.t.Helper()
	c.send(frameOf(statusRequest))
	if r := c.mustReply(); r.Error != nil || string(r.ID) != "1000" {
		c.t.Fatalf("after a malformed message, daemon.status: %v", r)
	}
}

// TestTransport attacks the daemon's transport: malformed and oversized
// frames, odd ids, floods of requests. One daemon serves every case, as it
// would serve a misbehaving client among others.
func TestTransport(t *testing.T) {
	d := testdaemon.Start(t)
	t.Run("MalformedMessages", func(t *testing.T) { testMalformedMessages(t, d) })
	t.Run("IDsAsSent", func(t *testing.T) { testIDsAsSent(t, d) })
	t.Run("UnreadableFrames", func(t *testing.T) { testUnreadableFrames(t, d) })
	t.Run("LargestChunkFits", func(t *testing.T) { testLargestChunkFits(t, d) })
	t.Run("HeaderWithoutEnd", func(t *testing.T) { testHeaderWithoutEnd(t, d) })
	t.Run("HugeContentLength", func(t *testing.T) { testHugeContentLength(t, d) })
	t.Run("UnreadReplies", func(t *testing.T) { testUnreadReplies(t, d) })
}

// testMalformedMessages: every message that is a readable frame but not a
// valid request is answered per JSON-RPC 2.0 and the connection goes on;
// the daemon used to close it without a word.
func testMalformedMessages(t *testing.T, d *testdaemon.Daemon) {
	tests := []struct {
		name   string
		body   string
		id     string // id of the answer
		code   int64
		reason string
	}{
		{"InvalidJSON", `{"jsonrpc":"2.0","id":1,"method":`, "null", protocol.CodeParseError, protocol.ReasonInvalidJSON},
		{"Empty", ``, "null", protocol.CodeParseError, protocol.ReasonInvalidJSON},
		{"Batch", `[{"jsonrpc":"2.0","id":1,"method":"daemon.status"}]`, "null", protocol.CodeInvalidRequest, protocol.ReasonBatchNotSupported},
		{"NotAnObject", `"daemon.status"`, "null", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"MissingMethod", `{"jsonrpc":"2.0","id":2}`, "2", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"MethodNotString", `{"jsonrpc":"2.0","id":3,"method":["daemon.status"]}`, "3", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"WrongVersion", `{"jsonrpc":"1.0","id":4,"method":"daemon.status"}`, "4", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"MissingVersion", `{"id":5,"method":"daemon.status"}`, "5", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"IDNull", `{"jsonrpc":"2.0","id":null,"method":"daemon.status"}`, "null", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"IDBool", `{"jsonrpc":"2.0","id":true,"method":"daemon.status"}`, "null", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"Response", `{"jsonrpc":"2.0","id":6,"result":{}}`, "null", protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest},
		{"UnknownMethod", `{"jsonrpc":"2.0","id":7,"method":"no.such"}`, "7", protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, d)
			c.send(frameOf(tt.body))
			r := c.mustReply()
			if r.Error == nil || string(r.ID) != tt.id || r.Error.Code != tt.code || r.Error.Data.Reason != tt.reason {
				t.Fatalf("got %v; want id %s, code %d, reason %s", r, tt.id, tt.code, tt.reason)
			}
			c.stillServes()
		})
	}
}

// testIDsAsSent: ids come back exactly as sent; -1 used to come back as
// 18446744073709551615, and 1.5 or 2^64 closed the connection.
func testIDsAsSent(t *testing.T, d *testdaemon.Daemon) {
	c := dialRaw(t, d)
	for _, id := range []string{"-1", "0", "9223372036854775807", "18446744073709551616", "-9223372036854775809",
		"1.5", "1e3", `"s"`, `"-1"`, `"\u00e9\n"`, `""`} {
		c.send(frameOf(`{"jsonrpc":"2.0","id":` + id + `,"method":"daemon.status"}`))
		r := c.mustReply()
		if string(r.ID) != id || r.Error != nil {
			t.Errorf("sent id %s, reply %v", id, r)
		}
	}
	// An error reply carries the id as sent too.
	c.send(frameOf(`{"jsonrpc":"2.0","id":-7,"method":"session.get","params":{"session_id":"nope"}}`))
	if r := c.mustReply(); string(r.ID) != "-7" || r.Error == nil {
		t.Errorf("error reply %v, want id -7", r)
	}
}

// testUnreadableFrames: a frame that cannot be read is answered (id null,
// a stable reason) and the connection closed; other clients are served on.
func testUnreadableFrames(t *testing.T, d *testdaemon.Daemon) {
	tests := []struct {
		name   string
		in     string
		code   int64
		reason string
	}{
		{"LongHeaderLine", "Content-Length: 2\r\nX-Junk: " + strings.Repeat("x", 8<<10) + "\r\n\r\n{}", protocol.CodeParseError, protocol.ReasonMalformedFrame},
		{"NoContentLength", "Content-Type: application/json\r\n\r\n{}", protocol.CodeParseError, protocol.ReasonMalformedFrame},
		{"BadContentLength", "Content-Length: twelve\r\n\r\n", protocol.CodeParseError, protocol.ReasonMalformedFrame},
		{"BareLF", "Content-Length: 2\n\n{}", protocol.CodeParseError, protocol.ReasonMalformedFrame},
		{"TooManyHeaderLines", strings.Repeat("X-A: b\r\n", 100), protocol.CodeParseError, protocol.ReasonMalformedFrame},
		{"HugeContentLength", "Content-Length: 4294967295\r\n\r\n{", protocol.CodeTooLarge, protocol.ReasonMessageTooLarge},
		{"OverflowContentLength", "Content-Length: 184467440737095516160\r\n\r\n", protocol.CodeTooLarge, protocol.ReasonMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, d)
			c.send(tt.in)
			r := c.mustReply()
			if r.Error == nil || string(r.ID) != "null" || r.Error.Code != tt.code || r.Error.Data.Reason != tt.reason {
				t.Fatalf("got %v; want id null, code %d, reason %s", r, tt.code, tt.reason)
			}
			c.expectClosed()
			dialRaw(t, d).stillServes()
		})
	}
}

// testLargestChunkFits: the message limit leaves room for a chunk of
// --max-chunk-bytes that the Go client escaped in full (encoding/json
// writes < as \u003c, six bytes), and refuses one byte more in the frame.
func testLargestChunkFits(t *testing.T, d *testdaemon.Daemon) {
	r := dial(t, d)
	var st protocol.StatusResult
	r.must(protocol.MethodDaemonStatus, nil, &st)
	if st.MaxMessageBytes <= st.MaxChunkBytes || st.MaxInflight <= 0 || st.MaxConnections <= 0 || st.FDLimit == 0 || st.Connections < 1 {
		t.Fatalf("daemon.status limits: %+v", st)
	}
	var b protocol.BeginResult
	r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/lt.html", Operation: protocol.OpCreate}, &b)
	var a protocol.AppendResult
	r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1,
		Chunk: strings.Repeat("<", int(st.MaxChunkBytes))}, &a)
	if a.Bytes != st.MaxChunkBytes {
		t.Fatalf("append acknowledged %d bytes", a.Bytes)
	}
	c := dialRaw(t, d)
	c.send(fmt.Sprintf("Content-Length: %d\r\n\r\n", st.MaxMessageBytes+1))
	if rep := c.mustReply(); rep.Error == nil || rep.Error.Data.Reason != protocol.ReasonMessageTooLarge || rep.Error.Data.Limit != st.MaxMessageBytes {
		t.Fatalf("one byte over the limit: %v", rep)
	}
	c.expectClosed()
}
