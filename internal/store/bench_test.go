package store_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/store"
)

// The benchmarks compare durable 1 KiB appends through the store with the
// cheapest durable append the file system offers, O_APPEND plus fdatasync,
// measured in the same run on the same file system. Compare their ops/s.

var chunk1K = make([]byte, 1024)

// benchDir is one directory for all benchmarks of a run, so that the store
// and the baseline write to the same file system.
var benchDir string

// TestMain creates benchDir and removes it after the run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "store-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	benchDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// benchPath returns a fresh path under benchDir; b.Run calls a benchmark
// function once per b.N it tries, and each try needs an empty file.
func benchPath(b *testing.B) string {
	dir, err := os.MkdirTemp(benchDir, "")
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "journal.db")
}

// runWriters splits b.N operations among writers goroutines, each calling op
// with its own index, and reports the aggregate rate.
func runWriters(b *testing.B, writers int, op func(w int) error) {
	var (
		left atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, writers)
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := op(w); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkAppend measures durable 1 KiB appends, each writer streaming to
// its own session, as the daemon does with one session per client.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			s := openStore(b, benchPath(b))
			ids := make([]string, writers)
			for w := range ids {
				ids[w] = fmt.Sprint("session-", w)
			}
			seqs := make([]uint64, writers)
			// The size of the session record oriond rewrites with every
			// chunk.
			meta := bytes.Repeat([]byte("m"), 500)
			runWriters(b, writers, func(w int) error {
				seqs[w]++
				return s.Append(ids[w], seqs[w], chunk1K, meta)
			})
			s.Flush() // the index entries still waiting count too
			st, err := s.Stats()
			if err != nil {
				b.Fatal(err)
			}
			// bbolt syncs twice per commit; the log once per group.
			b.ReportMetric(float64(st.Log.Syncs+2*st.Commits)/float64(st.Log.Records), "fdatasyncs/append")
			b.ReportMetric(float64(st.Log.Records)/float64(st.Log.Batches), "appends/group")
		})
	}
}

// BenchmarkFdatasync is the baseline: each writer appends 1 KiB to its own
// file and makes it durable with fdatasync, which is what a journal
// without bbolt's two syncs per commit would cost.
func BenchmarkFdatasync(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			dir := filepath.Dir(benchPath(b))
			files := make([]*os.File, writers)
			for w := range files {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(w)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				files[w] = f
			}
			runWriters(b, writers, func(w int) error {
				if _, err := files[w].Write(chunk1K); err != nil {
					return err
				}
				return datasync(files[w])
			})
		})
	}
}

// BenchmarkAppend64K measures what one durable 64 KiB append to a session
// that already holds chunks writes: the pages its commit allocates, and the
// bytes the process wrote to the disk (Linux's /proc/self/io), per append.
// A chunk's commit should write about the chunk, not the pages around it.
func BenchmarkAppend64K(b *testing.B) {
	s := openStore(b, benchPath(b))
	chunk := bytes.Repeat([]byte("c"), 64<<10)
	meta := bytes.Repeat([]byte("m"), 500)
	var seq uint64
	for range 16 {
		seq++
		if err := s.Append("session", seq, chunk, meta); err != nil {
			b.Fatal(err)
		}
	}
	alloc0, io0, cpu0 := store.PageAllocBytes(s), procWriteBytes(b), processCPU()
	b.ResetTimer()
	for range b.N {
		seq++
		if err := s.Append("session", seq, chunk, meta); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(store.PageAllocBytes(s)-alloc0)/float64(b.N), "page-bytes/op")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if io0 >= 0 {
		b.ReportMetric(float64(procWriteBytes(b)-io0)/float64(b.N), "disk-bytes/op")
	}
}

// procWriteBytes returns write_bytes of /proc/self/io, or -1 where there is
// none.
func procWriteBytes(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	return -1
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCopyRange reads a session's content back as a finalize does: a
// file of 1 KiB chunks of the size 200 streaming sessions leave behind, and
// one of 1 MiB chunks as `orionctl write` sends them. B/op is what one copy
// allocates, which 200 finalizes at once multiply.
func BenchmarkCopyRange(b *testing.B) {
	for _, tc := range []struct {
		name          string
		chunk, chunks int
	}{
		{"1KiB-chunks-128KiB", 1 << 10, 128},
		{"1MiB-chunks-8MiB", 1 << 20, 8},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := openStore(b, benchPath(b))
			chunk := bytes.Repeat([]byte("x"), tc.chunk)
			for seq := range tc.chunks {
				if err := s.Append("s", uint64(seq), chunk, nil); err != nil {
					b.Fatal(err)
				}
			}
			size := int64(tc.chunk * tc.chunks)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if n, err := s.CopyRange("s", io.Discard, 0, size); err != nil || n != size {
					b.Fatalf("CopyRange = %d, %v; want %d", n, err, size)
				}
			}
		})
	}
}

// BenchmarkFinalizeRecordWithBackup is what a streamed session's finalize
// journals before it writes a file it replaces: the session's record and
// the last piece of the backup, one writer. The piece goes to the content
// log and is synced before the commit that indexes it with the record.
func BenchmarkFinalizeRecordWithBackup(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, err := store.Open(benchPath(b), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			piece := bytes.Repeat([]byte("x"), size)
			meta := bytes.Repeat([]byte("m"), 400)
			b.ResetTimer()
			for i := range b.N {
				id := "s" + strconv.Itoa(i)
				if err := s.PutMeta(id, meta, store.Put{Bucket: "backups", KVs: []store.KV{{Key: []byte(id + "/0"), Value: piece}}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
