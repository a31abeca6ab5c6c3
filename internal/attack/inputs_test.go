package attack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// The tests in this file speak the wire as a client would: reasons and
// limits are spelled out, not taken from package protocol, so they say
// what a client can rely on (and they build against older daemons, on
// which they fail).

// beginRaw is session.begin with params written out as JSON, for values a
// typed client would never send.
func (r *rpc) beginRaw(params string) (protocol.BeginResult, *jsonrpc2.Error) {
	r.t.Helper()
	var b protocol.BeginResult
	je := r.call(protocol.MethodSessionBegin, json.RawMessage(params), &b)
	return b, je
}

// wantReason fails the test unless je is a daemon error with this reason
// and, when field is not empty, naming this field.
func wantReason(t *testing.T, what string, je *jsonrpc2.Error, reason, field string) {
	t.Helper()
	if je == nil {
		t.Fatalf("%s: accepted, want %s", what, reason)
	}
	var d struct {
		Reason string `json:"reason"`
		Field  string `json:"field"`
		Limit  int64  `json:"limit"`
	}
	if je.Data != nil {
		json.Unmarshal(*je.Data, &d)
	}
	if d.Reason != reason || (field != "" && d.Field != field) {
		t.Fatalf("%s: code %d reason %q field %q (%s), want %s on %s", what, je.Code, d.Reason, d.Field, je.Message, reason, field)
	}
	if reason == "field_too_large" && d.Limit <= 0 {
		t.Fatalf("%s: field_too_large without its limit: %s", what, rawData(je))
	}
	if len(je.Message) > 1024 {
		t.Fatalf("%s: the error message is %d bytes: it quotes the value", what, len(je.Message))
	}
}

// TestHugeIntentRefused: a 50 MB intent was stored in the session record
// and returned by every session.list (73 MB). Now it, and one that would
// fit any frame limit, are refused with field_too_large; a 4 KiB intent
// is still accepted, and session.list stays small.
func TestHugeIntentRefused(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	target := func(name string) string { return d.Root + "/" + name }

	// The 50 MB request goes out as raw bytes: encoding it with
	// encoding/json would take longer than the daemon takes to refuse it.
	// Under the race detector the daemon decodes JSON at a few MB/s, so
	// there it is 2 MB: still 500 times the limit, and over any frame
	// limit of --max-chunk-bytes (1 MiB) plus overhead.
	size := 50 << 20
	if testdaemon.Race {
		size = 2 << 20
	}
	intent := strings.Repeat("x", size)
	body := `{"jsonrpc":"2.0","id":1,"method":"session.begin","params":{"target_file":"` + target("huge.txt") +
		`","operation":"create","intent":"` + intent + `"}}`
	start := time.Now()
	answer, err := rawCall(d, body)
	t.Logf("%d MB intent answered in %v: %.300s", size>>20, time.Since(start), answer)
	switch {
	case err != nil:
		// A frame limit in front of the params may close the connection
		// instead; the intent is refused either way.
		t.Logf("the huge intent: the connection was closed: %v", err)
	case strings.Contains(answer, `"reason":"message_too_large"`):
		// The frame reader refuses it from its Content-Length alone,
		// before the params are read (see the transport tests).
	case !strings.Contains(answer, `"reason":"field_too_large"`) || !strings.Contains(answer, `"field":"intent"`):
		t.Fatalf("a %d MB intent answered %.500s, want message_too_large or field_too_large on intent", size>>20, answer)
	}
	var b protocol.BeginResult
	for i := range 4 {
		p := protocol.BeginParams{Intent: strings.Repeat("y", 256<<10), TargetFile: target(fmt.Sprintf("big%d.txt", i)), Operation: protocol.OpCreate}
		_, je := r.beginRaw(string(mustJSON(t, p)))
		wantReason(t, "256 KiB intent", je, "field_too_large", "intent")
	}
	ok := protocol.BeginParams{Intent: strings.Repeat("z", 4096), TargetFile: target("ok.txt"), Operation: protocol.OpCreate}
	r.must(protocol.MethodSessionBegin, ok, &b)

	var list json.RawMessage
	r.must(protocol.MethodSessionList, protocol.ListParams{All: true}, &list)
	if len(list) > 16<<10 {
		t.Fatalf("session.list answered %d bytes for one session", len(list))
	}
	var res protocol.ListResult
	json.Unmarshal(list, &res)
	if len(res.Sessions) != 1 {
		t.Fatalf("%d sessions listed, want only the 4 KiB one", len(res.Sessions))
	}
}

// TestOversizedFieldsRefused: every other string a client sends is bounded
// too: paths, ids, method names, patch_spec, tx file lists, trace filters.
func TestOversizedFieldsRefused(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	long := func(n int) string { return strings.Repeat("a", n) }
	files := make([]protocol.BeginParams, 257)
	for i := range files {
		files[i] = protocol.BeginParams{TargetFile: fmt.Sprintf("%s/f%d", d.Root, i), Operation: protocol.OpCreate}
	}
	for _, tc := range []struct {
		name, method string
		params       any
		field        string
	}{
		{"TargetFile", protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/" + long(8192), Operation: protocol.OpCreate}, "target_file"},
		{"WorkspaceRoot", protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: "a", WorkspaceRoot: d.Root + "/" + long(8192), Operation: protocol.OpCreate}, "workspace_root"},
		{"Supersedes", protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/a", Operation: protocol.OpCreate, Supersedes: long(64 << 10)}, "supersedes"},
		{"PatchSpec", protocol.MethodSessionBegin, json.RawMessage(`{"target_file":"` + d.Root + `/a","operation":"patch","patch_spec":{"type":"insert_after_marker","marker":"` + long(64<<10) + `"}}`), "patch_spec"},
		{"SessionID", protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: long(64 << 10)}, "session_id"},
		{"AppendSessionID", protocol.MethodSessionAppend, protocol.AppendParams{SessionID: long(64 << 10), Seq: 1, Chunk: "x"}, "session_id"},
		{"TxFiles", protocol.MethodTxBegin, protocol.TxBeginParams{Files: files}, "files"},
		{"TxIntent", protocol.MethodTxBegin, protocol.TxBeginParams{Intent: long(64 << 10), Files: files[:1]}, "intent"},
		{"TraceTypes", protocol.MethodTraceList, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{Types: []string{long(64 << 10)}}}, "types[0]"},
		{"Method", long(16 << 10), struct{}{}, "method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantReason(t, tc.name, r.call(tc.method, tc.params, nil), "field_too_large", tc.field)
		})
	}
	var list protocol.ListResult
	r.must(protocol.MethodSessionList, protocol.ListParams{All: true}, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("refused requests left %d sessions", len(list.Sessions))
	}
}

// TestOutOfRangeDurationsRefused: auto_finalize_ms or idle_ms of 2^63-1
// overflowed and truncated the session after 2 ms. Negative and overlong
// durations are refused with invalid_duration; the longest allowed (24 h)
// is kept: the session is still streaming a while later.
func TestOutOfRangeDurationsRefused(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	target := d.Root + "/slow.txt"
	for _, tc := range []struct{ field, value string }{
		{"auto_finalize_ms", "9223372036854775807"},
		{"idle_ms", "9223372036854775807"},
		{"auto_finalize_ms", "86400001"},
		{"idle_ms", "-1"},
		{"auto_finalize_ms", "-9223372036854775808"},
	} {
		_, je := r.beginRaw(fmt.Sprintf(`{"target_file":%q,"operation":"create",%q:%s}`, target, tc.field, tc.value))
		wantReason(t, tc.field+"="+tc.value, je, "invalid_duration", tc.field)
	}
	je := r.call(protocol.MethodTxBegin, json.RawMessage(fmt.Sprintf(
		`{"files":[{"target_file":%q,"operation":"create","auto_finalize_ms":%d}]}`, target, int64(math.MaxInt64))), nil)
	wantReason(t, "tx.begin auto_finalize_ms=2^63-1", je, "invalid_duration", "files[0].auto_finalize_ms")
	je = r.call(protocol.MethodSessionClean, json.RawMessage(`{"older_than_ms":9223372036854775807}`), nil)
	wantReason(t, "session.clean older_than_ms=2^63-1", je, "invalid_duration", "older_than_ms")

	b, je := r.beginRaw(fmt.Sprintf(`{"target_file":%q,"operation":"create","auto_finalize_ms":86400000,"idle_ms":86400000}`, target))
	if je != nil {
		t.Fatalf("the longest durations allowed were refused: %v %s", je, rawData(je))
	}
	r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "no marker yet\n"}, nil)
	time.Sleep(300 * time.Millisecond)
	var info protocol.SessionInfo
	r.must(protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: b.SessionID}, &info)
	if info.Stage != protocol.StageStreaming {
		t.Fatalf("a session with a 24h auto-finalize is %s after 300ms", info.Stage)
	}
}

// appendRaw is session.append with params written out as JSON, invalid
// UTF-8 and lone surrogate escapes included.
func (r *rpc) appendRaw(params string) *jsonrpc2.Error {
	r.t.Helper()
	return r.call(protocol.MethodSessionAppend, json.RawMessage(params), nil)
}

// TestInvalidUTF8ChunkRefused: a chunk with invalid UTF-8 was stored with
// U+FFFD in place of the bytes, and the ack counted the replacement. Now it
// is refused with invalid_utf8, and so is a lone surrogate escape (what a
// client that cuts UTF-16 strings between the halves of an emoji sends);
// nothing is stored or counted and the seq stays free.
func TestInvalidUTF8ChunkRefused(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	var b protocol.BeginResult
	r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/u.txt", Operation: protocol.OpCreate}, &b)
	for name, chunk := range map[string]string{
		"InvalidByte":    "caf\xe9\\n",
		"CutRune":        "smile \xf0\x9f\x98",
		"LoneHigh":       `smile \ud83d`,
		"LoneLow":        `\ude00 smile`,
		"HighThenLetter": `\ud83dA`,
	} {
		je := r.appendRaw(`{"session_id":"` + b.SessionID + `","seq":1,"chunk":"` + chunk + `"}`)
		wantReason(t, name, je, "invalid_utf8", "chunk")
	}
	var info protocol.SessionInfo
	r.must(protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: b.SessionID}, &info)
	if info.LastSeq != 0 || info.Bytes != 0 {
		t.Fatalf("after refused chunks: last_seq %d, bytes %d; want nothing stored", info.LastSeq, info.Bytes)
	}
	// Whole characters, escaped or not, and a real U+FFFD still go through.
	var ack protocol.AppendResult
	if je := r.appendRaw(`{"session_id":"` + b.SessionID + `","seq":1,"chunk":"\ud83d\ude00 caf\u00e9 \ufffd\n"}`); je != nil {
		t.Fatalf("valid chunk refused: %v %s", je, rawData(je))
	}
	r.must(protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: b.SessionID}, &info)
	if want := int64(len("\U0001F600 café \uFFFD\n")); info.LastSeq != 1 || info.Bytes != want {
		t.Fatalf("after the valid chunk: last_seq %d, bytes %d; want 1, %d (ack %+v)", info.LastSeq, info.Bytes, want, ack)
	}
}

// TestNullChunkRefused: chunk null (or no chunk at all) was taken as an
// empty chunk and used up its seq. Now it is refused with missing_field and
// the seq stays free; an empty string is still a chunk (a client may flush
// an empty piece of a stream), and takes its seq.
func TestNullChunkRefused(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	var b protocol.BeginResult
	r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/n.txt", Operation: protocol.OpCreate}, &b)
	wantReason(t, "chunk null", r.appendRaw(`{"session_id":"`+b.SessionID+`","seq":1,"chunk":null}`), "missing_field", "chunk")
	wantReason(t, "no chunk", r.appendRaw(`{"session_id":"`+b.SessionID+`","seq":1}`), "missing_field", "chunk")
	var info protocol.SessionInfo
	r.must(protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: b.SessionID}, &info)
	if info.LastSeq != 0 {
		t.Fatalf("a refused chunk used up seq %d", info.LastSeq)
	}
	var ack protocol.AppendResult
	r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "first\n"}, &ack)
	if ack.Duplicate || ack.Bytes != 6 {
		t.Fatalf("seq 1 after the refusals: %+v, want a new chunk of 6 bytes", ack)
	}
	r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: ""}, &ack)
	if ack.Seq != 2 || ack.Bytes != 6 {
		t.Fatalf("empty chunk: %+v, want seq 2 acknowledged with nothing added", ack)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawCall writes body as one Content-Length frame on a new connection and
// returns the body of the first answer.
func rawCall(d *testdaemon.Daemon, body string) (string, error) {
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	go func() {
		fmt.Fprintf(c, "Content-Length: %d\r\n\r\n", len(body))
		io.WriteString(c, body)
	}()
	br := bufio.NewReader(c)
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	out := make([]byte, n)
	_, err = io.ReadFull(br, out)
	return string(out), err
}
