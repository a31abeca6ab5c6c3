package doctest_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/doctest"
	"github.com/orion-agent/orion/internal/paths"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// documents are the documents whose shell blocks run, in the order a
// newcomer reads them: the README (which starts the daemon the others
// use), then docs/ by name, then CONTRIBUTING.md.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"README.md"}
	for _, d := range docs {
		names = append(names, "docs/"+filepath.Base(d))
	}
	slices.Sort(names[1:])
	return append(names, "CONTRIBUTING.md")
}

func extractAll(t *testing.T) []doctest.Block {
	t.Helper()
	var all []doctest.Block
	for _, name := range documents(t) {
		src, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doctest.Extract(name, src)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, blocks...)
	}
	return all
}

// The README's two commands: the daemon, started from the binary it
// builds (go run passes no SIGTERM on, so the daemon would outlive a kill),
// and the test command, which .ci/run must run verbatim.
func TestREADMECommands(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ciLines := strings.Split(string(ci), "\n")
	var background, ciBlocks []doctest.Block
	for _, b := range extractAll(t) {
		switch b.Mode {
		case doctest.Background:
			background = append(background, b)
		case doctest.CI:
			ciBlocks = append(ciBlocks, b)
			for _, line := range strings.Split(strings.TrimSpace(b.Text), "\n") {
				if !slices.Contains(ciLines, line) {
					t.Errorf("%s: %q is marked as run by .ci/run, which does not run it verbatim", b, line)
				}
			}
		}
	}
	if len(background) != 1 || background[0].File != "README.md" {
		t.Fatalf("want one background block, the README's daemon; got %v", background)
	}
	d := background[0].Text
	if !strings.Contains(d, "bin/oriond run") || strings.Contains(d, "go run") {
		t.Errorf("%s: the daemon must run from the built bin/oriond, which stops on SIGTERM, not with go run:\n%s", background[0], d)
	}
	if !slices.ContainsFunc(ciBlocks, func(b doctest.Block) bool {
		return b.File == "README.md" && strings.TrimSpace(b.Text) == "go test -race -timeout 30m ./..."
	}) {
		t.Errorf("the README does not give `go test -race -timeout 30m ./...` as its test command (a shell block marked <!-- doctest: ci -->)")
	}
}

// Every relative link of the documents leads to a file that exists, and
// every anchor to a heading of that file.
func TestLinks(t *testing.T) {
	names := append(documents(t), "packaging/README.md", "client/node/README.md", "internal/validate/README.md")
	for _, name := range names {
		src, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range doctest.Links(src) {
			file, anchor, _ := strings.Cut(l.Target, "#")
			target := name
			if file != "" {
				target = path.Join(path.Dir(name), file)
			}
			body, err := os.ReadFile(filepath.Join(root, target))
			if errors.Is(err, syscall.EISDIR) {
				continue // a directory: GitHub lists it
			}
			if err != nil {
				t.Errorf("%s:%d: link to %s: %v", name, l.Line, l.Target, err)
				continue
			}
			if anchor != "" && !doctest.Anchors(body)[anchor] {
				t.Errorf("%s:%d: link to %s: %s has no heading with the anchor #%s", name, l.Line, l.Target, target, anchor)
			}
		}
	}
}

// TestDocuments runs every shell block of the documents, as written, in
// the order a newcomer reads them, from a copy of the repository's files
// (what a fresh clone holds) with an empty HOME and a runtime directory of
// its own. The README's background block (the daemon) keeps running until
// every document is done, and must then stop gracefully on SIGTERM.
func TestDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("the documents' shell blocks build and run the binaries; skipped in -short mode")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	blocks := extractAll(t)
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "orion")
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// The socket lives in the runtime directory, and socket paths are
	// limited to 103 bytes: t.TempDir() carries the test's name, which
	// leaves too little of that in a long TMPDIR (macOS's, a private
	// mktemp -d), so the runtime directory gets a short name of its own.
	runtime, err := paths.SocketTempDir("od", "orion/oriond.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	copyRepository(t, clone)
	env := blockEnv(t, home, runtime)
	socket := filepath.Join(runtime, "orion", "oriond.sock")

	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	var daemon *backgroundBlock
	defer func() {
		if daemon != nil {
			daemon.stop(t)
		}
	}()
	for _, b := range blocks {
		switch b.Mode {
		case doctest.NoRun, doctest.CI:
			continue
		case doctest.Background:
			daemon = startBackground(t, ctx, b, clone, env)
			daemon.waitForSocket(t, ctx, socket)
			continue
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.Text)
		cmd.Dir, cmd.Env = clone, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		out, err := cmd.CombinedOutput()
		t.Logf("%s (%s):\n%s%s", b, time.Since(start).Round(time.Millisecond), indent(b.Text, "$ "), indent(string(out), "  "))
		if err != nil {
			t.Fatalf("%s: the block failed (%v), as written:\n%s\noutput:\n%s", b, err, b.Text, out)
		}
	}
}

// blockEnv is the environment a newcomer's shell has: PATH, an empty
// HOME, a runtime directory, and nothing of ours (no ORION_*). Go's caches
// and proxy settings are passed on so that the blocks' builds reuse what
// this machine downloaded and compiled already.
func blockEnv(t *testing.T, home, runtime string) []string {
	t.Helper()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + runtime,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"GOTOOLCHAIN=local",
	}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOFLAGS"} {
		vals := strings.Split(string(out), "\n")
		if i < len(vals) && vals[i] != "" {
			env = append(env, name+"="+vals[i])
		}
	}
	return env
}

// copyRepository copies the files git tracks into dir: what a fresh clone
// holds, with this work tree's edits to them, and nothing else (no bin/, no
// node_modules, no files the README's commands wrote into this clone). A new
// document is run once it is added to git.
func copyRepository(t *testing.T, dir string) {
	t.Helper()
	for _, name := range repositoryFiles(t) {
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(link, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// repositoryFiles lists the files of the repository, relative to root: the
// ones git tracks, or, outside a git work tree (a source archive), every
// file but build output.
func repositoryFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached").Output()
	if err == nil {
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	t.Logf("git ls-files: %v; copying every file but build output", err)
	var names []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir() && (rel == ".git" || rel == "bin" || rel == "dist" || d.Name() == "node_modules"):
			return filepath.SkipDir
		case !d.IsDir() && !strings.HasSuffix(rel, ".test"):
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// backgroundBlock is a block left running: the daemon.
type backgroundBlock struct {
	block doctest.Block
	cmd   *exec.Cmd
	out   *syncBuffer
	done  chan struct{}
	err   error
}

func startBackground(t *testing.T, ctx context.Context, b doctest.Block, dir string, env []string) *backgroundBlock {
	t.Helper()
	bg := &backgroundBlock{block: b, out: &syncBuffer{}, done: make(chan struct{})}
	bg.cmd = exec.Command("bash", "-euo", "pipefail", "-c", b.Text)
	bg.cmd.Dir, bg.cmd.Env = dir, env
	bg.cmd.Stdout, bg.cmd.Stderr = bg.out, bg.out
	bg.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bg.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	go func() {
		bg.err = bg.cmd.Wait()
		close(bg.done)
	}()
	return bg
}

// waitForSocket waits until the daemon answers on socket, or its block
// exits, or ctx ends: the block builds the binaries first.
func (bg *backgroundBlock) waitForSocket(t *testing.T, ctx context.Context, socket string) {
	t.Helper()
	start := time.Now()
	for {
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			t.Logf("%s: serving on %s after %s", bg.block, socket, time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-bg.done:
			t.Fatalf("%s: the block exited (%v) before the daemon served on %s, as written:\n%s\noutput:\n%s", bg.block, bg.err, socket, bg.block.Text, bg.out)
		case <-ctx.Done():
			t.Fatalf("%s: no daemon on %s after %s:\n%s", bg.block, socket, time.Since(start).Round(time.Second), bg.out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the block's processes, as Ctrl-C or a service
// manager would, and checks that the daemon stopped gracefully.
func (bg *backgroundBlock) stop(t *testing.T) {
	t.Helper()
	pgid := bg.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-bg.done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-bg.done
		t.Errorf("%s: still running 30 s after SIGTERM:\n%s", bg.block, bg.out)
		return
	}
	// bash may exit on the signal before its child; wait for the group.
	for i := 0; i < 300 && syscall.Kill(-pgid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(bg.out.String(), "oriond stopped") {
		t.Errorf("%s: the daemon did not stop gracefully on SIGTERM:\n%s", bg.block, bg.out)
	}
	t.Logf("%s:\n%s", bg.block, indent(bg.out.String(), "  "))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix)
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}
