package attack

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// With the default root (home, here a temporary one), a session may write
// neither oriond's own files (its config would give the next start
// allow-root = ["/"]; its store, overwritten with force, made the backup
// read the file it was growing) nor the dotfiles that run code or hold
// credentials, nor .git's machinery. Every entry the daemon reports is
// tried, as a file and as a directory holding one.
func TestProtectedPathsRefused(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".local", "state", "orion")
	d := testdaemon.StartEnv(t, []string{"HOME=" + home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME="},
		"--allow-root", home, "--state-dir", state)
	r := dial(t, d)
	var st protocol.StatusResult
	r.must(protocol.MethodDaemonStatus, nil, &st)
	if len(st.ProtectedPaths) < 20 {
		t.Fatalf("daemon.status lists %d protected paths: %v", len(st.ProtectedPaths), st.ProtectedPaths)
	}
	for _, want := range []string{state, filepath.Join(home, ".config", "orion"), filepath.Join(home, ".ssh"), filepath.Join(home, ".bashrc"), ".git"} {
		if !contains(st.ProtectedPaths, want) {
			t.Errorf("daemon.status protected_paths lacks %s", want)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "proj", ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, entry := range st.ProtectedPaths {
		if !filepath.IsAbs(entry) {
			entry = filepath.Join(home, "proj", entry)
		}
		if !strings.HasPrefix(entry, home) {
			continue // the socket and the test's config are outside this root
		}
		for _, target := range []string{entry, filepath.Join(entry, "hooks", "pre-commit"), filepath.Join(entry, "x")} {
			tried++
			for _, op := range []protocol.Operation{protocol.OpCreate, protocol.OpOverwrite} {
				je := r.write(protocol.BeginParams{TargetFile: target, Operation: op}, "allow-root = [\"/\"]")
				if reason(je) != protocol.ReasonProtected {
					t.Errorf("%s %s: got %v, want %s", op, target, je, protocol.ReasonProtected)
				}
			}
		}
	}
	// The store itself, with force, and the config file by a relative
	// path through the workspace root.
	for _, p := range []protocol.BeginParams{
		{TargetFile: filepath.Join(state, "orion.db"), Operation: protocol.OpOverwrite},
		{TargetFile: ".config/orion/oriond.toml", WorkspaceRoot: home, Operation: protocol.OpCreate},
		{TargetFile: "proj/../.ssh/authorized_keys", WorkspaceRoot: home, Operation: protocol.OpCreate},
	} {
		if je := r.write(p, "x"); reason(je) != protocol.ReasonProtected {
			t.Errorf("%s: got %v, want %s", p.TargetFile, je, protocol.ReasonProtected)
		}
	}
	t.Logf("%d protected targets refused", tried)
	if _, err := os.Stat(filepath.Join(home, ".config", "orion", "oriond.toml")); err == nil {
		t.Fatal("the config file was written")
	}

	// A symlink inside the workspace that points at a protected directory
	// is refused at begin, and also when it is swapped in after begin.
	ws := filepath.Join(home, "proj")
	if err := os.Symlink(filepath.Join(home, ".config"), filepath.Join(ws, "cfg")); err != nil {
		t.Fatal(err)
	}
	if je := r.write(protocol.BeginParams{TargetFile: "proj/cfg/orion/oriond.toml", WorkspaceRoot: home, Operation: protocol.OpCreate}, "x"); reason(je) != protocol.ReasonProtected {
		t.Errorf("through a symlink: got %v, want %s", je, protocol.ReasonProtected)
	}
	if err := os.MkdirAll(filepath.Join(ws, "later", "orion"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := r.stream(protocol.BeginParams{TargetFile: "later/orion/oriond.toml", WorkspaceRoot: ws, Operation: protocol.OpCreate}, "allow-root = [\"/\"]", true)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(ws, "later"))
	if err := os.Symlink(filepath.Join(home, ".config"), filepath.Join(ws, "later")); err != nil {
		t.Fatal(err)
	}
	je := r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil)
	if je == nil {
		t.Fatal("a finalize through a symlink swapped in after begin wrote the config")
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "orion", "oriond.toml")); err == nil {
		t.Fatal("the config file was written through a swapped symlink")
	}
}

// A user lifts one protected path by naming it; the rest stay protected.
func TestProtectedPathLifted(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := testdaemon.StartEnv(t, []string{"HOME=" + home}, "--allow-root", home, "--allow-protected", filepath.Join(home, ".ssh", "config"))
	r := dial(t, d)
	if je := r.write(protocol.BeginParams{TargetFile: filepath.Join(home, ".ssh", "config"), Operation: protocol.OpCreate}, "Host x"); je != nil {
		t.Fatalf("lifted path refused: %v", je)
	}
	if je := r.write(protocol.BeginParams{TargetFile: filepath.Join(home, ".ssh", "authorized_keys"), Operation: protocol.OpCreate}, "ssh-ed25519 AAAA"); reason(je) != protocol.ReasonProtected {
		t.Fatalf("a neighbour of the lifted path: got %v, want %s", je, protocol.ReasonProtected)
	}
}

// A FIFO (or a symlink to a device) at an open session's target must not
// stop the daemon: status and listings answer, the session's finalize
// fails with a clear reason, and SIGTERM still stops it in time.
func TestSpecialFileAtTarget(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	target := filepath.Join(d.Root, "f.txt")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := r.stream(protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite}, "new", true)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(target)
	if err := syscall.Mkfifo(target, 0o644); err != nil {
		t.Fatal(err)
	}
	// The watcher sees the FIFO appear; give it time to (not) hang.
	time.Sleep(300 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		other := dial(t, d)
		other.must(protocol.MethodDaemonStatus, nil, nil)
		other.must(protocol.MethodSessionList, protocol.ListParams{All: true}, nil)
		other.must(protocol.MethodSessionGet, protocol.SessionIDParams{SessionID: b.SessionID}, nil)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("daemon.status / session.list hung with a FIFO at a target")
	}
	for _, force := range []bool{false, true} {
		je := r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: force}, nil)
		if je == nil {
			t.Fatalf("finalize (force %v) over a FIFO succeeded", force)
		}
		if got := reason(je); got != protocol.ReasonTargetChanged && got != protocol.ReasonSpecialFile {
			t.Errorf("finalize (force %v) over a FIFO: %v, want %s or %s", force, je, protocol.ReasonTargetChanged, protocol.ReasonSpecialFile)
		}
	}
	// A target that is a symlink to a device is refused at begin.
	if err := os.Symlink("/dev/zero", filepath.Join(d.Root, "zero")); err != nil {
		t.Fatal(err)
	}
	if je := r.write(protocol.BeginParams{TargetFile: filepath.Join(d.Root, "zero"), Operation: protocol.OpOverwrite}, "x"); je == nil {
		t.Fatal("a session wrote through a symlink to /dev/zero")
	}
	stopped := make(chan struct{})
	go func() { d.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not stop the daemon with a FIFO at a target")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
