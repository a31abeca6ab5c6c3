package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// A message case is one orionctl invocation; its exit code, stdout and
// stderr are compared with testdata/messages/<name>.txt, exactly, once the
// daemon's root, session ids and their 8-character prefixes are replaced by
// placeholders ($PARENT is the root's parent, $DEFAULT_SOCKET the socket
// orionctl uses without --socket).
type messageCase struct {
	name  string
	files map[string]string // under the root, written before the run
	stdin string
	args  []string // $ROOT is replaced by the daemon's root
	// inRoot runs orionctl in the daemon's root (undo --last looks in the
	// current directory's workspace).
	inRoot bool
	// before runs orionctl first (its output is not compared), e.g. to
	// apply an edit that the case then applies again.
	before [][]string
}

const goMain = "package main\n\nfunc main() {}\n"

const editMain = "<<<<<<< SEARCH\nfunc main() {}\n=======\nfunc main() { println(\"hi\") }\n>>>>>>> REPLACE\n"

const editNoMatch = "<<<<<<< SEARCH\nfunc nothere() {}\n=======\nfunc x() {}\n>>>>>>> REPLACE\n"

var messageCases = []messageCase{
	{name: "write_one_line", stdin: "hello\n", args: []string{"write", "$ROOT/one.md"}},
	{name: "write_already_applied", files: map[string]string{"applied.go": goMain}, stdin: editMain,
		before: [][]string{{"write", "--op", "edit", "$ROOT/applied.go"}},
		args:   []string{"write", "--op", "edit", "$ROOT/applied.go"}},
	{name: "write_edit_dry_run_no_match", files: map[string]string{"nomatch.go": goMain}, stdin: editNoMatch,
		args: []string{"write", "--op", "edit", "--dry-run", "$ROOT/nomatch.go"}},
	{name: "write_edit_no_match", files: map[string]string{"nomatch2.go": goMain}, stdin: editNoMatch,
		args: []string{"write", "--op", "edit", "$ROOT/nomatch2.go"}},
	{name: "write_dry_run_cut_json", stdin: `{"a": [1,2`, args: []string{"write", "--dry-run", "$ROOT/cut.json"}},
	{name: "write_cut_json", stdin: `{"a": [1,2`, args: []string{"write", "$ROOT/cut.json"}},
	{name: "tx_write_dry_run_invalid_json", files: map[string]string{"src/bad.json": `{"a": [1,2`},
		args: []string{"tx", "write", "--dry-run", "$ROOT/txa.json=$ROOT/src/bad.json"}},
	{name: "tx_write_invalid_json", files: map[string]string{"src/bad.json": `{"a": [1,2`},
		args: []string{"tx", "write", "$ROOT/txa.json=$ROOT/src/bad.json"}},
	{name: "json_error", files: map[string]string{"exists.txt": "x\n"}, stdin: "y\n",
		args: []string{"write", "--json", "$ROOT/exists.txt"}},
	{name: "json_usage_error", args: []string{"write", "--json"}},
	{name: "unreachable_custom_socket", args: []string{"--socket", "/nonexistent/orion.sock", "status"}},
	{name: "undo_last", files: map[string]string{"undo.txt": "old\n"}, stdin: "new\n",
		before: [][]string{{"write", "--op", "overwrite", "$ROOT/undo.txt"}},
		args:   []string{"undo", "--last"}, inRoot: true},
	{name: "undo_nothing", args: []string{"undo", "--last"}, inRoot: true},
	{name: "write_protected", files: map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n"}, stdin: "x\n",
		args: []string{"write", "$ROOT/repo/.git/config"}},
	{name: "write_outside_roots", stdin: "x\n", args: []string{"write", "$PARENT/elsewhere/x.txt"}},
	{name: "write_dry_run_absolute", files: map[string]string{"dry.txt": "old\n"}, stdin: "new\n",
		args: []string{"write", "--op", "overwrite", "--dry-run", "$ROOT/dry.txt"}},
	{name: "tx_write_new_file", files: map[string]string{"src/n.txt": "n\n", "txold.txt": "old\n"},
		args: []string{"tx", "write", "$ROOT/txnew.txt=$ROOT/src/n.txt", "$ROOT/txold.txt=$ROOT/src/n.txt"}},
	// Only a placeholder blocks (a warning the default policy refuses):
	// the refusal names it rather than an empty list.
	{name: "write_lazy_placeholder", files: map[string]string{"lazy.py": "def a():\n    return 1\n\n\ndef b():\n    return 2\n"},
		stdin: "def a():\n    return 1\n\n# ... rest of the code unchanged ...\n# ... rest of the code unchanged ...\n",
		args:  []string{"write", "--op", "overwrite", "$ROOT/lazy.py"}},
	{name: "unknown_command", args: []string{"frobnicate"}},
	{name: "unknown_flag", args: []string{"write", "--operation", "edit", "x.go"}},
	{name: "missing_target", args: []string{"write"}},
	{name: "sessions_list_json_none", args: []string{"sessions", "list", "--json"}},
}

// onFresh are the cases that need a daemon of their own, with no session.
var onFresh = map[string]bool{"undo_nothing": true, "sessions_list_json_none": true}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	shortRE = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
)

func normalize(s, root string) string {
	s = strings.ReplaceAll(s, client.DefaultSocket(), "$DEFAULT_SOCKET")
	s = strings.ReplaceAll(s, root, "$ROOT")
	s = strings.ReplaceAll(s, filepath.Dir(root), "$PARENT")
	s = uuidRE.ReplaceAllString(s, "<id>")
	return shortRE.ReplaceAllString(s, "<short>")
}

func TestMessages(t *testing.T) {
	// The socket orionctl uses without --socket: none answers there.
	t.Setenv("ORION_SOCKET", filepath.Join(t.TempDir(), "default.sock"))
	fresh := testdaemon.Start(t)
	// Cases that run in the daemon's root still read their golden files here.
	pkgDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	d := testdaemon.Start(t)
	for _, tc := range messageCases {
		t.Run(tc.name, func(t *testing.T) {
			dd := d
			if onFresh[tc.name] {
				dd = fresh
			}
			if tc.inRoot {
				t.Chdir(dd.Root)
			}
			for name, content := range tc.files {
				p := filepath.Join(dd.Root, name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			expand := func(args []string) []string {
				out := make([]string, len(args))
				for i, a := range args {
					out[i] = strings.ReplaceAll(strings.ReplaceAll(a, "$ROOT", dd.Root), "$PARENT", filepath.Dir(dd.Root))
				}
				return out
			}
			for _, b := range tc.before {
				if code, _, errOut := orionctl(t, dd.Socket, tc.stdin, expand(b)...); code != 0 {
					t.Fatalf("before %v: exit %d: %s", b, code, errOut)
				}
			}
			code, out, errOut := orionctl(t, dd.Socket, tc.stdin, expand(tc.args)...)
			got := normalize(fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, out, errOut), dd.Root)
			golden := filepath.Join(pkgDir, "testdata", "messages", tc.name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

// A dry run that finds what the real run would refuse fails with the real
// run's message; only the stdout (the diff, the checks) differs.
func TestDryRunFailsLikeTheRealRun(t *testing.T) {
	read := func(name string) (exit, stderr string) {
		b, err := os.ReadFile(filepath.Join("testdata", "messages", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		exit, _, _ = strings.Cut(s, "\n")
		_, stderr, _ = strings.Cut(s, "-- stderr --\n")
		return exit, stderr
	}
	for _, pair := range [][2]string{
		{"write_edit_dry_run_no_match", "write_edit_no_match"},
		{"write_dry_run_cut_json", "write_cut_json"},
		{"tx_write_dry_run_invalid_json", "tx_write_invalid_json"},
	} {
		dryExit, dryErr := read(pair[0])
		realExit, realErr := read(pair[1])
		if dryExit != "exit 1" || dryExit != realExit {
			t.Errorf("%s: %s, %s: %s; want exit 1 for both", pair[0], dryExit, pair[1], realExit)
		}
		// The names of the files differ between the two cases.
		dryErr = strings.ReplaceAll(dryErr, "nomatch.go", "nomatch2.go")
		if dryErr != realErr {
			t.Errorf("%s says\n%s\n%s says\n%s", pair[0], dryErr, pair[1], realErr)
		}
	}
}
