package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// sendRaw sends one request whose last bytes, raw, are content, after the
// JSON body: Content-Length counts both, Orion-Raw-Length the raw bytes.
func (c *frameConn) sendRaw(body, content string) {
	c.t.Helper()
	c.sendFrame("Content-Length: "+strconv.Itoa(len(body)+len(content))+"\r\n"+
		protocol.HeaderRawLength+": "+strconv.Itoa(len(content))+"\r\n\r\n", body+content)
}

// sendFrame sends header, which ends with its blank line, and body as they
// are.
func (c *frameConn) sendFrame(header, body string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c.c, header+body); err != nil {
		c.t.Fatal(err)
	}
}

// appendJSON is the params of an append without its chunk.
func appendJSON(id string, seq int) string {
	return `{"session_id":` + strconv.Quote(id) + `,"seq":` + strconv.Itoa(seq) + `}`
}

func appendRequest(rid int, params string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(rid) + `,"method":"session.append","params":` + params + `}`
}

// TestRawAndJSONChunksInOneSession appends to one session chunks sent raw
// and chunks sent as JSON strings, in turns, through a client that writes
// frames by hand and through the Go client, and reads the content back
// byte for byte: from the journal (session.content) and from the file
// written.
func TestRawAndJSONChunksInOneSession(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	st, err := c.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Features, protocol.FeatureRawContent) {
		t.Fatalf("daemon.status features %q, want %q", st.Features, protocol.FeatureRawContent)
	}

	begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "mixed.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	// Every kind of byte a JSON string escapes, and characters of every
	// UTF-8 length; a raw chunk of zero bytes too.
	pieces := []string{
		"plain line\n",
		"\"quotes\" and \\backslashes\\ and \x00\x01\x1f controls\t\r\n",
		"",
		"<html>&amp;</html> héllo 日本語 🚀 \u2028\u2029\n",
		strings.Repeat("0123456789abcdef", 5000) + "\n",
		"{\"looks\":\"like json\"}\r\n\r\nContent-Length: 3\r\n\r\n{}\n",
	}
	fc := dialFrames(t, d)
	var want strings.Builder
	seq := 0
	for round := range 2 {
		for i, p := range pieces {
			seq++
			raw := (i+round)%2 == 0
			if raw {
				fc.sendRaw(appendRequest(seq, appendJSON(begun.SessionID, seq)), p)
			} else {
				chunk, _ := json.Marshal(p)
				fc.send(appendRequest(seq, `{"session_id":`+strconv.Quote(begun.SessionID)+`,"seq":`+strconv.Itoa(seq)+`,"chunk":`+string(chunk)+`}`))
			}
			r := fc.reply()
			if r.Error != nil {
				t.Fatalf("seq %d (raw %v): %s", seq, raw, r)
			}
			var ack protocol.AppendResult
			if err := json.Unmarshal(r.Result, &ack); err != nil {
				t.Fatal(err)
			}
			want.WriteString(p)
			if ack.Seq != uint64(seq) || ack.Bytes != int64(want.Len()) {
				t.Fatalf("seq %d (raw %v): acknowledged seq %d, %d bytes; want %d bytes", seq, raw, ack.Seq, ack.Bytes, want.Len())
			}
		}
	}
	// The Go client's own chunks, large enough that it asks and sends
	// them raw, then a small one.
	rng := rand.New(rand.NewPCG(1, 2))
	tail := sampleFile(rng, 3000)
	last, _, err := c.Stream(testCtx(t), begun.SessionID, strings.NewReader(tail), client.StreamOptions{ChunkSize: 32 << 10, FirstSeq: uint64(seq + 1)})
	if err != nil {
		t.Fatal(err)
	}
	want.WriteString(tail)
	if last.Bytes != int64(want.Len()) {
		t.Fatalf("after the Go client's stream: %d bytes acknowledged, want %d", last.Bytes, want.Len())
	}
	small := "the last line\n"
	if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: last.Seq + 1, Chunk: small}); err != nil {
		t.Fatal(err)
	}
	want.WriteString(small)

	got, err := c.Content(testCtx(t), protocol.ContentParams{SessionID: begun.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != want.String() {
		t.Fatalf("session.content differs from what was sent: %d bytes, sent %d", len(got.Content), want.Len())
	}
	if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(d.Root, "mixed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The file's few CRLF line endings are matched to the rest, a repair
	// of finalize's; nothing else is changed.
	if !bytes.Equal(file, []byte(strings.ReplaceAll(want.String(), "\r\n", "\n"))) {
		t.Fatalf("the file differs from what was sent: %d bytes, sent %d", len(file), want.Len())
	}
}

// TestRawContentRefusals sends each kind of broken raw frame: each is
// refused with its reason, nothing of it is stored, and what was
// acknowledged before stays.
func TestRawContentRefusals(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "1024")
	c := dial(t, d)
	begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "refused.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	id := begun.SessionID
	fc := dialFrames(t, d)
	fc.sendRaw(appendRequest(1, appendJSON(id, 1)), "kept\n")
	if r := fc.reply(); r.Error != nil {
		t.Fatal(r)
	}

	// Refused with the request's id: the connection stays usable.
	for _, tc := range []struct {
		name, body, content string
		code                int64
		reason, field       string
	}{
		{"MethodTakesNone", `{"jsonrpc":"2.0","id":7,"method":"daemon.status"}`, "x",
			protocol.CodeInvalidParams, protocol.ReasonRawContentNotTaken, ""},
		{"MethodTakesNoneEvenEmpty", `{"jsonrpc":"2.0","id":7,"method":"session.get","params":{"session_id":"` + id + `"}}`, "",
			protocol.CodeInvalidParams, protocol.ReasonRawContentNotTaken, ""},
		{"ChunkInJSONToo", appendRequest(7, `{"session_id":"`+id+`","seq":2,"chunk":"x"}`), "y",
			protocol.CodeInvalidParams, protocol.ReasonContentSentTwice, "chunk"},
		{"ChunkInJSONTooGeneralDecoder", appendRequest(7, `{"chunk":"x","seq":2,"session_id":"`+id+`","extra":1}`), "y",
			protocol.CodeInvalidParams, protocol.ReasonContentSentTwice, "chunk"},
		{"InvalidUTF8", appendRequest(7, appendJSON(id, 2)), "caf\xe9\n",
			protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8, "chunk"},
		{"HalfACharacter", appendRequest(7, appendJSON(id, 2)), "\xe6\x97",
			protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8, "chunk"},
		{"OverTheChunkLimit", appendRequest(7, appendJSON(id, 2)), strings.Repeat("x", 1025),
			protocol.CodeTooLarge, protocol.ReasonChunkTooLarge, ""},
		{"NoSeq", appendRequest(7, `{"session_id":"`+id+`"}`), "x",
			protocol.CodeInvalidParams, protocol.ReasonSeqZero, "seq"},
		{"NotJSON", `{"jsonrpc":"2.0","id":7,`, "x",
			protocol.CodeParseError, protocol.ReasonInvalidJSON, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc.sendRaw(tc.body, tc.content)
			r := fc.reply()
			if r.Error == nil || r.Error.Code != tc.code || r.Error.Data.Reason != tc.reason || r.Error.Data.Field != tc.field {
				t.Fatalf("got %s (field %q), want code %d, reason %s, field %q", r, errField(r), tc.code, tc.reason, tc.field)
			}
			if tc.reason != protocol.ReasonInvalidJSON && string(r.ID) != "7" {
				t.Fatalf("refused with id %s, want 7", r.ID)
			}
		})
	}
	// After every refusal, seq 2 is still the next one: nothing refused was
	// stored.
	fc.sendRaw(appendRequest(8, appendJSON(id, 2)), "next\n")
	if r := fc.reply(); r.Error != nil {
		t.Fatalf("seq 2 after the refusals: %s", r)
	}

	// Frames that cannot be read: answered with id null, then the
	// connection closes. Each on a connection of its own.
	for _, tc := range []struct {
		name, frame string
		reason      string
	}{
		{"RawLongerThanBody", "Content-Length: 2\r\n" + protocol.HeaderRawLength + ": 3\r\n\r\n{}", protocol.ReasonMalformedFrame},
		{"RawNotANumber", "Content-Length: 2\r\n" + protocol.HeaderRawLength + ": -1\r\n\r\n{}", protocol.ReasonMalformedFrame},
		{"RawEmpty", "Content-Length: 2\r\n" + protocol.HeaderRawLength + ":\r\n\r\n{}", protocol.ReasonMalformedFrame},
		{"RawTwiceDisagreeing", "Content-Length: 2\r\n" + protocol.HeaderRawLength + ": 1\r\n" + protocol.HeaderRawLength + ": 2\r\n\r\n{}", protocol.ReasonMalformedFrame},
		{"RawHuge", "Content-Length: 2\r\n" + protocol.HeaderRawLength + ": 99999999999999999999\r\n\r\n{}", protocol.ReasonMalformedFrame},
		{"OverTheMessageLimit", "Content-Length: 99999999\r\n" + protocol.HeaderRawLength + ": 99999000\r\n\r\n", protocol.ReasonMessageTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := dialFrames(t, d)
			fc.sendFrame(tc.frame, "")
			r := fc.reply()
			if r.Error == nil || r.Error.Data.Reason != tc.reason || string(r.ID) != "null" {
				t.Fatalf("got %s, want reason %s with id null", r, tc.reason)
			}
			fc.c.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := fc.r.ReadByte(); !errors.Is(err, io.EOF) {
				t.Fatalf("after %s the connection was not closed (%v)", tc.reason, err)
			}
		})
	}

	// A frame cut short: the connection ends, and nothing of it is stored.
	cut := dialFrames(t, d)
	body := appendRequest(9, appendJSON(id, 3))
	cut.sendFrame("Content-Length: "+strconv.Itoa(len(body)+100)+"\r\n"+protocol.HeaderRawLength+": 100\r\n\r\n", body+"only forty bytes of the hundred promised")
	cut.c.Close()

	fc.send(`{"jsonrpc":"2.0","id":10,"method":"session.get","params":{"session_id":"` + id + `"}}`)
	r := fc.reply()
	var info protocol.SessionInfo
	if r.Error != nil {
		t.Fatal(r)
	}
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	if info.LastSeq != 2 || info.Bytes != int64(len("kept\nnext\n")) {
		t.Fatalf("after the refusals the session holds seq %d, %d bytes; want seq 2, %d bytes", info.LastSeq, info.Bytes, len("kept\nnext\n"))
	}
	got, err := c.Content(testCtx(t), protocol.ContentParams{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "kept\nnext\n" {
		t.Fatalf("the session holds %q", got.Content)
	}
}

func errField(r frameReply) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Data.Field
}

// TestRawWrite writes whole files with session.write, their content sent
// raw by hand and by the Go client, and reads them back byte for byte; a
// refused content gets the same reason raw as in JSON.
func TestRawWrite(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "65536")
	fc := dialFrames(t, d)
	write := func(rid int, name, content string, raw bool) frameReply {
		t.Helper()
		begin := `"target_file":` + strconv.Quote(filepath.Join(d.Root, name)) + `,"operation":"create"`
		if raw {
			fc.sendRaw(`{"jsonrpc":"2.0","id":`+strconv.Itoa(rid)+`,"method":"session.write","params":{`+begin+`}}`, content)
		} else {
			q, _ := json.Marshal(content)
			fc.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(rid) + `,"method":"session.write","params":{` + begin + `,"content":` + string(q) + `}}`)
		}
		return fc.reply()
	}
	content := "package main\n\n// \"quoted\" \\ <tag> & é 日本 🚀\x00\nfunc main() {}\n"
	if r := write(1, "main.go", content, true); r.Error != nil {
		t.Fatal(r)
	}
	if got, err := os.ReadFile(filepath.Join(d.Root, "main.go")); err != nil || string(got) != content {
		t.Fatalf("the file holds %q (%v), sent %q", got, err, content)
	}
	if r := write(2, "empty.txt", "", true); r.Error != nil {
		t.Fatal(r)
	}
	if got, err := os.ReadFile(filepath.Join(d.Root, "empty.txt")); err != nil || len(got) != 0 {
		t.Fatalf("the empty file holds %q (%v)", got, err)
	}

	// Refusals: the same reason whichever way the content came.
	for _, tc := range []struct{ name, content string }{
		{"OverTheLimit", strings.Repeat("x", 65537)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asJSON, asRaw := write(3, "json-"+tc.name, tc.content, false), write(4, "raw-"+tc.name, tc.content, true)
			if asJSON.Error == nil || asRaw.Error == nil || asJSON.Error.Data.Reason != asRaw.Error.Data.Reason || asJSON.Error.Code != asRaw.Error.Code {
				t.Fatalf("in JSON: %s; raw: %s; want one refusal", asJSON, asRaw)
			}
		})
	}
	fc.sendRaw(`{"jsonrpc":"2.0","id":5,"method":"session.write","params":{"target_file":`+strconv.Quote(filepath.Join(d.Root, "twice.txt"))+`,"operation":"create","content":"a"}}`, "b")
	if r := fc.reply(); r.Error == nil || r.Error.Data.Reason != protocol.ReasonContentSentTwice || r.Error.Data.Field != "content" {
		t.Fatalf("content in the JSON and raw: %s, want %s", r, protocol.ReasonContentSentTwice)
	}
	fc.sendRaw(`{"jsonrpc":"2.0","id":6,"method":"session.write","params":{"target_file":`+strconv.Quote(filepath.Join(d.Root, "latin1.txt"))+`,"operation":"create"}}`, "caf\xe9\n")
	if r := fc.reply(); r.Error == nil || r.Error.Data.Reason != protocol.ReasonInvalidUTF8 {
		t.Fatalf("content not UTF-8: %s, want %s", r, protocol.ReasonInvalidUTF8)
	}
	for _, name := range []string{"twice.txt", "latin1.txt", "raw-OverTheLimit"} {
		if _, err := os.Stat(filepath.Join(d.Root, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s was written after a refusal (%v)", name, err)
		}
	}

	// The Go client, which sends a large file's content raw.
	c := dial(t, d)
	big := sampleFile(rand.New(rand.NewPCG(3, 4)), 3000)
	big = big[:strings.LastIndexByte(big[:min(len(big), 60000)], '\n')+1]
	if _, err := c.Write(testCtx(t), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "big.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}, Content: big}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(d.Root, "big.txt")); err != nil || string(got) != big {
		t.Fatalf("big.txt holds %d bytes (%v), sent %d", len(got), err, len(big))
	}
}
