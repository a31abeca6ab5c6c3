package store_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
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
			st, err := s.Stats()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Writes)/float64(st.Commits), "appends/commit")
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
				return unix.Fdatasync(int(files[w].Fd()))
			})
		})
	}
}
