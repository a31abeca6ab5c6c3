package session_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// BenchmarkStreamLargeFile writes a 50 MB file as orionctl write sends it
// (chunks of a MiB, eight in flight, then the finalize) through the engine
// alone, without the wire: the journal's writes and syncs, the running
// hash, the streamed file, the scanner. It reports syncs of the log per
// file, the count that tells whether batches share their syncs.
func BenchmarkStreamLargeFile(b *testing.B) {
	const size, chunkSize, window = 50_000_000, 1 << 20, 8
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(b.TempDir(), "orion.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	guard, err := pathguard.New([]string{root})
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := session.New(session.Config{Store: st, Guard: guard, MaxChunkBytes: chunkSize,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer mgr.Close()
	var text strings.Builder
	for i := 0; text.Len() < size; i++ {
		fmt.Fprintf(&text, "line %09d: the quick brown fox jumps over the lazy dog\n", i)
	}
	content := text.String()[:size-1] + "\n"
	var chunks []string
	for s := content; s != ""; {
		n := min(len(s), chunkSize)
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	before, err := st.Stats()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	n := 0
	for b.Loop() {
		target := filepath.Join(root, fmt.Sprint("large-", n, ".txt"))
		n++
		begun, err := mgr.Begin(protocol.BeginParams{Intent: "benchmark", TargetFile: target, Operation: protocol.OpCreate})
		if err != nil {
			b.Fatal(err)
		}
		slots := make(chan struct{}, window)
		var wg sync.WaitGroup
		errs := make(chan error, len(chunks))
		for i, c := range chunks {
			slots <- struct{}{}
			queued := make(orderedSignal)
			wg.Go(func() {
				defer func() { <-slots }()
				p := protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: c}
				if _, err := mgr.AppendOrdered(p, queued); err != nil {
					errs <- err
				}
			})
			<-queued
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		if _, err := mgr.Finalize(protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.Remove(target); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	after, err := st.Stats()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after.Log.Syncs-before.Log.Syncs)/float64(n), "syncs/file")
}
