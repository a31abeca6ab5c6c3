package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// pipeConn is a connection whose input is fixed and whose output is kept.
type pipeConn struct {
	in io.Reader
	// read counts the bytes taken from in, to show what was never read.
	read int
	mu   sync.Mutex
	out  bytes.Buffer
}

func (c *pipeConn) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	c.read += n
	return n, err
}

func (c *pipeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *pipeConn) Close() error { return nil }

func (c *pipeConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// rawFrame is a frame of body with content raw after it.
func rawFrame(body, content string) string {
	return "Content-Length: " + strconv.Itoa(len(body)+len(content)) + "\r\n" + protocol.HeaderRawLength + ": " +
		strconv.Itoa(len(content)) + "\r\n\r\n" + body + content
}

// reply is one frame the stream wrote, decoded.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *protocol.Error `json:"error"`
}

func (r reply) String() string {
	if r.Error != nil {
		return fmt.Sprintf("%s:%d/%s", r.ID, r.Error.Code, r.Error.Data.Reason)
	}
	return fmt.Sprintf("%s:ok", r.ID)
}

// readReplies splits out into frames, checking each is well formed.
func readReplies(t testing.TB, out []byte) []reply {
	t.Helper()
	var got []reply
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return got
		}
		n, ok := strings.CutPrefix(line, "Content-Length: ")
		if !ok || !strings.HasSuffix(n, "\r\n") {
			t.Fatalf("reply header %q", line)
		}
		length, err := strconv.Atoi(strings.TrimSuffix(n, "\r\n"))
		if err != nil {
			t.Fatalf("reply length %q", n)
		}
		if blank, _ := r.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("reply header ends with %q", blank)
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("reply body: %v", err)
		}
		var rep reply
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatalf("reply %q: %v", body, err)
		}
		if !bytes.Contains(body, []byte(`"jsonrpc":"2.0"`)) {
			t.Fatalf("reply without jsonrpc 2.0: %s", body)
		}
		got = append(got, rep)
	}
}

// readRequest reads the next request as jsonrpc2 and the daemon's handler
// do: jsonrpc2 decodes what ReadObject hands it, and the handler takes the
// request from the stream.
func readRequest(s *ServerStream) (Request, error) {
	var req jsonrpc2.Request
	if err := s.ReadObject(&req); err != nil {
		return Request{}, err
	}
	if !req.Notif || req.Method != "" || req.Params != nil {
		return Request{}, fmt.Errorf("jsonrpc2 was handed more than the placeholder: %+v", req)
	}
	r, ok := s.Take()
	if !ok {
		return Request{}, errors.New("ReadObject handed jsonrpc2 a placeholder for no request")
	}
	if _, again := s.Take(); again {
		return Request{}, errors.New("a request was taken twice")
	}
	return r, nil
}

// drive reads every request from input as jsonrpc2 would, answers each
// through the stream as the handler would, and returns the replies and the
// error that ended reading.
func drive(t testing.TB, input string, maxMessage int64) (replies []reply, methods []string, c *pipeConn, err error) {
	t.Helper()
	c = &pipeConn{in: strings.NewReader(input)}
	s := NewServerStream(c, Limits{MaxMessage: maxMessage, MaxInflight: 4}, nil)
	for {
		var req Request
		if req, err = readRequest(s); err != nil {
			break
		}
		methods = append(methods, req.Method)
		resp := &jsonrpc2.Response{ID: req.RPCID()}
		resp.SetResult("ok")
		if werr := s.WriteObject(resp); werr != nil {
			t.Fatal(werr)
		}
	}
	return readReplies(t, c.written()), methods, c, err
}

func TestFrameStream(t *testing.T) {
	ok := frame(`{"jsonrpc":"2.0","id":7,"method":"daemon.status"}`)
	tests := []struct {
		name    string
		in      string
		replies string // reply.String()s, space-separated
		// closed is the reason of the frame error that ends the
		// connection, or "" for a clean EOF.
		closed string
	}{
		{"OK", ok, "7:ok", ""},
		{"Notification", frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`) + ok, "7:ok", ""},
		{"IDNegative", frame(`{"jsonrpc":"2.0","id":-1,"method":"m"}`), "-1:ok", ""},
		{"IDFraction", frame(`{"jsonrpc":"2.0","id":1.5,"method":"m"}`), "1.5:ok", ""},
		{"IDExponent", frame(`{"jsonrpc":"2.0","id":1e3,"method":"m"}`), "1e3:ok", ""},
		{"IDHuge", frame(`{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}`), "18446744073709551616:ok", ""},
		{"IDString", frame(`{"jsonrpc":"2.0","id":"a\u00e9\"b","method":"m"}`), `"a\u00e9\"b":ok`, ""},
		{"IDDuplicate", frame(`{"jsonrpc":"2.0","id":3,"method":"m"}`) + frame(`{"jsonrpc":"2.0","id":3,"method":"m"}`), "3:ok 3:ok", ""},
		{"HeaderCaseAndContentType", "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}" + ok, "null:-32600/invalid_request 7:ok", ""},

		{"InvalidJSON", frame(`{"jsonrpc":"2.0","id":1,`) + ok, "null:-32700/invalid_json 7:ok", ""},
		{"EmptyBody", "Content-Length: 0\r\n\r\n" + ok, "null:-32700/invalid_json 7:ok", ""},
		{"Batch", frame(`[{"jsonrpc":"2.0","id":1,"method":"m"}]`) + ok, "null:-32600/batch_not_supported 7:ok", ""},
		{"EmptyBatch", frame(`[]`) + ok, "null:-32600/batch_not_supported 7:ok", ""},
		{"Number", frame(`42`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"Null", frame(`null`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"String", frame(`"x"`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"MissingMethod", frame(`{"jsonrpc":"2.0","id":5}`) + ok, "5:-32600/invalid_request 7:ok", ""},
		{"MethodNotString", frame(`{"jsonrpc":"2.0","id":5,"method":1}`) + ok, "5:-32600/invalid_request 7:ok", ""},
		{"WrongVersion", frame(`{"jsonrpc":"1.0","id":5,"method":"m"}`) + ok, "5:-32600/invalid_request 7:ok", ""},
		{"NoVersion", frame(`{"id":"x","method":"m"}`) + ok, `"x":-32600/invalid_request 7:ok`, ""},
		{"IDNull", frame(`{"jsonrpc":"2.0","id":null,"method":"m"}`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"IDObject", frame(`{"jsonrpc":"2.0","id":{},"method":"m"}`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"IDTooLong", frame(`{"jsonrpc":"2.0","id":"`+strings.Repeat("a", 300)+`","method":"m"}`) + ok, "null:-32600/invalid_request 7:ok", ""},
		{"Response", frame(`{"jsonrpc":"2.0","id":9,"result":1}`) + ok, "null:-32600/invalid_request 7:ok", ""},

		{"TooLarge", "Content-Length: 1025\r\n\r\n" + strings.Repeat(" ", 1025), "null:-32008/message_too_large", "message_too_large"},
		{"TooLargeOverflow", "Content-Length: 99999999999999999999999\r\n\r\n", "null:-32008/message_too_large", "message_too_large"},
		{"LongHeaderLine", "Content-Length: 2\r\nX-Pad: " + strings.Repeat("a", 2000) + "\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"LineWithoutEnd", strings.Repeat("a", 100_000), "null:-32700/malformed_frame", "malformed_frame"},
		{"TooManyHeaders", strings.Repeat("X-A: b\r\n", 9) + "\r\n", "null:-32700/malformed_frame", "malformed_frame"},
		{"NoContentLength", "Content-Type: x\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"BareLF", "Content-Length: 2\n\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"NegativeLength", "Content-Length: -1\r\n\r\n", "null:-32700/malformed_frame", "malformed_frame"},
		{"LengthNotNumber", "Content-Length: 1e3\r\n\r\n", "null:-32700/malformed_frame", "malformed_frame"},
		{"LengthsDisagree", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"NoColon", "Content-Length 2\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"BlankLineFirst", "\r\n" + ok, "null:-32700/malformed_frame", "malformed_frame"},

		{"Raw", rawFrame(`{"jsonrpc":"2.0","id":7,"method":"m","params":{}}`, "Content-Length: 2\r\n\r\n{}") + ok, "7:ok 7:ok", ""},
		{"RawEmpty", rawFrame(`{"jsonrpc":"2.0","id":7,"method":"m"}`, ""), "7:ok", ""},
		{"RawHeaderCase", "orion-raw-length: 1\r\nContent-Length: 3\r\n\r\n{}x" + ok, "null:-32600/invalid_request 7:ok", ""},
		{"RawTwiceAgreeing", "Orion-Raw-Length: 1\r\nOrion-Raw-Length: 1\r\nContent-Length: 3\r\n\r\n{}x", "null:-32600/invalid_request", ""},
		{"RawIsTheWholeBody", rawFrame(``, `{"jsonrpc":"2.0","id":5,"method":"m"}`) + ok, "null:-32700/invalid_json 7:ok", ""},
		{"RawLongerThanBody", "Content-Length: 2\r\nOrion-Raw-Length: 3\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawNotNumber", "Content-Length: 2\r\nOrion-Raw-Length: 0x1\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawNegative", "Content-Length: 2\r\nOrion-Raw-Length: -1\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawEmptyValue", "Content-Length: 2\r\nOrion-Raw-Length: \r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawOverflow", "Content-Length: 2\r\nOrion-Raw-Length: 99999999999999999999999\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawsDisagree", "Content-Length: 2\r\nOrion-Raw-Length: 1\r\nOrion-Raw-Length: 2\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"RawTooLarge", "Content-Length: 1025\r\nOrion-Raw-Length: 1000\r\n\r\n", "null:-32008/message_too_large", "message_too_large"},
		{"RawWithoutContentLength", "Orion-Raw-Length: 0\r\n\r\n{}", "null:-32700/malformed_frame", "malformed_frame"},
		{"EOFInRaw", "Content-Length: 100\r\nOrion-Raw-Length: 60\r\n\r\n" + `{"jsonrpc":"2.0","id":7,"method":"m"}` + "abc", "", "unexpected EOF"},

		{"EOFInHeader", "Content-Len", "", "unexpected EOF"},
		{"EOFInBody", "Content-Length: 10\r\n\r\n{}", "", "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies, _, _, err := drive(t, tt.in, 1024)
			var got []string
			for _, r := range replies {
				got = append(got, r.String())
			}
			if got, want := strings.Join(got, " "), tt.replies; got != want {
				t.Errorf("replies %s, want %s", got, want)
			}
			var fe *frameError
			switch {
			case tt.closed == "" && err != io.EOF:
				t.Errorf("ended with %v, want EOF", err)
			case tt.closed == "unexpected EOF" && err != io.ErrUnexpectedEOF:
				t.Errorf("ended with %v, want unexpected EOF", err)
			case tt.closed != "" && tt.closed != "unexpected EOF" && (!errors.As(err, &fe) || fe.err.Data.Reason != tt.closed):
				t.Errorf("ended with %v, want a frame error %s", err, tt.closed)
			}
		})
	}
}

// TestFrameStreamRefusesBeforeReading: a huge Content-Length is answered
// from the header alone; not a byte of the body is read.
func TestFrameStreamRefusesBeforeReading(t *testing.T) {
	header := "Content-Length: 4294967296\r\n\r\n"
	body := &countingReader{}
	c := &pipeConn{in: io.MultiReader(strings.NewReader(header), body)}
	s := NewServerStream(c, Limits{MaxMessage: 1 << 20, MaxInflight: 4}, nil)
	var req jsonrpc2.Request
	err := s.ReadObject(&req)
	var fe *frameError
	if !errors.As(err, &fe) || fe.err.Data.Reason != protocol.ReasonMessageTooLarge {
		t.Fatalf("err %v", err)
	}
	if body.n != 0 {
		t.Fatalf("read %d bytes of the body", body.n)
	}
	rep := readReplies(t, c.written())
	if len(rep) != 1 || rep[0].Error.Data.Limit != 1<<20 {
		t.Fatalf("replies %v", rep)
	}
}

// countingReader is an endless body that counts what was taken from it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	return len(p), nil
}

// TestFrameStreamParams: a request's params reach the handler byte for
// byte, through the stream, and jsonrpc2 never holds them.
func TestFrameStreamParams(t *testing.T) {
	params := `{"session_id":"s","seq":1,"chunk":"<a> & \u0000 é"}`
	c := &pipeConn{in: strings.NewReader(frame(`{"jsonrpc":"2.0","id":1,"method":"session.append","params":` + params + `}`))}
	s := NewServerStream(c, Limits{MaxMessage: 1 << 20, MaxInflight: 4}, nil)
	req, err := readRequest(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Params.JSON) != params || req.Method != "session.append" || req.ID == 0 {
		t.Fatalf("request %d %s with params %s; want session.append with %s as sent", req.ID, req.Method, req.Params.JSON, params)
	}
}

// TestFrameStreamRawContent: content sent raw after the JSON reaches the
// handler byte for byte as the params' Content, the JSON before it as
// their JSON; zero bytes sent raw are an empty content, not none, and a
// frame without raw content has none.
func TestFrameStreamRawContent(t *testing.T) {
	const params = `{"session_id":"s","seq":1}`
	request := `{"jsonrpc":"2.0","id":1,"method":"session.append","params":` + params + `}`
	content := "\"quoted\"\r\n\x00 é \xff Content-Length: 2\r\n\r\n{}"
	for _, tc := range []struct {
		name, in, json string
		content        []byte
	}{
		{"Raw", rawFrame(request, content), params, []byte(content)},
		{"RawEmpty", rawFrame(request, ""), params, []byte{}},
		{"RawWithoutParams", rawFrame(`{"jsonrpc":"2.0","id":1,"method":"daemon.status"}`, "x"), "", []byte("x")},
		{"NoRaw", frame(request), params, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServerStream(&pipeConn{in: strings.NewReader(tc.in)}, Limits{MaxMessage: 1 << 20, MaxInflight: 4}, nil)
			req, err := readRequest(s)
			if err != nil {
				t.Fatal(err)
			}
			got := req.Params
			if string(got.JSON) != tc.json || !bytes.Equal(got.Content, tc.content) || (got.Content == nil) != (tc.content == nil) {
				t.Fatalf("params %q, content %q (nil %v); want %q, %q (nil %v)",
					got.JSON, got.Content, got.Content == nil, tc.json, tc.content, tc.content == nil)
			}
			got.Release()
		})
	}
}

// TestFrameStreamCancel: a $/cancelRequest names an unanswered request by
// its id as sent, and OnCancel is told the id jsonrpc2 knows it by; one
// that names no unanswered request, or another representation of the
// number, tells nothing.
func TestFrameStreamCancel(t *testing.T) {
	in := frame(`{"jsonrpc":"2.0","id":"a","method":"session.list"}`) +
		frame(`{"jsonrpc":"2.0","id":2,"method":"session.list"}`) +
		frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"b"}}`) +
		frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2.0}}`) +
		frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"a"}}`) +
		frame(`{"jsonrpc":"2.0","method":"$/cancelRequest"}`)
	s := NewServerStream(&pipeConn{in: strings.NewReader(in)}, Limits{MaxMessage: 1 << 20, MaxInflight: 4}, nil)
	var cancelled []uint64
	s.OnCancel(func(id uint64) { cancelled = append(cancelled, id) })
	var ids []uint64
	for range 2 {
		req, err := readRequest(s)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, req.ID)
	}
	// The cancellations are acted on as they are read, and never handed
	// to jsonrpc2.
	var req jsonrpc2.Request
	if err := s.ReadObject(&req); err != io.EOF {
		t.Fatalf("after the cancellations: %v, %+v; want EOF", err, req)
	}
	if len(ids) != 2 || len(cancelled) != 1 || cancelled[0] != ids[0] {
		t.Fatalf("requests %v, cancelled %v; want only the first cancelled", ids, cancelled)
	}
}

// TestFrameStreamInflight: with its limit of requests (or request bytes)
// unanswered, the stream reads nothing more until one is answered.
func TestFrameStreamInflight(t *testing.T) {
	req := func(i int) string { return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i)) }
	size := int64(len(`{"jsonrpc":"2.0","id":0,"method":"m"}`))
	tests := []struct {
		name   string
		limits Limits
		// admitted is how many requests are read before the stream waits.
		admitted int
	}{
		{"Count", Limits{MaxMessage: 1 << 20, MaxInflight: 2, MaxInflightBytes: 1 << 20}, 2},
		{"Bytes", Limits{MaxMessage: 1 << 20, MaxInflight: 10, MaxInflightBytes: 2*size + size/2}, 2},
		// A request larger than the byte limit is still read, alone.
		{"BytesOne", Limits{MaxMessage: 1 << 20, MaxInflight: 10, MaxInflightBytes: size / 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in strings.Builder
			for i := range tt.admitted + 1 {
				in.WriteString(req(i))
			}
			c := &pipeConn{in: strings.NewReader(in.String())}
			s := NewServerStream(c, tt.limits, nil)
			defer s.Close()
			var first Request
			for i := range tt.admitted {
				req, err := readRequest(s)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = req
				}
			}
			next := make(chan error, 1)
			go func() {
				var req jsonrpc2.Request
				next <- s.ReadObject(&req)
			}()
			select {
			case err := <-next:
				t.Fatalf("read request %d with %d unanswered (err %v)", tt.admitted+1, tt.admitted, err)
			case <-time.After(50 * time.Millisecond):
			}
			resp := &jsonrpc2.Response{ID: first.RPCID()}
			resp.SetResult(true)
			if err := s.WriteObject(resp); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-next:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a reply did not make room")
			}
			if got := readReplies(t, c.written()); len(got) != 1 || string(got[0].ID) != "0" {
				t.Fatalf("replies %v", got)
			}
		})
	}
}

// TestFrameStreamCloseWakesReader: closing the connection ends a read
// loop that waits for a free slot.
func TestFrameStreamCloseWakesReader(t *testing.T) {
	c := &pipeConn{in: strings.NewReader(frame(`{"jsonrpc":"2.0","id":1,"method":"m"}`))}
	s := NewServerStream(c, Limits{MaxMessage: 1 << 20, MaxInflight: 1}, nil)
	var req jsonrpc2.Request
	if err := s.ReadObject(&req); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ReadObject(&req) }()
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			t.Fatalf("err %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not wake the reader")
	}
}

func TestMaxMessageBytes(t *testing.T) {
	// A chunk of the largest size, every byte escaped as Go's encoding/json
	// does for <, fits.
	chunk := strings.Repeat("<", 1<<10)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": protocol.MethodSessionAppend,
		"params": protocol.AppendParams{SessionID: strings.Repeat("x", 36), Seq: 1 << 62, Chunk: chunk}})
	if got, limit := int64(len(b)), MaxMessageBytes(1<<10); got > limit {
		t.Fatalf("a full escaped chunk takes %d bytes, over the limit %d", got, limit)
	}
}

// TestAlone: a request is alone only when nothing else of its connection
// is read and unanswered or already arriving, which is when the daemon may
// serve it on the read loop without keeping another waiting.
func TestAlone(t *testing.T) {
	req := func(id int) string {
		return frame(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session.append","params":{}}`)
	}
	tests := []struct {
		name string
		// in is what the client sent before the stream reads; answer
		// says which requests are answered right after being read.
		in     string
		answer []bool
		want   []bool
	}{
		{"OneAtATime", req(1), []bool{true}, []bool{true}},
		{"NextAlreadySent", req(1) + req(2), []bool{true, true}, []bool{false, true}},
		{"EarlierUnanswered", req(1) + req(2), []bool{false, true}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &pipeConn{in: strings.NewReader(tt.in)}
			s := NewServerStream(c, Limits{MaxMessage: 1 << 10}, nil)
			var got []bool
			for i := range tt.want {
				var req jsonrpc2.Request
				if err := s.ReadObject(&req); err != nil {
					t.Fatal(err)
				}
				got = append(got, s.Alone())
				in, _ := s.Take()
				if tt.answer[i] {
					resp := &jsonrpc2.Response{ID: in.RPCID()}
					resp.SetResult("ok")
					if err := s.WriteObject(resp); err != nil {
						t.Fatal(err)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Alone = %v, want %v", got, tt.want)
			}
		})
	}
}

// piecesConn hands its input out one piece per Read and records the read
// deadlines set on it: whether a deadline is pending when each piece is
// read.
type piecesConn struct {
	pipeConn
	pieces   []string
	deadline bool
	// armed records, for each Read, whether a read deadline was set.
	armed []bool
}

func (c *piecesConn) Read(p []byte) (int, error) {
	c.armed = append(c.armed, c.deadline)
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	if c.pieces[0] = c.pieces[0][n:]; c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

func (c *piecesConn) SetReadDeadline(t time.Time) error {
	c.deadline = !t.IsZero()
	return nil
}

// TestReadDeadlines: a read that may wait on a frame already begun has a
// deadline (a client that stalls mid-frame loses its connection), the wait
// for a next frame has none, and a frame that arrived whole is read
// without setting one.
func TestReadDeadlines(t *testing.T) {
	req := frame(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"chunk":"` + strings.Repeat("x", 100) + `"}}`)
	at := strings.Index(req, "\r\n\r\n") + 4
	tests := []struct {
		name   string
		pieces []string
		// armed: whether each read after the first of a frame had a
		// deadline; the last read, which waits for a next frame, never.
		armed []bool
	}{
		{"Whole", []string{req}, []bool{false, false}},
		{"BodyLate", []string{req[:at+10], req[at+10:]}, []bool{false, true, false}},
		{"HeaderLate", []string{req[:5], req[5:]}, []bool{false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &piecesConn{pieces: tt.pieces}
			s := NewServerStream(c, Limits{MaxMessage: 1 << 10, HeaderTimeout: time.Minute}, nil)
			in, err := readRequest(s)
			if err != nil {
				t.Fatal(err)
			}
			resp := &jsonrpc2.Response{ID: in.RPCID()}
			resp.SetResult("ok")
			s.WriteObject(resp)
			var r jsonrpc2.Request
			if err := s.ReadObject(&r); err != io.EOF {
				t.Fatalf("second read: %v, want EOF", err)
			}
			if fmt.Sprint(c.armed) != fmt.Sprint(tt.armed) {
				t.Errorf("deadline set at each read: %v, want %v", c.armed, tt.armed)
			}
		})
	}
}

// TestWriteResponse: a reply written by the stream itself, without the
// Conn, goes out with the id the client sent and frees its request's room;
// once the stream is closed it fails as the Conn's replies do, and still
// frees the room.
func TestWriteResponse(t *testing.T) {
	in := frame(`{"jsonrpc":"2.0","id":"a-1","method":"m"}`) + frame(`{"jsonrpc":"2.0","id":-7,"method":"m"}`)
	c := &pipeConn{in: strings.NewReader(in)}
	s := NewServerStream(c, Limits{MaxMessage: 1 << 20, MaxInflight: 4}, nil)
	first, err := readRequest(s)
	if err != nil {
		t.Fatal(err)
	}
	second, err := readRequest(s)
	if err != nil {
		t.Fatal(err)
	}
	resp := &jsonrpc2.Response{ID: first.RPCID()}
	resp.SetResult(map[string]int{"seq": 1})
	if err := s.WriteResponse(resp); err != nil {
		t.Fatal(err)
	}
	if got := readReplies(t, c.written()); len(got) != 1 || got[0].String() != `"a-1":ok` || string(got[0].Result) != `{"seq":1}` {
		t.Fatalf("replies %v, want the result to \"a-1\"", got)
	}
	if s.inflight != 1 {
		t.Fatalf("%d requests hold room after the first reply, want 1", s.inflight)
	}
	s.Close()
	resp = &jsonrpc2.Response{ID: second.RPCID()}
	resp.SetResult(true)
	if err := s.WriteResponse(resp); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("a reply after Close: %v, want jsonrpc2.ErrClosed", err)
	}
	if s.inflight != 0 || len(s.ids) != 0 {
		t.Fatalf("after Close: %d requests, %d ids hold room", s.inflight, len(s.ids))
	}
}
