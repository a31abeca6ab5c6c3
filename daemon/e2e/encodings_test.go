package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestEncodingsCorpus edits, through the real daemon, files in each form a
// checkout holds (testdata/encodings: UTF-8, byte order marks, CRLF,
// mixed endings, no final newline, Latin-1, Windows-1252, UTF-16 with and
// without a mark, Shift_JIS, named by .editorconfig or .gitattributes or
// detected), as a model writes: UTF-8, LF. Each case's file must become
// want byte for byte (so every byte outside the edit is kept), or be
// refused with reason and left as it was.
//
// A case is a directory: file.txt (the file before; absent for a create;
// called as the file name says, when there is one),
// edit (what the session sends), op (edit, overwrite, append, create),
// want or reason, and optionally repair (a repair the result must report),
// editorconfig and gitattributes, put beside the file as .editorconfig and
// .gitattributes.
func TestEncodingsCorpus(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	dirs, err := filepath.Glob(filepath.Join("testdata", "encodings", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, src := range dirs {
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		n++
		name := filepath.Base(src)
		t.Run(name, func(t *testing.T) {
			read := func(f string) []byte {
				b, err := os.ReadFile(filepath.Join(src, f))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return b
			}
			ws := filepath.Join(d.Root, name)
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			// name, when present, is what file.txt is called in the
			// workspace (a file type that validation checks).
			fileName := "file.txt"
			if n := strings.TrimSpace(string(read("name"))); n != "" {
				fileName = n
			}
			for from, to := range map[string]string{"file.txt": fileName, "editorconfig": ".editorconfig", "gitattributes": ".gitattributes"} {
				if b := read(from); b != nil {
					if err := os.WriteFile(filepath.Join(ws, to), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := read("file.txt")
			target := filepath.Join(ws, fileName)
			res, err := c.Write(ctx, protocol.WriteParams{
				BeginParams: protocol.BeginParams{TargetFile: target, WorkspaceRoot: ws, Operation: protocol.Operation(strings.TrimSpace(string(read("op"))))},
				Content:     string(read("edit")),
			})
			got, _ := os.ReadFile(target)
			if reason := strings.TrimSpace(string(read("reason"))); reason != "" {
				pe := protoErr(t, err)
				if pe.Data.Reason != reason {
					t.Fatalf("refused %s (%s), want %s", pe.Data.Reason, pe.Message, reason)
				}
				if !bytes.Equal(got, before) {
					t.Fatalf("a refused write changed the file:\n got  %q\n want %q", got, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			// Validation read the text, not the bytes of its encoding.
			vs := []*protocol.Validation{res.Validation}
			for _, f := range res.Files {
				vs = append(vs, f.Validation)
			}
			for _, v := range vs {
				if v != nil && !v.SyntaxOK {
					t.Errorf("validation found the written file's syntax wrong: %+v", v.Findings)
				}
			}
			if want := read("want"); !bytes.Equal(got, want) {
				t.Fatalf("file is\n %q\nwant\n %q", got, want)
			}
			if res.FileSHA256 != hashOf(string(got)) {
				t.Errorf("result's file_sha256 %s is not the file's", res.FileSHA256)
			}
			if kind := strings.TrimSpace(string(read("repair"))); kind != "" {
				found := false
				for _, r := range res.Repairs {
					found = found || r.Kind == kind
				}
				if !found {
					t.Errorf("no %s repair reported: %+v", kind, res.Repairs)
				}
			}
		})
	}
	if n < 20 {
		t.Fatalf("the corpus has %d cases; it should have every form", n)
	}
}

// A CRLF checkout of the same text is no change: a session whose target
// was converted to CRLF while it streamed is finalized without
// target_changed and writes CRLF, a write based on the LF text (or the
// text without its byte order mark) passes expected_sha256, and an undo
// after a CRLF checkout reverts the session's change in CRLF.
func TestLineEndingsAreNoChange(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		op      protocol.Operation
		content string
		want    string
	}{
		{"edit", protocol.OpEdit, "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n", "a\r\nx = 2\r\nb\r\n"},
		{"overwrite", protocol.OpOverwrite, "a\nx = 3\nb\n", "a\r\nx = 3\r\nb\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(d.Root, "eol-"+tc.name+".txt")
			if err := os.WriteFile(path, []byte("a\nx = 1\nb\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: tc.op})
			if err != nil {
				t.Fatal(err)
			}
			personWrites(t, path, "a\r\nx = 1\r\nb\r\n")
			if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: tc.content + b.EndMarker + "\n"}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
			if err != nil {
				t.Fatalf("finalize after a CRLF checkout: %v", err)
			}
			if res.Merged {
				t.Errorf("reported as merged with a change")
			}
			if got := readFile(t, path); got != tc.want {
				t.Fatalf("file is %q, want %q", got, tc.want)
			}
		})
	}
	path := filepath.Join(d.Root, "eol-expected.txt")
	if err := os.WriteFile(path, []byte("\xef\xbb\xbfa\r\nb\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit, ExpectedSHA256: hashOf("a\nb\n")},
		Content: "<<<<<<< SEARCH\nb\n=======\nc\n>>>>>>> REPLACE\n"})
	if err != nil {
		t.Fatalf("expected_sha256 of the file's text: %v", err)
	}
	if got := readFile(t, path); got != "\xef\xbb\xbfa\r\nc\r\n" || res.FileSHA256 != hashOf(got) {
		t.Fatalf("file is %q (result's hash %s)", got, res.FileSHA256)
	}
	// A different text is still a change.
	_, err = c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: hashOf("a\nb\n")}, Content: "z\n"})
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)

	// An undo after a CRLF checkout of what the session wrote puts back
	// what it replaced, with the file's CRLF endings.
	path = filepath.Join(d.Root, "eol-undo.txt")
	if err := os.WriteFile(path, []byte("a\nx = 1\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite}, Content: "a\nx = 2\nb\n"})
	if err != nil {
		t.Fatal(err)
	}
	personWrites(t, path, "a\r\nx = 2\r\nb\r\n")
	if _, err := c.Undo(ctx, w.SessionID); err != nil {
		t.Fatalf("undo after a CRLF checkout: %v", err)
	}
	if got := readFile(t, path); got != "a\r\nx = 1\r\nb\r\n" {
		t.Fatalf("after undo the file is %q", got)
	}
}

// A transaction writes each file in its own encoding, and refuses all of
// them, writing none, when one file's text does not fit its encoding.
func TestTransactionKeepsEncodings(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	latin := filepath.Join(d.Root, "latin.txt")
	utf16 := filepath.Join(d.Root, "wide.txt")
	run := func(latinText, wideText string) error {
		if err := os.WriteFile(latin, []byte("caf\xe9\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(utf16, []byte("\xff\xfea\x00\r\x00\n\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		tx, err := c.TxBegin(ctx, protocol.TxBeginParams{WorkspaceRoot: d.Root, Files: []protocol.BeginParams{
			{TargetFile: latin, Operation: protocol.OpOverwrite},
			{TargetFile: utf16, Operation: protocol.OpEdit},
		}})
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range []string{latinText, wideText} {
			s := tx.Sessions[i]
			if _, err := c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: text + s.EndMarker + "\n"}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID})
		return err
	}
	if err := run("déjà\n", "<<<<<<< SEARCH\na\n=======\nß\n>>>>>>> REPLACE\n"); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, latin), "d\xe9j\xe0\n"; got != want {
		t.Errorf("latin.txt is %q, want %q", got, want)
	}
	if got, want := readFile(t, utf16), "\xff\xfe\xdf\x00\r\x00\n\x00"; got != want {
		t.Errorf("wide.txt is %q, want %q", got, want)
	}
	err := run("5 Ω\n", "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")
	pe := protoErr(t, err)
	if pe.Data.Reason != protocol.ReasonTxRefused || len(pe.Data.Files) != 1 ||
		pe.Data.Files[0].TargetFile != latin || pe.Data.Files[0].Reason != protocol.ReasonUnsupportedEncoding {
		t.Fatalf("refused %s (%s; files %+v), want tx_refused naming latin.txt unsupported_encoding", pe.Data.Reason, pe.Message, pe.Data.Files)
	}
	if readFile(t, latin) != "caf\xe9\n" || readFile(t, utf16) != "\xff\xfea\x00\r\x00\n\x00" {
		t.Fatalf("a refused transaction wrote: %q %q", readFile(t, latin), readFile(t, utf16))
	}
}

// A whole-file write to a UTF-16 JSON file that a person edited elsewhere
// meanwhile is merged, written in UTF-16, and validated as JSON; its undo
// after another edit is merged the same way.
func TestMergeKeepsEncoding(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	u16 := func(s string) string {
		b := []byte{0xff, 0xfe}
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return string(b)
	}
	lines := func(a, e string) string {
		return "{\r\n  \"a\": " + a + ",\r\n  \"b\": 2,\r\n  \"c\": 3,\r\n  \"d\": 4,\r\n  \"e\": \"" + e + "\"\r\n}\r\n"
	}
	path := filepath.Join(d.Root, "data.json")
	if err := os.WriteFile(path, []byte(u16(lines("1", "é"))), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	personWrites(t, path, u16(lines("1", "è")))
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: strings.ReplaceAll(lines("10", "é"), "\r\n", "\n") + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatalf("finalize: %v", err)
	}
	if got, want := readFile(t, path), u16(lines("10", "è")); got != want || !res.Merged {
		t.Fatalf("merged %v, file\n %q\nwant\n %q", res.Merged, got, want)
	}
	if !res.Validation.SyntaxOK {
		t.Fatalf("validation read the merge as bytes: %+v", res.Validation.Findings)
	}
	// Undone after a later edit elsewhere: the session's change is
	// reverted around it, in UTF-16.
	later := strings.Replace(lines("10", "è"), `"c": 3`, `"c": 30`, 1)
	personWrites(t, path, u16(later))
	u, err := c.Undo(ctx, b.SessionID)
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got, want := readFile(t, path), u16(strings.Replace(later, `"a": 10`, `"a": 1`, 1)); got != want || !u.Merged {
		t.Fatalf("undo merged %v, file\n %q\nwant\n %q", u.Merged, got, want)
	}
}

// A dry run's diff of a file in another encoding shows its text, for an
// edit and for a multi-file edit.
func TestDryRunDiffIsText(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "w.txt")
	if err := os.WriteFile(path, []byte("\xff\xfec\x00a\x00f\x00\xe9\x00\n\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "<<<<<<< SEARCH\ncafé\n=======\nthé\n>>>>>>> REPLACE\n" + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Diff, "-café\n+thé\n") {
		t.Fatalf("diff %q does not show the text", res.Diff)
	}

	// And a multi-file edit's, for a Windows-1252 file.
	cp := filepath.Join(d.Root, "cp.txt")
	if err := os.WriteFile(cp, []byte("\x93caf\xe9\x94\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = c.Begin(ctx, protocol.BeginParams{TargetFile: cp, Operation: protocol.OpEdit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "*** Begin Patch\n*** Update File: " + cp + "\n@@\n-“café”\n+“thé”\n*** End Patch\n" + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Diff, "-“café”\n+“thé”\n") {
		t.Fatalf("envelope diff %q does not show the text", res.Diff)
	}
}

// Files git checked out in their working-tree-encoding (and with CRLF
// where it says eol=crlf) are edited through the daemon, and git itself
// sees exactly the one line changed: git diff decodes the working tree
// and finds nothing else different. Runs the real git, when installed.
func TestGitSeesOnlyTheEdit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: ", err)
	}
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	repo := filepath.Join(d.Root, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, stderr.String())
		}
		return string(out)
	}
	cases := []struct{ name, attrs, text, from, to string }{
		{"a.w16", "working-tree-encoding=UTF-16LE eol=crlf", "Grüße\nx = 1\n日本\n", "x = 1", "x = \"ß\""},
		{"a.u16", "working-tree-encoding=UTF-16", "Grüße\nx = 1\n日本\n", "x = 1", "x = 2"},
		{"a.cp", "working-tree-encoding=WINDOWS-1252", "“café” €\nx = 1\nend\n", "x = 1", "x = \"€ …\""},
		{"a.sj", "working-tree-encoding=SHIFT_JIS", "日本語\nx = 1\n東京\n", "x = 1", "x = \"大阪\""},
		{"a.crlf", "text eol=crlf", "café\nx = 1\nend\n", "x = 1", "x = 2"},
	}
	var attrs strings.Builder
	for _, tc := range cases {
		attrs.WriteString("*" + filepath.Ext(tc.name) + " " + tc.attrs + "\n")
	}
	git("", "init", "-q", ".")
	if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte(attrs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blob := strings.TrimSpace(git(tc.text, "hash-object", "-w", "--stdin"))
			git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+tc.name)
			git("", "checkout", "--", tc.name)
			_, err := c.Write(ctx, protocol.WriteParams{
				BeginParams: protocol.BeginParams{TargetFile: filepath.Join(repo, tc.name), WorkspaceRoot: repo, Operation: protocol.OpEdit},
				Content:     "<<<<<<< SEARCH\n" + tc.from + "\n=======\n" + tc.to + "\n>>>>>>> REPLACE\n",
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := git("", "diff", "--numstat", "--", tc.name); got != "1\t1\t"+tc.name+"\n" {
				t.Fatalf("git diff --numstat: %q, want one line changed", got)
			}
			diff := git("", "diff", "--", tc.name)
			if !strings.Contains(diff, "\n-"+tc.from+"\n+"+tc.to+"\n") {
				t.Fatalf("git diff does not show the edit as text:\n%s", diff)
			}
		})
	}
}
