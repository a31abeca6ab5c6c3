package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Input that fits one chunk is written with one session.write; larger
// input streams through a session as before.
func TestWriteWhole(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "4096")
	small := strings.Repeat("small\n", 100) // 600 bytes
	code, out, errOut := orionctl(t, d.Socket, small, "write", filepath.Join(d.Root, "small.txt"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res protocol.FinalizeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	code, out, _ = orionctl(t, d.Socket, "", "trace", res.SessionID)
	if code != 0 || !strings.Contains(out, "REQUEST SESSION.WRITE: ✅") || strings.Contains(out, "APPEND") {
		t.Errorf("the small file's trace is not one session.write:\n%s", out)
	}

	large := strings.Repeat("a larger line\n", 1000) // 14,000 bytes: four chunks
	code, out, errOut = orionctl(t, d.Socket, large, "write", filepath.Join(d.Root, "large.txt"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	code, out, _ = orionctl(t, d.Socket, "", "trace", res.SessionID)
	if code != 0 || !strings.Contains(out, "APPEND") {
		t.Errorf("the large file's trace has no appends:\n%s", out)
	}
	for name, want := range map[string]string{"small.txt": small, "large.txt": large} {
		if got, _ := os.ReadFile(filepath.Join(d.Root, name)); string(got) != want {
			t.Errorf("%s: %d bytes, want %d", name, len(got), len(want))
		}
	}

	// A refused write says why and leaves no session open or kept.
	code, _, errOut = orionctl(t, d.Socket, "{\"a\": 1,\n", "write", filepath.Join(d.Root, "bad.json"))
	if code != exitFailure || !strings.Contains(errOut, "Nothing was written") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "list", "--all", "--json")
	if code != 0 || strings.Contains(out, "needs_corrections") || !strings.Contains(out, "aborted") {
		t.Errorf("sessions after the refusal:\n%s", out)
	}
}

// TestWholeInputFromAFile: a regular file up to the limit is read whole,
// byte for byte (read into a buffer of its size, the empty file too); a
// larger one is left to stream, nothing of it read.
func TestWholeInputFromAFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content string
		all     bool
	}{
		{"Empty", "", true},
		{"Small", "line 1\nline 2\n", true},
		{"AtTheLimit", strings.Repeat("x", 64), true},
		{"OverTheLimit", strings.Repeat("x", 65), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			head, all, rest, err := wholeInput(f, 64)
			if err != nil || all != tc.all {
				t.Fatalf("wholeInput = all %v, %v; want all %v", all, err, tc.all)
			}
			if all {
				if string(head) != tc.content {
					t.Errorf("read %q, want %q", head, tc.content)
				}
				return
			}
			b, err := io.ReadAll(rest)
			if err != nil || string(b) != tc.content {
				t.Errorf("the rest to stream is %d bytes (%v), want the whole file's %d", len(b), err, len(tc.content))
			}
		})
	}
}
