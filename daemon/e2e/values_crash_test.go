package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Checkpoints keep their files' contents in the content log, indexed by a
// bbolt commit after the log's sync. Kills before that sync, between it and
// the commit, at a turn's start and at its end: the turn the client was not
// told of is begun or ended again after the restart, and its undo and redo
// put back every file byte for byte from what was stored.
func TestKilledStoringCheckpointContents(t *testing.T) {
	for _, tc := range []struct {
		name, point string
		atEnd       bool // killed at turn.end, else at turn.begin
	}{
		{"StartBeforeLogSync", "contentlog.sync=1", false},
		{"StartBeforeIndexCommit", "store.values-logged=1", false},
		{"EndBeforeLogSync", "contentlog.sync=2", true},
		{"EndBeforeIndexCommit", "store.values-logged=2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			ws := d.Root
			rng := rand.New(rand.NewPCG(7, 7))
			bin := make([]byte, 70<<10)
			for i := range bin {
				bin[i] = byte(rng.IntN(256))
			}
			writeFiles(t, ws, map[string]string{
				"a.txt":     "a\n",
				"bin.dat":   string(bin),
				"sub/c.go":  "package sub\n",
				"large.txt": strings.Repeat("a line of the large file\n", 12000),
			})
			before := tree(t, ws)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			change := func() {
				sh(t, ws, "echo changed >> a.txt && rm bin.dat && echo new > sub/new.txt && sed -i 's/large/LARGE/' large.txt")
			}
			var turnID string
			if tc.atEnd {
				turnID = beginTurn(t, c, ws).TurnID
				change()
				if _, err := c.TurnEnd(testCtx(t), turnID); err == nil {
					t.Fatal("turn.end returned although the daemon was killed in it")
				}
			} else if _, err := c.TurnBegin(testCtx(t), protocol.TurnBeginParams{WorkspaceRoot: ws}); err == nil {
				t.Fatal("turn.begin returned although the daemon was killed in it")
			}
			d.Wait()
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			if !tc.atEnd {
				turnID = beginTurn(t, c, ws).TurnID
				change()
			}
			after := tree(t, ws)
			ti, err := c.TurnEnd(testCtx(t), turnID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ti.Files) != 4 {
				t.Errorf("turn files: %+v, want a.txt, bin.dat, large.txt, sub/new.txt", ti.Files)
			}
			if _, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: turnID}); err != nil {
				t.Fatal(err)
			}
			if got := tree(t, ws); got != before {
				t.Fatalf("after undo:\n%.2000s\nwant:\n%.2000s", got, before)
			}
			if _, err := c.TurnRedo(testCtx(t), protocol.TurnRedoParams{Last: true, WorkspaceRoot: ws}); err != nil {
				t.Fatal(err)
			}
			if got := tree(t, ws); got != after {
				t.Fatalf("after redo:\n%.2000s\nwant:\n%.2000s", got, after)
			}
		})
	}
}

// A finalize's backup goes to the content log with the write's journal
// record. Killed before the log's sync of either piece, or between the
// first piece's sync and the commit that indexes it, the write was never
// acknowledged and is not there after the restart; the write acknowledged
// before it is still undone from its backup, byte for byte. (The last
// piece is indexed with the record, after the reply: kills there are
// TestSessionWriteKilledBeforeIndexCommit's.)
func TestKilledKeepingABackup(t *testing.T) {
	for _, tc := range []struct{ name, point string }{
		// Each write keeps a backup of two pieces: the first stored by
		// itself, the last with the write's journal record. The first
		// write takes the first two syncs and the first piece logged;
		// the second dies at its first piece's sync or commit, or at its
		// record's sync.
		{"FirstPieceBeforeLogSync", "contentlog.sync=3"},
		{"FirstPieceBeforeIndexCommit", "store.values-logged=2"},
		{"BeforeLogSync", "contentlog.sync=4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			target := filepath.Join(d.Root, "kept.txt")
			v0 := strings.Repeat("the original line\n", 20000) // two backup pieces
			if err := os.WriteFile(target, []byte(v0), 0o644); err != nil {
				t.Fatal(err)
			}
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			write := func(content string) (protocol.FinalizeResult, error) {
				return c.Write(testCtx(t), protocol.WriteParams{BeginParams: protocol.BeginParams{
					TargetFile: target, Operation: protocol.OpOverwrite}, Content: content})
			}
			v1 := strings.Repeat("the first write's line\n", 16000)
			first, err := write(v1)
			if err != nil {
				t.Fatalf("first write: %v\n%s", err, d.Logs())
			}
			if _, err := write("second version\n"); err == nil {
				t.Fatal("second write acknowledged although the daemon was killed in it")
			}
			d.Wait()
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			if got, _ := os.ReadFile(target); string(got) != v1 {
				t.Fatalf("after the restart the file holds %.40q, want the first write's", got)
			}
			if _, err := c.Undo(testCtx(t), first.SessionID); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(target); string(got) != v0 {
				t.Fatalf("undo restored %d bytes, want the %d of the original", len(got), len(v0))
			}
		})
	}
}

// A store written by the release that kept backups and checkpoint contents
// in the bbolt file is migrated at the first start; a start killed after
// the contents were copied to the log, before the commit that points at
// them, leaves the old file, and the next start migrates it; one killed as
// the migrated file's compacted copy is written leaves the migrated file.
// Then the open session's content and the finished sessions' backups read
// back as that release stored them.
func TestMigrationFromReleaseKilledThenDone(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	data := filepath.Join("..", "..", "internal", "store", "testdata")
	db := filepath.Join(d.StateDir, "orion.db")
	os.RemoveAll(store.LogDir(db))
	copyTo(t, filepath.Join(data, "v4.db"), db)
	if err := os.Mkdir(store.LogDir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	copyTo(t, filepath.Join(data, "v4.db.segments", "0000000000000001.seg"), filepath.Join(store.LogDir(db), "0000000000000001.seg"))

	// Killed once with the contents copied to the log, not yet indexed;
	// then once with the migrated file's compacted copy written, not
	// yet renamed over it.
	for _, point := range []string{"store.migrate-logged=1", "store.compact-file=1"} {
		cmd := d.Command()
		cmd.Env = append(cmd.Env, failpoint.EnvVar+"="+point)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("oriond at the kill point %s: %v, want killed\n%s", point, err, out.String())
		}
	}
	// Killed before its rewrite, the migrated file is rewritten by the
	// next start, and the copy the kill left behind is gone.
	if _, err := os.Stat(db + ".compact"); err != nil {
		t.Fatalf("the kill during the rewrite left no copy: %v", err)
	}
	d.Restart()
	if _, err := os.Stat(db + ".compact"); !os.IsNotExist(err) {
		t.Fatalf("the rewrite's temporary copy is left: %v", err)
	}
	c := dial(t, d)

	var want struct {
		Session string                       `json:"session"`
		Chunks  []string                     `json:"chunks"`
		Values  map[string]map[string]string `json:"values"`
	}
	b, err := os.ReadFile(filepath.Join(data, "v4.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	res, err := c.Resume(testCtx(t), want.Session)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextSeq != uint64(len(want.Chunks)+1) || res.Bytes != int64(len(strings.Join(want.Chunks, ""))) {
		t.Fatalf("open session after migration: next_seq %d, %d bytes; want %d, %d", res.NextSeq, res.Bytes, len(want.Chunks)+1, len(strings.Join(want.Chunks, "")))
	}
	got, err := c.Content(testCtx(t), protocol.ContentParams{SessionID: want.Session})
	if err != nil || got.Content != strings.Join(want.Chunks, "") {
		t.Fatalf("open session's content after migration: %d bytes, %v", len(got.Content), err)
	}
	// Each finished session's backup: its pieces, as the release hashed
	// them (pieces are 256 KiB).
	pieces := map[string][]string{}
	for k, sum := range want.Values["backups"] {
		key, _ := hex.DecodeString(k)
		id, _, _ := strings.Cut(string(key), "/")
		if strings.Contains(id, "~") {
			continue // what a write kept for a three-way undo
		}
		n := int(key[len(key)-1])
		for len(pieces[id]) <= n {
			pieces[id] = append(pieces[id], "")
		}
		pieces[id][n] = sum
	}
	if len(pieces) != 2 {
		t.Fatalf("test data: backups of %d sessions, want 2", len(pieces))
	}
	for id, sums := range pieces {
		got, err := c.Content(testCtx(t), protocol.ContentParams{SessionID: id, Source: protocol.ContentBackup})
		if err != nil {
			t.Fatal(err)
		}
		raw := []byte(got.Content)
		for n, sum := range sums {
			piece := raw[min(n*256<<10, len(raw)):min((n+1)*256<<10, len(raw))]
			if h := sha256.Sum256(piece); hex.EncodeToString(h[:]) != sum {
				t.Fatalf("session %s: backup piece %d of %d bytes does not hash as the release stored it", id, n, len(piece))
			}
		}
		if len(sums) == 1 && got.Content != "hello, checkpoint\n" {
			t.Fatalf("session %s: backup %q", id, got.Content)
		}
	}

	// The pages the moved contents took are gone from the file (bbolt
	// grows the file ahead of its pages: its size says nothing).
	d.Stop()
	release, err := os.Stat(filepath.Join(data, "v4.db"))
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(db, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	bdb.View(func(tx *bolt.Tx) error {
		if tx.Size() > release.Size()/2 {
			t.Errorf("the store file's pages reach %d bytes after the migration, the release's file %d: it was not rewritten", tx.Size(), release.Size())
		}
		return nil
	})
}

func copyTo(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Retention releases the contents no kept turn needs, their sizes and
// their index entries in one commit. Killed just before that commit, the
// contents are all still there after the restart: the kept turn's undo
// and redo are byte-exact.
func TestKilledReleasingCheckpointContents(t *testing.T) {
	d := testdaemon.Start(t, "--checkpoint-retention", "1s")
	ws := d.Root
	writeFiles(t, ws, map[string]string{"a.txt": "v0\n", "b.txt": strings.Repeat("b\n", 5000)})
	c := dial(t, d)
	first := beginTurn(t, c, ws)
	writeFiles(t, ws, map[string]string{"a.txt": "v1\n"})
	if _, err := c.TurnEnd(testCtx(t), first.TurnID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the first turn is past its retention
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=" + blobstore.FailpointRelease + "=1"}
	d.Restart()
	c = dial(t, d)
	// A change between the turns: the second starts at a checkpoint of
	// its own, and nothing kept refers to "v0\n" any more.
	writeFiles(t, ws, map[string]string{"a.txt": "v1 changed by hand\n"})
	before := tree(t, ws)
	second := beginTurn(t, c, ws)
	writeFiles(t, ws, map[string]string{"a.txt": "v2\n"})
	after := tree(t, ws)
	// Its end runs retention, which drops the first turn and releases
	// "v0\n", the content only that turn needed: the kill comes there.
	c.TurnEnd(testCtx(t), second.TurnID)
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("oriond was not killed releasing contents\n%s", d.Logs())
	}
	d.Env = nil
	d.Restart()
	c = dial(t, d)
	if _, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: second.TurnID}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); got != before {
		t.Fatalf("after undo:\n%s\nwant:\n%s", got, before)
	}
	if _, err := c.TurnRedo(testCtx(t), protocol.TurnRedoParams{Last: true, WorkspaceRoot: ws}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); got != after {
		t.Fatalf("after redo:\n%s\nwant:\n%s", got, after)
	}
}
