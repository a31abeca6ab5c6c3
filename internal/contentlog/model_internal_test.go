package contentlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The log's promise, checked against a model of what the disk was told: a
// record is told durable (and acknowledged) only after a sync of its
// segment that succeeded and started after the write of its bytes had
// returned; never once a sync of its segment has failed (a later fdatasync
// may succeed on pages the failed one dropped); in log order; a new segment
// is written only once no sync of an older one runs and every write to it
// was synced or failed; and a stream's chunk, queued after the one before
// it, is never acknowledged when that one failed. Syncs are slowed and fail
// at random, and writes fail now and then, so that large batches are
// written during the sync of the one before, across segment switches.

// diskModel records the writes and syncs of the segment files, in the order
// they returned or started (clock).
type diskModel struct {
	mu    sync.Mutex
	log   *Log
	clock int64
	rng   *rand.Rand
	files map[*modelFile]*fileModel
	// failSync and failWrite are the odds of a fault, per mille.
	failSync, failWrite int
	// durable is the last position told durable.
	durable  Pos
	problems []string
	// told is every record told durable, with its payload; crashAt the
	// number of them at which a power loss is simulated (crash).
	toldRecs []toldRecord
	crashAt  int
	image    string
	lost     []toldRecord // told durable before the power loss
}

type toldRecord struct {
	ref  Ref
	data []byte
}

type fileModel struct {
	writes []modelWrite
	// syncs that succeeded: when they started.
	synced []int64
	// failedAt is when a sync failed (0: none); writeFailed, a write.
	failedAt    int64
	writeFailed bool
	syncing     int
}

type modelWrite struct {
	off, end int64
	done     int64 // clock when the write returned
}

type modelFile struct {
	segFile
	m *diskModel
}

func (m *diskModel) problem(format string, args ...any) {
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

func (m *diskModel) open(path string, flag int) (segFile, error) {
	f, err := openOSFile(path, flag)
	if err != nil {
		return nil, err
	}
	mf := &modelFile{segFile: f, m: m}
	m.mu.Lock()
	m.files[mf] = &fileModel{}
	m.mu.Unlock()
	return mf, nil
}

// segmentOf returns the id of the segment f is (0: a spare, not one).
func (m *diskModel) segmentOf(f *modelFile) uint64 {
	if m.log == nil {
		return 0
	}
	m.log.segMu.RLock()
	defer m.log.segMu.RUnlock()
	for id, s := range m.log.segs {
		if s.f == segFile(f) {
			return id
		}
	}
	return 0
}

// fileOf returns the model of segment id's file.
func (m *diskModel) fileOf(id uint64) *fileModel {
	m.log.segMu.RLock()
	s := m.log.segs[id]
	m.log.segMu.RUnlock()
	if s == nil {
		return nil
	}
	mf, _ := s.f.(*modelFile)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files[mf]
}

func (f *modelFile) WriteAt(b []byte, off int64) (int, error) {
	m := f.m
	seg := m.segmentOf(f)
	m.mu.Lock()
	fm := m.files[f]
	fail := false
	if seg != 0 {
		// A segment is written only once every older one is synced
		// whole, or given up.
		for of, om := range m.files {
			oid := m.segmentOfLocked(of)
			if of == f || oid == 0 || oid > seg {
				continue
			}
			if om.syncing > 0 {
				m.problem("segment %d written while a sync of segment %d runs", seg, oid)
			}
			if om.failedAt == 0 && !om.writeFailed && len(om.writes) > 0 {
				last := om.writes[len(om.writes)-1].done
				if len(om.synced) == 0 || om.synced[len(om.synced)-1] < last {
					m.problem("segment %d written before the last write of segment %d was synced", seg, oid)
				}
			}
		}
		fail = m.rng.IntN(1000) < m.failWrite
	}
	m.mu.Unlock()
	if fail {
		n, _ := f.segFile.WriteAt(b[:len(b)/2], off)
		m.mu.Lock()
		fm.writeFailed = true
		m.mu.Unlock()
		return n, syscall.EIO
	}
	n, err := f.segFile.WriteAt(b, off)
	m.mu.Lock()
	m.clock++
	fm.writes = append(fm.writes, modelWrite{off: off, end: off + int64(n), done: m.clock})
	if err != nil {
		fm.writeFailed = true
	}
	m.mu.Unlock()
	return n, err
}

// segmentOfLocked is segmentOf for a caller holding m.mu (segMu is taken
// after m.mu nowhere else).
func (m *diskModel) segmentOfLocked(f *modelFile) uint64 { return m.segmentOf(f) }

func (f *modelFile) Sync() error {
	m := f.m
	seg := m.segmentOf(f)
	m.mu.Lock()
	fm := m.files[f]
	m.clock++
	start := m.clock
	fm.syncing++
	fail := seg != 0 && m.rng.IntN(1000) < m.failSync
	pause := time.Duration(m.rng.IntN(1500)) * time.Microsecond
	m.mu.Unlock()
	time.Sleep(pause)
	err := f.segFile.Sync()
	m.mu.Lock()
	defer m.mu.Unlock()
	fm.syncing--
	if fail {
		err = syscall.EIO
	}
	switch {
	case err != nil:
		if fm.failedAt == 0 {
			fm.failedAt = start
		}
	case fm.failedAt == 0:
		fm.synced = append(fm.synced, start)
	default:
		// A sync after a failed one succeeds, though the pages the
		// failed one dropped never reached the disk: nothing it
		// "covers" is durable.
	}
	return err
}

// crash copies the segments as a power loss now could leave them: the bytes
// of every write that a sync which succeeded (before any that failed) and
// has returned started after are there; of the others, each page is there
// or zeros, at random. m.mu is held: no write or sync returns meanwhile.
func (m *diskModel) crashLocked(t *testing.T) {
	m.image = t.TempDir()
	m.lost = append([]toldRecord(nil), m.toldRecs...)
	m.log.segMu.RLock()
	defer m.log.segMu.RUnlock()
	for id, s := range m.log.segs {
		mf, ok := s.f.(*modelFile)
		if !ok {
			continue
		}
		b, err := os.ReadFile(m.log.segPath(id))
		if err != nil {
			t.Error(err)
			return
		}
		fm := m.files[mf]
		var lastSync int64
		if len(fm.synced) > 0 {
			lastSync = fm.synced[len(fm.synced)-1]
		}
		for _, w := range fm.writes {
			if w.done < lastSync {
				continue
			}
			for p := w.off &^ 4095; p < w.end; p += 4096 {
				if m.rng.IntN(2) == 0 {
					clear(b[max(p, w.off):min(p+4096, w.end, int64(len(b)))])
				}
			}
		}
		if err := os.WriteFile(filepath.Join(m.image, filepath.Base(m.log.segPath(id))), b, 0o600); err != nil {
			t.Error(err)
		}
	}
}

// told checks refs, just told durable.
func (m *diskModel) told(refs []Ref) {
	for _, ref := range refs {
		fm := m.fileOf(ref.Seg)
		m.mu.Lock()
		if !m.durable.Less(ref.Pos()) && m.durable != (Pos{}) {
			m.problem("record at %v told durable after %v: not in log order", ref.Pos(), m.durable)
		}
		m.durable = ref.Pos()
		if fm == nil {
			m.problem("record at %v told durable, its segment unknown", ref.Pos())
			m.mu.Unlock()
			continue
		}
		if fm.failedAt != 0 {
			m.problem("record at %v told durable after a sync of its segment failed", ref.Pos())
		}
		var written int64 = -1
		for _, w := range fm.writes {
			if w.off < ref.End() && ref.Off < w.end {
				written = max(written, w.done)
			}
		}
		if written < 0 {
			m.problem("record at %v told durable, never written", ref.Pos())
		}
		ok := false
		for _, s := range fm.synced {
			if s > written {
				ok = true
			}
		}
		if !ok {
			m.problem("record at %v told durable without a sync started after its write", ref.Pos())
		}
		m.mu.Unlock()
	}
}

func TestPipelinedLogKeepsItsPromiseUnderFaults(t *testing.T) {
	for _, tc := range []struct {
		name                string
		segment             int64
		failSync, failWrite int
	}{
		{"rare faults", 2 << 20, 25, 8},
		{"a segment per large record", 1 << 20, 100, 10},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPromise(t, tc.segment, tc.failSync, tc.failWrite) })
	}
}

func checkPromise(t *testing.T, segment int64, failSync, failWrite int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	m := &diskModel{rng: rand.New(rand.NewPCG(seed, 37)), files: map[*modelFile]*fileModel{}, failSync: failSync, failWrite: failWrite}
	m.crashAt = 10 + m.rng.IntN(100)
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentSize: segment, file: m.open})
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.log = l
	m.mu.Unlock()

	type acked struct {
		ref  Ref
		data []byte
	}
	var (
		mu   sync.Mutex
		good []acked
		wg   sync.WaitGroup
	)
	const streams, chunks, inFlight = 6, 30, 4
	for s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(s)))
			type sent struct {
				q    *Queued
				seq  int
				data []byte
				told chan struct{}
			}
			var (
				window []sent
				prev   *Queued
				failed = -1 // seq of this stream's first failed chunk
				stream = 0
			)
			finish := func(c sent) {
				refs, err := c.q.Wait()
				if err != nil {
					if failed < 0 {
						failed = c.seq
					}
					return
				}
				select {
				case <-c.told:
				default:
					mu.Lock()
					m.mu.Lock()
					m.problem("stream %d chunk %d acknowledged before it was told durable", s, c.seq)
					m.mu.Unlock()
					mu.Unlock()
				}
				if failed >= 0 && c.seq > failed {
					m.mu.Lock()
					m.problem("stream %d.%d: chunk %d acknowledged after chunk %d, queued before it, failed", s, stream, c.seq, failed)
					m.mu.Unlock()
				}
				mu.Lock()
				good = append(good, acked{refs[0], c.data})
				mu.Unlock()
			}
			for i := range chunks {
				size := 1 + rng.IntN(8<<10)
				if rng.IntN(10) < 5 {
					size = pipelinePart + rng.IntN(512<<10)
				}
				data := make([]byte, size+8)
				for j := 0; j+8 <= len(data); j += 8 {
					binary.LittleEndian.PutUint64(data[j:], rng.Uint64())
				}
				told := make(chan struct{})
				q, err := l.Enqueue([][][]byte{{data}}, func(refs []Ref) {
					m.told(refs)
					m.mu.Lock()
					m.toldRecs = append(m.toldRecs, toldRecord{refs[0], data})
					if len(m.toldRecs) == m.crashAt {
						m.crashLocked(t)
					}
					m.mu.Unlock()
					close(told)
				}, prev)
				if err != nil {
					t.Error(err)
					return
				}
				window = append(window, sent{q: q, seq: i, data: data, told: told})
				prev = q
				if len(window) == inFlight || rng.IntN(3) == 0 {
					for _, c := range window {
						finish(c)
					}
					window = window[:0]
				}
				if failed >= 0 && len(window) == 0 {
					// The stream resumes after its failure, as a
					// session rolled back to the failed chunk does.
					failed, prev = -1, nil
					stream++
				}
			}
			for _, c := range window {
				finish(c)
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	problems := m.problems
	m.mu.Unlock()
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-i)
			break
		}
		t.Error(p)
	}
	st := l.Stats()
	t.Logf("%d records acknowledged, %d batches, %d syncs", len(good), st.Batches, st.Syncs)

	// Nothing acknowledged is lost or damaged.
	l, err = Open(dir, Options{SegmentSize: segment})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, a := range good {
		got, err := l.Read(a.ref)
		if err != nil {
			t.Fatalf("acknowledged record at %v: %v", a.ref.Pos(), err)
		}
		if !bytes.Equal(got, a.data) {
			t.Fatalf("acknowledged record at %v reads back different", a.ref.Pos())
		}
	}

	// Nor by a power loss: what was told durable before it is there,
	// whatever of the rest reached the disk.
	if m.image == "" {
		t.Fatalf("no power loss simulated: %d records told durable, the loss at %d", len(m.toldRecs), m.crashAt)
	}
	img, err := Open(m.image, Options{SegmentSize: segment})
	if err != nil {
		t.Fatalf("open after a power loss: %v", err)
	}
	defer img.Close()
	for _, a := range m.lost {
		got, err := img.Read(a.ref)
		if err != nil {
			t.Fatalf("after a power loss, record at %v told durable before it: %v", a.ref.Pos(), err)
		}
		if !bytes.Equal(got, a.data) {
			t.Fatalf("after a power loss, record at %v told durable before it reads back different", a.ref.Pos())
		}
	}
	if err := img.Scan(Pos{}, func(Ref, []byte, error) error { return nil }); err != nil {
		t.Fatalf("scan after a power loss: %v", err)
	}
	t.Logf("power loss after %d records told durable", len(m.lost))
}
