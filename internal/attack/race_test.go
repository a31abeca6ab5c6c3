package attack

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// raceFor is how long each symlink-swap race runs. Before the confined
// file layer, every scenario below escaped within the first second.
const raceFor = 2 * time.Second

// arena is the layout of a symlink-swap race: work/ is a directory inside
// the root holding the targets, swap is a symlink to out/, a directory
// outside every root; the swapper exchanges the two names atomically
// (renameat2 RENAME_EXCHANGE), as a sandboxed process beside the model can.
type arena struct {
	d                *testdaemon.Daemon
	ws, work, swap   string
	out              string
	sentinels        map[string]string
	swaps            atomic.Int64
	stop             chan struct{}
	swapperDone      chan struct{}
	okCalls, refused atomic.Int64
}

func newArena(t *testing.T, d *testdaemon.Daemon, name string) *arena {
	t.Helper()
	a := &arena{d: d, ws: filepath.Join(d.Root, name), out: t.TempDir(), sentinels: map[string]string{}}
	a.work, a.swap = filepath.Join(a.ws, "work"), filepath.Join(a.ws, "swap")
	if err := os.MkdirAll(a.work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a.out, a.swap); err != nil {
		t.Fatal(err)
	}
	return a
}

// sentinel puts a file in out/ with the name of an in-root target, so a
// write, restore or delete that lands outside is seen.
func (a *arena) sentinel(t *testing.T, name string) {
	t.Helper()
	body := "outside sentinel " + name
	if err := os.WriteFile(filepath.Join(a.out, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	a.sentinels[name] = body
}

func (a *arena) startSwapping() {
	a.stop, a.swapperDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.swapperDone)
		for {
			select {
			case <-a.stop:
				return
			default:
			}
			if exchange(a.work, a.swap) == nil {
				a.swaps.Add(1)
			}
			// Short pauses let sessions begin (the path is checked then)
			// and then meet the swap while they write.
			if a.swaps.Load()%2 == 0 {
				time.Sleep(time.Duration(a.swaps.Load()%7) * 100 * time.Microsecond)
			}
		}
	}()
}

// stopSwapping ends the race with work/ a directory again.
func (a *arena) stopSwapping(t *testing.T) {
	t.Helper()
	close(a.stop)
	<-a.swapperDone
	if fi, err := os.Lstat(a.work); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		if err := exchange(a.work, a.swap); err != nil {
			t.Fatal(err)
		}
	}
}

// run races clients goroutines, each calling step in a loop, against the
// swapper for raceFor.
func (a *arena) run(t *testing.T, clients int, step func(r *rpc, client, i int) error) {
	t.Helper()
	a.startSwapping()
	deadline := time.Now().Add(raceFor)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := dial(t, a.d)
			for i := 0; time.Now().Before(deadline); i++ {
				if err := step(r, c, i); err != nil {
					a.refused.Add(1)
				} else {
					a.okCalls.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	a.stopSwapping(t)
}

// escapes lists what the race left outside the root: any file in out/ that
// is not an untouched sentinel, and any missing or changed sentinel.
func (a *arena) escapes(t *testing.T) []string {
	t.Helper()
	var bad []string
	seen := map[string]bool{}
	filepath.WalkDir(a.out, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == a.out {
			return nil
		}
		name := de.Name()
		body, err := os.ReadFile(p)
		if want, ok := a.sentinels[name]; ok && err == nil && string(body) == want {
			seen[name] = true
			return nil
		}
		bad = append(bad, "outside: "+name)
		return nil
	})
	for name := range a.sentinels {
		if !seen[name] {
			bad = append(bad, "sentinel changed or removed: "+name)
		}
	}
	return bad
}

// temps lists temp files left anywhere under dir.
func temps(dir string) []string {
	var left []string
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(de.Name(), ".orion-tmp-") {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// check asserts the race touched nothing outside and left no temp file,
// also after a restart (recovery must not write outside either).
func (a *arena) check(t *testing.T) {
	t.Helper()
	t.Logf("%d swaps, %d calls succeeded, %d refused", a.swaps.Load(), a.okCalls.Load(), a.refused.Load())
	if a.okCalls.Load() == 0 {
		t.Errorf("no call succeeded during the race: the test raced nothing")
	}
	if bad := a.escapes(t); len(bad) > 0 {
		t.Errorf("%d escapes outside the root in %s of racing, e.g. %v", len(bad), raceFor, bad[:min(len(bad), 5)])
	}
	if left := append(temps(a.ws), temps(a.out)...); len(left) > 0 {
		t.Errorf("%d temp files left, e.g. %v", len(left), left[:min(len(left), 5)])
	}
	a.d.Kill()
	a.d.Restart()
	if bad := a.escapes(t); len(bad) > 0 {
		t.Errorf("after a restart: %d escapes, e.g. %v", len(bad), bad[:min(len(bad), 5)])
	}
	if left := append(temps(a.ws), temps(a.out)...); len(left) > 0 {
		t.Errorf("after a restart: %d temp files left, e.g. %v", len(left), left[:min(len(left), 5)])
	}
}

// begin opens a session and streams content ending with its marker (or not).
func (r *rpc) stream(p protocol.BeginParams, content string, marker bool) (protocol.BeginResult, error) {
	var b protocol.BeginResult
	if je := r.call(protocol.MethodSessionBegin, p, &b); je != nil {
		return b, je
	}
	chunk := content
	if marker {
		chunk += "\n" + b.EndMarker + "\n"
	}
	var a protocol.AppendResult
	if je := r.call(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: chunk}, &a); je != nil {
		return b, je
	}
	return b, nil
}

// asErr turns a call's *jsonrpc2.Error into an error, nil for nil.
func asErr(je *jsonrpc2.Error) error {
	if je == nil {
		return nil
	}
	return je
}

// A directory swapped for a symlink to outside while sessions finalize:
// every write stays inside (or is refused), for finalize, tx.commit, the
// truncation policies, undo and envelope moves and deletes.
func TestSymlinkSwapRace(t *testing.T) {
	d := testdaemon.Start(t)

	t.Run("Finalize", func(t *testing.T) {
		a := newArena(t, d, "finalize")
		for c := range 3 {
			a.sentinel(t, fmt.Sprintf("f%d", c))
		}
		a.run(t, 3, func(r *rpc, c, i int) error {
			op := protocol.OpOverwrite
			if i%2 == 0 {
				op = protocol.OpCreate
			}
			name := fmt.Sprintf("f%d", c)
			if op == protocol.OpCreate {
				name = fmt.Sprintf("n%d-%d", c, i)
			}
			b, err := r.stream(protocol.BeginParams{TargetFile: filepath.Join(a.work, name), Operation: op}, "content", true)
			if err != nil {
				return err
			}
			var f protocol.FinalizeResult
			return asErr(r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, &f))
		})
		a.check(t)
	})

	t.Run("MakeParents", func(t *testing.T) {
		a := newArena(t, d, "mkdir")
		a.run(t, 2, func(r *rpc, c, i int) error {
			// Directories that do not exist yet are made at finalize,
			// while work/ may have been swapped for the symlink.
			b, err := r.stream(protocol.BeginParams{TargetFile: filepath.Join(a.work, fmt.Sprintf("d%d", c), fmt.Sprintf("n%d", i), "f"),
				Operation: protocol.OpCreate}, "content", true)
			if err != nil {
				return err
			}
			return asErr(r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil))
		})
		a.check(t)
	})

	t.Run("TxCommit", func(t *testing.T) {
		a := newArena(t, d, "tx")
		for c := range 2 {
			a.sentinel(t, fmt.Sprintf("a%d", c))
			a.sentinel(t, fmt.Sprintf("b%d", c))
		}
		a.run(t, 2, func(r *rpc, c, i int) error {
			var tb protocol.TxBeginResult
			if je := r.call(protocol.MethodTxBegin, protocol.TxBeginParams{Files: []protocol.BeginParams{
				{TargetFile: filepath.Join(a.work, fmt.Sprintf("a%d", c)), Operation: protocol.OpOverwrite},
				{TargetFile: filepath.Join(a.work, fmt.Sprintf("b%d", c)), Operation: protocol.OpOverwrite},
			}}, &tb); je != nil {
				return je
			}
			for _, s := range tb.Sessions {
				if je := r.call(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: s.SessionID, Seq: 1,
					Chunk: fmt.Sprintf("gen %d\n%s\n", i, s.EndMarker)}, nil); je != nil {
					return je
				}
			}
			return asErr(r.call(protocol.MethodTxCommit, protocol.TxCommitParams{TxID: tb.TxID, Force: true}, nil))
		})
		a.check(t)
	})

	t.Run("TruncationPolicies", func(t *testing.T) {
		a := newArena(t, d, "trunc")
		for c := range 2 {
			a.sentinel(t, fmt.Sprintf("t%d", c))
			a.sentinel(t, fmt.Sprintf("t%d.incomplete", c))
		}
		var opened []string
		var mu sync.Mutex
		a.run(t, 2, func(r *rpc, c, i int) error {
			policy := protocol.TruncationIncompleteFile
			if c == 1 {
				policy = protocol.TruncationWriteWithNote
			}
			b, err := r.stream(protocol.BeginParams{TargetFile: filepath.Join(a.work, fmt.Sprintf("t%d", c)), Operation: protocol.OpOverwrite,
				AutoFinalizeMS: 100, TruncationPolicy: policy}, "cut off mid-", false)
			if err == nil {
				mu.Lock()
				opened = append(opened, b.SessionID)
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
			return err
		})
		// Let the last auto-finalize timers fire, still without the swap.
		time.Sleep(500 * time.Millisecond)
		a.check(t)
	})

	t.Run("Undo", func(t *testing.T) {
		a := newArena(t, d, "undo")
		r := dial(t, d)
		const n = 40
		ids := make([]string, 0, 2*n)
		for i := range n {
			for _, op := range []protocol.Operation{protocol.OpCreate, protocol.OpOverwrite} {
				name := fmt.Sprintf("u%d-%s", i, op)
				if op == protocol.OpOverwrite {
					if err := os.WriteFile(filepath.Join(a.work, name), []byte("old\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				a.sentinel(t, name)
				b, err := r.stream(protocol.BeginParams{TargetFile: filepath.Join(a.work, name), Operation: op}, "new", true)
				if err != nil {
					t.Fatal(err)
				}
				r.must(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID}, nil)
				ids = append(ids, b.SessionID)
			}
		}
		var next atomic.Int64
		a.run(t, 2, func(r *rpc, c, i int) error {
			k := int(next.Add(1)) - 1
			if k >= len(ids) {
				time.Sleep(5 * time.Millisecond)
				return asErr(r.call(protocol.MethodDaemonStatus, nil, nil))
			}
			return asErr(r.call(protocol.MethodSessionUndo, protocol.SessionIDParams{SessionID: ids[k]}, nil))
		})
		a.check(t)
	})

	t.Run("EnvelopeMoveDelete", func(t *testing.T) {
		a := newArena(t, d, "envelope")
		// Set up before the race: the test's own writes would follow the
		// swapped symlink.
		const n = 300
		for k := range n {
			src, dst, del := fmt.Sprintf("s%d", k), fmt.Sprintf("m%d", k), fmt.Sprintf("d%d", k)
			for _, f := range []string{src, dst, del} {
				a.sentinel(t, f)
			}
			for _, f := range []string{src, del} {
				if err := os.WriteFile(filepath.Join(a.work, f), []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		var next atomic.Int64
		a.run(t, 2, func(r *rpc, c, i int) error {
			k := int(next.Add(1)) - 1
			if k >= n {
				time.Sleep(5 * time.Millisecond)
				return asErr(r.call(protocol.MethodDaemonStatus, nil, nil))
			}
			src, dst, del := fmt.Sprintf("s%d", k), fmt.Sprintf("m%d", k), fmt.Sprintf("d%d", k)
			env := fmt.Sprintf("*** Begin Patch\n*** Update File: %s\n*** Move to: %s\n@@\n-old\n+new\n*** Delete File: %s\n*** End Patch", src, dst, del)
			b, err := r.stream(protocol.BeginParams{TargetFile: filepath.Join(a.work, src), Operation: protocol.OpEdit,
				WorkspaceRoot: a.work}, env, true)
			if err != nil {
				return err
			}
			return asErr(r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil))
		})
		a.check(t)
	})
}
