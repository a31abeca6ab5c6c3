package attack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// overwrite writes size bytes of digit to target in one session, in
// chunks of chunk bytes.
func overwrite(t *testing.T, r *rpc, target string, digit, size, chunk int, op protocol.Operation) string {
	t.Helper()
	var b protocol.BeginResult
	r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: target, Operation: op, AutoFinalizeMS: 600_000}, &b)
	line := strings.Repeat(fmt.Sprint(digit), 1023) + "\n"
	piece := strings.Repeat(line, chunk/len(line))
	seq := uint64(0)
	for sent := 0; sent < size; sent += len(piece) {
		seq++
		var a protocol.AppendResult
		r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: seq, Chunk: piece[:min(len(piece), size-sent)]}, &a)
	}
	var f protocol.FinalizeResult
	r.must(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}, &f)
	return b.SessionID
}

// storeOnDisk is the store file's apparent size and the bytes it takes
// on disk.
func storeOnDisk(t *testing.T, d *testdaemon.Daemon) (apparent, allocated int64) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(d.StateDir, "orion.db"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// TestStoreCap: repeated overwrites of one large file keep a backup
// each for undo. Under --store-max-bytes the oldest backups are dropped
// (logged, traced, and undo says backup_dropped), the newest still
// undoes, and the store stays under the cap. ORION_ATTACK_STORE_FIGURE=1
// runs twelve overwrites of 64 MiB, with and without a cap.
func TestStoreCap(t *testing.T) {
	t.Parallel()
	const writes = 12
	size, limit := 2<<20, int64(12<<20)
	args := []string{"--max-session-bytes", "4194304"}
	if os.Getenv("ORION_ATTACK_STORE_FIGURE") != "" {
		size, limit = 64<<20, 256<<20
		args = nil
	}
	run := func(t *testing.T, capArg int64) (*testdaemon.Daemon, []string, protocol.StoreStats) {
		d := testdaemon.Start(t, append(args, "--store-max-bytes", fmt.Sprint(capArg))...)
		r := dial(t, d)
		target := filepath.Join(d.Root, "big.txt")
		var ids []string
		start := time.Now()
		for i := range writes {
			op := protocol.OpOverwrite
			if i == 0 {
				op = protocol.OpCreate
			}
			ids = append(ids, overwrite(t, r, target, i%10, size, 1<<20-1024, op))
		}
		var st protocol.StatusResult
		r.must(protocol.MethodDaemonStatus, nil, &st)
		apparent, allocated := storeOnDisk(t, d)
		t.Logf("%d overwrites of %d MiB (%v), --store-max-bytes %d MiB: store data %d MiB, file %d MiB (%d MiB on disk); %d backups dropped (%d MiB)",
			writes, size>>20, time.Since(start).Round(time.Second), capArg>>20, st.Store.Bytes>>20, apparent>>20, allocated>>20,
			st.Store.BackupsDropped, st.Store.BackupBytesDropped>>20)
		return d, ids, *st.Store
	}
	t.Run("NoCap", func(t *testing.T) {
		if _, _, st := run(t, 0); st.BackupsDropped != 0 {
			t.Fatalf("without a cap %d backups were dropped", st.BackupsDropped)
		}
	})
	t.Run("Cap", func(t *testing.T) {
		d, ids, st := run(t, limit)
		if st.Bytes > limit || st.BackupsDropped == 0 {
			t.Fatalf("store data %d bytes (cap %d), %d backups dropped", st.Bytes, limit, st.BackupsDropped)
		}
		r := dial(t, d)
		je := r.call(protocol.MethodSessionUndo, protocol.SessionIDParams{SessionID: ids[1]}, nil)
		if je == nil || reason(je) != protocol.ReasonBackupDropped || !strings.Contains(je.Message, "--store-max-bytes") {
			t.Fatalf("undo of the oldest overwrite: %v, want backup_dropped", je)
		}
		var res protocol.UndoResult
		r.must(protocol.MethodSessionUndo, protocol.SessionIDParams{SessionID: ids[writes-1]}, &res)
		if res.RestoredBytes != int64(size) {
			t.Fatalf("undo of the newest write restored %d bytes, want %d", res.RestoredBytes, size)
		}
		var tl protocol.TraceListResult
		r.must(protocol.MethodTraceList, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{Types: []string{"store.backup_dropped"}}, Limit: 100}, &tl)
		if int64(len(tl.Events)) != st.BackupsDropped || tl.Events[0].SessionID != ids[1] {
			t.Fatalf("%d store.backup_dropped events for %d drops (first %v)", len(tl.Events), st.BackupsDropped, tl.Events)
		}
		d.WaitLog("dropped the oldest undo backup")
	})
}
