//go:build linux

package attack

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// gitPiece is one file of a repository's internals a model writes.
type gitPiece struct{ name, content string }

// gitPieces are the pieces that made a git directory, one write at a
// time, in the attack this test replays: HEAD, a config whose pager
// leaves a canary, a ref and an object directory's file.
func gitPieces(canary string) []gitPiece {
	return []gitPiece{
		{"HEAD", "ref: refs/heads/main"},
		{"config", "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tpager = touch " + canary + "; cat\n" +
			"\tsshCommand = touch " + canary + "\n[alias]\n\tst = !touch " + canary},
		{"refs/heads/main", strings.Repeat("0", 39) + "1"},
		{"objects/info/packs", "P pack-0.pack"},
	}
}

// A model writes a repository's pieces into one directory, in each of the
// 24 orders, through the real daemon. However they come, git never takes
// the directory for a repository, its pager never runs (git is run on a
// terminal, where it starts one), and a refused write leaves no directory
// behind. The same pieces written by hand are a repository whose pager
// runs, so the check would see one.
func TestGitDirectoryPieceByPiece(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	d := testdaemon.Start(t)
	r := dial(t, d)

	control := filepath.Join(d.Root, "control", "tool")
	canary := filepath.Join(d.Root, "control-canary")
	for _, p := range gitPieces(canary) {
		path := filepath.Join(control, filepath.FromSlash(p.name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(p.content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if gitDir, ok := runGit(t, control); !ok || gitDir != "." {
		t.Fatalf("control: git does not take the hand-made pieces for a repository (%q, %v): the check below would prove nothing", gitDir, ok)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Fatalf("control: the pager of the hand-made repository did not run (%v): the check below would prove nothing", err)
	}

	orders := permutations([]int{0, 1, 2, 3})
	if len(orders) != 24 {
		t.Fatalf("%d orders, want 24", len(orders))
	}
	refused := 0
	for n, order := range orders {
		dir := filepath.Join(d.Root, fmt.Sprintf("o%02d", n), "vendor", "tool")
		canary := filepath.Join(d.Root, fmt.Sprintf("o%02d-canary", n))
		pieces := gitPieces(canary)
		var names []string
		written := map[string]bool{}
		for _, i := range order {
			p := pieces[i]
			names = append(names, p.name)
			path := filepath.Join(dir, filepath.FromSlash(p.name))
			je := r.write(protocol.BeginParams{TargetFile: path, Operation: protocol.OpCreate}, p.content)
			switch {
			case je == nil:
				written[p.name] = true
			case reason(je) == protocol.ReasonProtected && ruleOf(je) == "git-partial":
				refused++
			default:
				t.Errorf("order %v: %s: %v (data %s), want it written or refused by rule git-partial", names, p.name, je, data(je))
			}
		}
		// A hook after the pieces, as the attack's last step.
		if je := r.write(protocol.BeginParams{TargetFile: filepath.Join(dir, "hooks", "post-checkout"), Operation: protocol.OpCreate}, "touch "+canary); je == nil {
			written["hooks/post-checkout"] = true
		}
		if len(written) == 0 {
			t.Errorf("order %v: nothing was written, not even the first piece into an empty directory", names)
		}
		if left := leftDirs(t, dir, written); len(left) > 0 {
			t.Errorf("order %v: refused writes left directories behind: %v", names, left)
		}
		if gitDir, ok := runGit(t, dir); ok {
			t.Errorf("order %v: git takes %s for a repository (git dir %q); written: %v", names, dir, gitDir, written)
		}
		if _, err := os.Stat(canary); err == nil {
			t.Errorf("order %v: the model's pager, alias or hook ran", names)
		}
	}
	t.Logf("24 orders, %d writes refused by git-partial", refused)

	// All four pieces at once, in each order: in one Codex envelope and in
	// one transaction. Each is refused as a whole and leaves nothing.
	for n, order := range orders {
		for _, how := range []string{"envelope", "transaction"} {
			ws := filepath.Join(d.Root, fmt.Sprintf("%s%02d", how, n))
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			canary := filepath.Join(d.Root, fmt.Sprintf("%s%02d-canary", how, n))
			pieces := gitPieces(canary)
			var names []string
			for _, i := range order {
				names = append(names, pieces[i].name)
			}
			var je error
			if how == "envelope" {
				patch := "*** Begin Patch\n"
				for _, i := range order {
					patch += "*** Add File: vendor/tool/" + pieces[i].name + "\n+" + strings.ReplaceAll(pieces[i].content, "\n", "\n+") + "\n"
				}
				patch += "*** End Patch\n"
				var b protocol.BeginResult
				r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: "vendor/tool/" + names[0], WorkspaceRoot: ws, Operation: protocol.OpEdit}, &b)
				r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: patch + b.EndMarker + "\n"}, nil)
				je = asErr(r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil))
			} else {
				var files []protocol.BeginParams
				for _, name := range names {
					files = append(files, protocol.BeginParams{TargetFile: "vendor/tool/" + name, Operation: protocol.OpCreate})
				}
				var tb protocol.TxBeginResult
				r.must(protocol.MethodTxBegin, protocol.TxBeginParams{WorkspaceRoot: ws, Files: files}, &tb)
				for j, s := range tb.Sessions {
					r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: pieces[order[j]].content + "\n" + s.EndMarker + "\n"}, nil)
				}
				je = asErr(r.call(protocol.MethodTxCommit, protocol.TxCommitParams{TxID: tb.TxID, Force: true}, nil))
			}
			if je == nil {
				t.Errorf("%s of %v: written, want it refused", how, names)
			}
			if entries, _ := os.ReadDir(ws); len(entries) != 0 {
				t.Errorf("%s of %v: refused, but left %v in the workspace", how, names, entries)
			}
			dir := filepath.Join(ws, "vendor", "tool")
			if os.MkdirAll(dir, 0o755) == nil {
				if gitDir, ok := runGit(t, dir); ok {
					t.Errorf("%s of %v: git takes %s for a repository (git dir %q)", how, names, dir, gitDir)
				}
			}
			if _, err := os.Stat(canary); err == nil {
				t.Errorf("%s of %v: the model's pager, alias or hook ran", how, names)
			}
		}
	}
}

// runGit runs, in dir, git rev-parse --git-dir, then git -p log and git
// -p rev-parse (which start the pager) and git st (the config's alias)
// with their output on a terminal, where git starts a pager. No global or
// system config is read and git looks no higher than dir's parent. It
// returns rev-parse's answer and whether it succeeded.
func runGit(t *testing.T, dir string) (string, bool) {
	t.Helper()
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GIT_") && !strings.HasPrefix(e, "PAGER=") {
			env = append(env, e)
		}
	}
	env = append(env, "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "PAGER=cat")
	cmd := exec.Command("git", "rev-parse", "--git-dir")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	for _, args := range [][]string{{"-p", "log"}, {"-p", "rev-parse", "--git-dir"}, {"st"}} {
		master, slave := openTerminal(t)
		read := make(chan struct{})
		go func() { io.Copy(io.Discard, master); close(read) }()
		c := exec.Command("git", args...)
		c.Dir, c.Env, c.Stdin, c.Stdout, c.Stderr = dir, env, slave, slave, slave
		c.Run()
		slave.Close()
		<-read // EIO once git and its pager closed the terminal
		master.Close()
	}
	return strings.TrimSpace(string(out)), err == nil
}

// openTerminal opens a pseudo-terminal pair, so that git starts its pager.
func openTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// leftDirs returns the directories below dir that hold no written file,
// relative to dir: what a refused write would have left.
func leftDirs(t *testing.T, dir string, written map[string]bool) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir || !e.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for w := range written {
			if strings.HasPrefix(w, rel+"/") {
				return nil
			}
		}
		left = append(left, rel)
		return nil
	})
	return left
}

// permutations returns every order of xs.
func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{append([]int(nil), xs...)}
	}
	var out [][]int
	for i := range xs {
		rest := append(append([]int(nil), xs[:i]...), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}
