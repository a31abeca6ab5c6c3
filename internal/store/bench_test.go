package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orion-agent/orion/internal/store"
	"golang.org/x/sys/unix"
)

// The benchmarks compare durable 1 KiB appends through the store with the
// cheapest durable append the file system offers, O_APPEND plus fdatasync,
// measured in the same run on the same file system. Compare their ops/s.

var chunk1K = make([]byte, 1024)

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

func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			s := newStore(b)
			seqs := make([]uint64, writers)
			meta := []byte(`{"state":"streaming","bytes":123456,"updated":"2025-01-01T00:00:00Z"}`)
			runWriters(b, writers, func(w int) error {
				seqs[w]++
				return s.Append(fmt.Sprint("session-", w), seqs[w], chunk1K, meta)
			})
			st, err := s.Stats()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Writes)/float64(st.Commits), "appends/commit")
		})
	}
}

func BenchmarkFdatasync(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			dir := b.TempDir()
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

var _ = store.Options{}
