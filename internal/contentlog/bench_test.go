package contentlog_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"
)

// BenchmarkSyncLatency compares the fdatasync after a 4 KiB append to the
// log, in a segment begun on a prepared spare and in one reserved with
// fallocate, with fdatasync after a 4 KiB write to a plain file that grows,
// to one reserved with fallocate and to one whose blocks were written with
// zeros first: its p50-µs and p99-µs are the latency of the sync alone.
func BenchmarkSyncLatency(b *testing.B) {
	chunk := make([]byte, 4<<10)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	for _, prepared := range []bool{true, false} {
		name := "log/prepared"
		if !prepared {
			name = "log/fallocated"
		}
		b.Run(name, func(b *testing.B) { logSyncs(b, chunk, prepared, report) })
	}
	// A 64 KiB append costs more to write and less, in share, to sync:
	// its ns/op counts the zeros written for the prepared segments too.
	big := make([]byte, 64<<10)
	for _, prepared := range []bool{true, false} {
		name := "log-64KiB/prepared"
		if !prepared {
			name = "log-64KiB/fallocated"
		}
		b.Run(name, func(b *testing.B) { logSyncs(b, big, prepared, report) })
	}
	for _, kind := range []string{"growing", "fallocated", "zeroed"} {
		b.Run("raw/"+kind, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			const size = 64 << 20
			switch kind {
			case "fallocated":
				err = fallocate(f, size)
			case "zeroed":
				zeros := make([]byte, 1<<20)
				for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
					_, err = f.WriteAt(zeros, off)
				}
				if err == nil {
					err = datasync(f)
				}
			}
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.WriteAt(chunk, int64(i%(size/len(chunk)))*int64(len(chunk))); err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if err := datasync(f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			report(b, lat)
		})
	}
}

// logSyncs appends chunk b.N times to a log with the default segment size,
// past the point where a spare is prepared (unless prepared is false, when
// no preparation succeeds), and reports the latency of each append's sync.
func logSyncs(b *testing.B, chunk []byte, prepared bool, report func(*testing.B, []time.Duration)) {
	var syncAt atomic.Int64
	opts := contentlog.WithFaults(contentlog.Options{}, func(op string) error {
		switch {
		case op == "sync":
			syncAt.Store(time.Now().UnixNano())
		case op == "prepare" && !prepared:
			return syscall.ENOSPC
		}
		return nil
	})
	dir := b.TempDir()
	if prepared {
		needSpares(b, dir)
	}
	l, err := contentlog.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	// Past the point where a spare is prepared, and into it.
	for range (1<<20)/len(chunk) + 50 {
		if _, err := l.Append([][]byte{chunk}, nil); err != nil {
			b.Fatal(err)
		}
	}
	contentlog.WaitPrepared(l)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append([][]byte{chunk}, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Duration(time.Now().UnixNano()-syncAt.Load()))
	}
	b.StopTimer()
	if st := l.Stats(); (st.Prepared > 0) != prepared {
		b.Fatalf("stats %+v: prepared segment %v, want %v", st, st.Prepared > 0, prepared)
	}
	report(b, lat)
}

// BenchmarkAppend is the log's own cost per record appended by 64 writers
// at once, as the store appends a 4 KiB chunk (its head and the chunk, two
// parts): allocs/op are the log's allocations per append, what a batch
// costs shared among the appends in it.
func BenchmarkAppend(b *testing.B) {
	head, chunk := make([]byte, 64), make([]byte, 4<<10)
	l, err := contentlog.Open(b.TempDir(), contentlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	b.SetParallelism(32) // 64 writers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.AppendParts([][][]byte{{head, chunk}}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	st := l.Stats()
	b.ReportMetric(float64(st.Records)/float64(st.Batches), "records/batch")
}
