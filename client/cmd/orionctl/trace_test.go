package main

import (
	"github.com/rivo/uniseg"

	"bytes"
	"context"
	"encoding/json"
	"flag"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

var update = flag.Bool("update", false, "rewrite golden files")

// unwrapLadder joins what the ladder wrapped to fit its box: each line
// without its frame and indentation, glued to the next, so that a long
// value reads in one piece (and no assertion depends on where it wrapped).
func unwrapLadder(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.TrimRight(l, "\r"))
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "│"), "│"))
		b.WriteString(l)
	}
	return b.String()
}

func TestEventLine(t *testing.T) {
	ev := protocol.TraceEvent{
		Time: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC), Type: "request", SessionID: "0123456789abcdef",
		Method: "session.append", Fields: json.RawMessage(`{"seq":3,"error":"bad \u001b[31m\nthing","none":null,"list":[1,"a"]}`),
	}
	got := eventLine(ev)
	want := `2026-01-02T03:04:05.006Z  request          01234567  session.append    error=bad \x1b[31m\nthing list=[1,"a"] seq=3`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"15m":                  now.Add(-15 * time.Minute),
		"2026-01-02T15:04:05Z": time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		"2026-01-02":           time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-5m", "yesterday", "2026-13-01"} {
		if _, err := parseWhen(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	code, _, errOut := orionctl(t, "/nonexistent.sock", "", "trace", "--since", "yesterday")
	if code != exitUsage || !strings.Contains(errOut, "--since") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = orionctl(t, "/nonexistent.sock", "", "trace", "--follow", "--export")
	if code != exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestTraceOfARealSession(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "traced.md")
	// An explicit chunk size streams the input through begin, append and
	// finalize, whose ladder this checks (small input otherwise takes one
	// session.write).
	code, out, errOut := orionctl(t, d.Socket, "# Traced\n\nbody \x00 with a NUL\n", "write", target, "--json", "--chunk-size", "4096")
	if code != 0 {
		t.Fatalf("write: exit %d: %s", code, errOut)
	}
	var res protocol.FinalizeResult
	json.Unmarshal([]byte(out), &res)

	code, out, errOut = orionctl(t, d.Socket, "", "trace", res.SessionID)
	if code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"WRITE SESSION TRACE: " + res.SessionID, "BEGIN: ✅", "APPEND: ✅", "FINALIZE: ✅",
		"SHA256: " + res.SHA256, "finalizing → completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the ladder lacks %q:\n%s", want, out)
		}
	}
	// The target is the temp directory's path, of any length: the ladder
	// may wrap it or cut its middle, never its file name.
	if !regexp.MustCompile(`Wrote:[^,]*/` + regexp.QuoteMeta(filepath.Base(target)) + `,`).MatchString(unwrapLadder(out)) {
		t.Errorf("the ladder does not say it wrote %s:\n%s", filepath.Base(target), out)
	}

	code, out, errOut = orionctl(t, d.Socket, "", "trace", "--export", res.SessionID)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 6 {
		t.Fatalf("%d exported events:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var ev protocol.TraceEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.SessionID != res.SessionID {
			t.Fatalf("export line %q: %v", l, err)
		}
	}

	code, out, _ = orionctl(t, d.Socket, "", "trace", "--type", "session.*", "--json")
	var list protocol.TraceListResult
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Events) == 0 {
		t.Fatalf("trace --json: exit %d, %v\n%s", code, err, out)
	}
	for _, ev := range list.Events {
		if !strings.HasPrefix(string(ev.Type), "session.") {
			t.Fatalf("--type session.* listed %s", ev.Type)
		}
	}
	code, _, errOut = orionctl(t, d.Socket, "", "trace", "no-such-session")
	if code != exitFailure || !strings.Contains(errOut, "no trace events") {
		t.Fatalf("unknown session: exit %d: %s", code, errOut)
	}
}

// TestTraceOfFoldedAppends: oriond folds a session's appends into one
// event; the ladder still shows the run, its seqs, bytes and end marker.
func TestTraceOfFoldedAppends(t *testing.T) {
	d := testdaemon.Start(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b protocol.BeginResult
	if err := c.Call(ctx, protocol.MethodSessionBegin, protocol.BeginParams{
		TargetFile: filepath.Join(d.Root, "folded.md"), Operation: protocol.OpCreate}, &b); err != nil {
		t.Fatal(err)
	}
	chunks := []string{"one\n", "two\n", "three\n", b.EndMarker + "\n"}
	for i, chunk := range chunks {
		if err := c.Call(ctx, protocol.MethodSessionAppend, protocol.AppendParams{
			SessionID: b.SessionID, Seq: uint64(i + 1), Chunk: chunk}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Call(ctx, protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := orionctl(t, d.Socket, "", "trace", b.SessionID)
	if code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"BEGIN: ✅", "APPEND ×4: ✅", "Chunks: seq 1–4 (4 requests)", "Received: 14 bytes",
		"End marker: seen at seq 4", "in all, the slowest", "FINALIZE: ✅"} {
		if !strings.Contains(out, want) {
			t.Errorf("the ladder lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = orionctl(t, d.Socket, "", "trace", "--export", "--type", "request", b.SessionID)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if got := strings.Count(out, `"method":"session.append"`); got != 1 {
		t.Errorf("%d append events, want 1 for the 4 appends:\n%s", got, out)
	}
}

// syncBuffer is a buffer the follower writes while the test reads.
type syncBuffer struct {
	ch chan string
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.ch <- string(p)
	return len(p), nil
}

func TestTraceFollow(t *testing.T) {
	d := testdaemon.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{ch: make(chan string, 1000)}
	done := make(chan int, 1)
	go func() {
		var errOut bytes.Buffer
		done <- run(ctx, []string{"--socket", d.Socket, "trace", "--follow", "--type", "session.write"}, strings.NewReader(""), out, &errOut)
		_ = errOut
	}()
	// Write until the follower shows a write: it may subscribe after the
	// first one, which the backlog then shows.
	target := filepath.Join(d.Root, "followed.txt")
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		if code, _, errOut := orionctl(t, d.Socket, "x\n", "write", "--op", "overwrite", target); code != 0 {
			t.Fatalf("write: %s", errOut)
		}
		select {
		case line := <-out.ch:
			// The line cuts a long target (the temp directory's path,
			// of any length); the content's hash tells it is this write.
			if !strings.Contains(line, "session.write") || !strings.Contains(line, " target=") ||
				!strings.Contains(line, "sha256=73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac") {
				t.Fatalf("followed %q", line)
			}
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("follow exited %v after its context ended", code)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no session.write followed")
		}
	}
}

// A value too long for the event line is cut in the middle: a long
// target keeps its file name, however long the directories before it.
func TestClipKeepsTheFileName(t *testing.T) {
	for _, dirs := range []int{1, 5, 20} {
		path := "/" + strings.Repeat("a-long-directory-name/", dirs) + "the-file.md"
		got := clip(path, 80)
		if w := uniseg.StringWidth(got); w > 80 {
			t.Errorf("%d dirs: %q is %d columns, over 80", dirs, got, w)
		}
		if !strings.HasSuffix(got, "/the-file.md") || !strings.HasPrefix(got, "/a-long") {
			t.Errorf("%d dirs: %q lost the start or the file name", dirs, got)
		}
		if uniseg.StringWidth(path) > 80 && !strings.Contains(got, "…") {
			t.Errorf("%d dirs: %q is cut without a mark", dirs, got)
		}
	}
	if got := clip(strings.Repeat("🎉", 100), 80); uniseg.StringWidth(got) > 80 || !strings.Contains(got, "…") {
		t.Errorf("wide graphemes: %q", got)
	}
}
