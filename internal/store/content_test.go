package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/store"

	bolt "go.etcd.io/bbolt"
)

// A store file written by the last release that kept chunks in the bbolt
// file is migrated on first start: every chunk reads as it was written, the
// finished session keeps its summary, and the content goes on from there.
func TestMigrateReleaseFile(t *testing.T) {
	var want map[string][]string
	b, err := os.ReadFile("testdata/v3.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orion.db")
	copyFile(t, "testdata/v3.db", path)

	for round := range 2 { // migrated, then reopened as it is
		s := openStore(t, path)
		for id, chunks := range want {
			if _, err := s.Meta(id); err != nil {
				t.Fatalf("round %d: Meta(%s): %v", round, id, err)
			}
			for i, c := range chunks {
				got, err := s.Chunk(id, uint64(i+1))
				if err != nil || string(got) != c {
					t.Fatalf("round %d: %s chunk %d = %d bytes, %v; want %d", round, id, i+1, len(got), err, len(c))
				}
			}
			var buf bytes.Buffer
			if _, err := s.CopyRange(id, &buf, 0, -1); err != nil || buf.String() != joined(chunks) {
				t.Fatalf("round %d: %s content = %d bytes, %v; want %d", round, id, buf.Len(), err, len(joined(chunks)))
			}
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Sessions != len(want) || st.Chunks != 6 {
			t.Fatalf("round %d: %d sessions, %d chunks; want %d, 6", round, st.Sessions, st.Chunks, len(want))
		}
		s.Close()
	}
}

func joined(chunks []string) string {
	var b bytes.Buffer
	for _, c := range chunks {
		b.WriteString(c)
	}
	return b.String()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// crashImage copies the store's files as a crash would leave them: the
// bbolt file as of its last commit (nothing is committing: the index
// entries wait for an hour) and the log's segments.
func crashImage(t *testing.T, path string) string {
	t.Helper()
	dir := t.TempDir()
	to := filepath.Join(dir, "orion.db")
	copyFile(t, path, to)
	if err := os.MkdirAll(store.LogDir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(store.LogDir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		// A file the store's background work renamed or removed since
		// the listing is one a crash then would not have left either.
		b, err := os.ReadFile(filepath.Join(store.LogDir(path), e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(store.LogDir(to), e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// An Append is durable when it returns, although its index entry waits for
// a later commit: a crash before that commit loses nothing, since the next
// Open indexes it from the log.
func TestAppendsReplayedAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	if err := s.PutMeta("a", []byte("begun")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("a", 1, []byte("one;"), []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("b", []byte("begun")); err != nil { // commits a's first entry
		t.Fatal(err)
	}
	for i := 2; i <= 5; i++ {
		if err := s.Append("a", uint64(i), []byte(fmt.Sprint(i, ";")), []byte(fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append("b", 1, bytes.Repeat([]byte("b"), 9000), []byte("mb")); err != nil {
		t.Fatal(err)
	}
	img := crashImage(t, path)

	c := openStore(t, img)
	var buf bytes.Buffer
	if _, err := c.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "one;2;3;4;5;" {
		t.Fatalf("content of a after the crash = %q, %v", buf.String(), err)
	}
	if meta, err := c.Meta("a"); err != nil || string(meta) != "m5" {
		t.Fatalf("meta of a after the crash = %q, %v; want the last Append's", meta, err)
	}
	if got, err := c.Chunk("b", 1); err != nil || len(got) != 9000 {
		t.Fatalf("chunk of b after the crash: %d bytes, %v", len(got), err)
	}
}

// An Append without metadata leaves the last one written, committed or
// replayed from the log after a crash; its chunk is there all the same.
func TestAppendWithoutMetaKeepsTheLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	if err := s.PutMeta("a", []byte("begun")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("a", 1, []byte("one;"), []byte("m1")); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 4; i++ {
		if err := s.Append("a", uint64(i), []byte(fmt.Sprint(i, ";")), nil); err != nil {
			t.Fatal(err)
		}
	}
	if meta, err := s.Meta("a"); err != nil || string(meta) != "m1" {
		t.Fatalf("meta of a = %q, %v; want the last Append's that had some", meta, err)
	}
	img := crashImage(t, path)
	if err := s.PutMeta("b", []byte("begun")); err != nil { // commits a's entries
		t.Fatal(err)
	}
	for name, st := range map[string]*store.Store{"committed": s, "replayed": openStore(t, img)} {
		var buf bytes.Buffer
		if _, err := st.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "one;2;3;4;" {
			t.Errorf("%s: content of a = %q, %v", name, buf.String(), err)
		}
		if meta, err := st.Meta("a"); err != nil || string(meta) != "m1" {
			t.Errorf("%s: meta of a = %q, %v; want m1", name, meta, err)
		}
	}
}

// A finished session is not brought back by the replay of its Appends: the
// write that finished it committed their index entries first.
func TestReplayDoesNotReviveFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	for i := 1; i <= 3; i++ {
		if err := s.Append("a", uint64(i), []byte("x"), []byte("streaming")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish("a", []byte("completed")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("b", 1, []byte("y"), []byte("streaming")); err != nil {
		t.Fatal(err)
	}
	c := openStore(t, crashImage(t, path))
	if meta, err := c.Meta("a"); err != nil || string(meta) != "completed" {
		t.Fatalf("meta of a = %q, %v; want completed", meta, err)
	}
	if _, err := c.Chunk("a", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("chunk of a finished session after replay: %v, want ErrNotFound", err)
	}
	if got, err := c.Chunk("b", 1); err != nil || string(got) != "y" {
		t.Fatalf("chunk of b = %q, %v", got, err)
	}
}

// segments returns the paths of the store's segment files.
func segments(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(store.LogDir(path), "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A bit flipped on disk in a chunk is reported, never served: the read of
// that chunk fails with ErrDamaged and the copy stops before its bytes.
func TestDamagedChunkIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openStore(t, path)
	chunks := []string{"first chunk;", "second chunk, to be damaged;", "third chunk;"}
	for i, c := range chunks {
		if err := s.Append("a", uint64(i+1), []byte(c), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seg := segments(t, path)[0]
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("to be damaged"))
	b[i] ^= 0x04
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	if got, err := s.Chunk("a", 1); err != nil || string(got) != chunks[0] {
		t.Fatalf("undamaged chunk = %q, %v", got, err)
	}
	if got, err := s.Chunk("a", 2); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("damaged chunk = %q, %v; want ErrDamaged", got, err)
	}
	var buf bytes.Buffer
	_, err = s.CopyRange("a", &buf, 0, -1)
	if !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("CopyRange over a damaged chunk: %v, want ErrDamaged", err)
	}
	if bytes.Contains(buf.Bytes(), []byte("damaged")) {
		t.Fatalf("CopyRange served the damaged chunk: %q", buf.String())
	}
}

// A torn record at the end of the log (an Append that never returned) is
// dropped at Open, and what was acknowledged before it is all there.
func TestTornTailDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	for i := 1; i <= 3; i++ {
		if err := s.Append("a", uint64(i), []byte(fmt.Sprint("chunk", i, ";")), []byte(fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	img := crashImage(t, path)
	seg := segments(t, img)[0]
	b, _ := os.ReadFile(seg)
	i := bytes.Index(b, []byte("chunk3;"))
	copy(b[i:], make([]byte, 7)) // its last sectors never reached the disk
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := openStore(t, img)
	var buf bytes.Buffer
	if _, err := c.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "chunk1;chunk2;" {
		t.Fatalf("content = %q, %v", buf.String(), err)
	}
	if meta, _ := c.Meta("a"); string(meta) != "m2" {
		t.Fatalf("meta = %q, want m2", meta)
	}
	// The next Append takes the torn record's place and survives.
	if err := c.Append("a", 3, []byte("again;"), []byte("m3")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = openStore(t, img)
	buf.Reset()
	if _, err := c.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "chunk1;chunk2;again;" {
		t.Fatalf("content after reopen = %q, %v", buf.String(), err)
	}
}

// Segments whose chunks are all dropped are deleted, a mostly dead one is
// compacted, and the store's size counts the log.
func TestReclaimSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, err := store.Open(path, store.Options{SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunk := bytes.Repeat([]byte("z"), 4000)
	// "keep" has one chunk in the first segment, among many of "drop".
	if err := s.Append("keep", 1, []byte("kept chunk"), []byte("k")); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := s.Append("drop", uint64(i), chunk, []byte("d")); err != nil {
			t.Fatal(err)
		}
	}
	used, err := s.Used()
	if err != nil {
		t.Fatal(err)
	}
	if used < 60*4000 {
		t.Fatalf("Used = %d, less than the content appended", used)
	}
	before := len(segments(t, path))
	if before < 3 {
		t.Fatalf("%d segments, want several", before)
	}
	if err := s.Finish("drop", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	after := len(segments(t, path))
	if after > 2 {
		t.Fatalf("%d segments after dropping most content (%d before), want at most 2", after, before)
	}
	if got, err := s.Chunk("keep", 1); err != nil || string(got) != "kept chunk" {
		t.Fatalf("live chunk after compaction = %q, %v", got, err)
	}
	if u2, _ := s.Used(); u2 >= used/2 {
		t.Fatalf("Used = %d after dropping most content, was %d", u2, used)
	}
	s.Close()
	s = openStore(t, path)
	var buf bytes.Buffer
	if _, err := s.CopyRange("keep", io.Writer(&buf), 0, -1); err != nil || buf.String() != "kept chunk" {
		t.Fatalf("after reopen = %q, %v", buf.String(), err)
	}
}

// Reading a session whose last appends are not indexed yet costs no commit:
// their chunks are read from the entries waiting for one, after the indexed
// ones, at any offset and length.
func TestCopyRangeReadsPendingAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	chunks := []string{"aaaa", "bbbbbb", "cc", "dddddddd", "e"}
	for i, c := range chunks[:2] {
		if err := s.Append("a", uint64(i+1), []byte(c), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutMeta("other", []byte("x")); err != nil { // indexes the first two
		t.Fatal(err)
	}
	for i, c := range chunks[2:] {
		if err := s.Append("a", uint64(i+3), []byte(c), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	all := joined(chunks)
	before, _ := s.Stats()
	for off := int64(0); off <= int64(len(all)); off++ {
		for _, n := range []int64{-1, 0, 1, 3, 7, 100} {
			end := int64(len(all))
			if n >= 0 && off+n < end {
				end = off + n
			}
			var buf bytes.Buffer
			got, err := s.CopyRange("a", &buf, off, n)
			if err != nil || buf.String() != all[off:end] || got != end-off {
				t.Fatalf("CopyRange(%d, %d) = %q (%d), %v; want %q", off, n, buf.String(), got, err, all[off:end])
			}
		}
	}
	// A session none of whose chunks is indexed yet reads the same way.
	if err := s.Append("b", 1, []byte("only pending"), []byte("m")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.CopyRange("b", &buf, 0, -1); err != nil || buf.String() != "only pending" {
		t.Fatalf("CopyRange(b) = %q, %v", buf.String(), err)
	}
	after, _ := s.Stats()
	if after.Commits != before.Commits {
		t.Fatalf("reads made %d commits, want none", after.Commits-before.Commits)
	}
}

// A crash in the middle of a compaction, with the live chunks copied to the
// end of the log and the index still pointing at the originals, loses
// nothing: the copies are never replayed over the session (its later
// record stands), and the originals are still there to read.
func TestCrashDuringCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, err := store.Open(path, store.Options{SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var img string
	store.AfterCompactCopy(s, func() {
		if img == "" {
			img = crashImage(t, path)
		}
	})
	if err := s.Append("keep", 1, []byte("kept chunk"), []byte("first")); err != nil {
		t.Fatal(err)
	}
	// A backup's value in the same segment is moved the same way.
	if err := s.PutKV("backups", []store.KV{{Key: []byte("keep/0"), Value: []byte("kept backup")}}); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("z"), 4000)
	for i := range 60 {
		if err := s.Append("drop", uint64(i), chunk, []byte("d")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutMeta("keep", []byte("later")); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("drop", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	if img == "" {
		t.Fatal("no compaction happened")
	}
	if v, _, err := s.GetKV("backups", []byte("keep/0")); err != nil || string(v) != "kept backup" {
		t.Fatalf("backup after compaction = %q, %v", v, err)
	}
	c := openStore(t, img)
	if got, err := c.Chunk("keep", 1); err != nil || string(got) != "kept chunk" {
		t.Fatalf("chunk after a crash during compaction = %q, %v", got, err)
	}
	if v, _, err := c.GetKV("backups", []byte("keep/0")); err != nil || string(v) != "kept backup" {
		t.Fatalf("backup after a crash during compaction = %q, %v", v, err)
	}
	if meta, err := c.Meta("keep"); err != nil || string(meta) != "later" {
		t.Fatalf("meta after a crash during compaction = %q, %v; want the later PutMeta's", meta, err)
	}
	// The next compaction of the reopened store finishes the job.
	if err := c.Append("more", 1, bytes.Repeat([]byte("y"), 70<<10), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish("more", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(c)
	if got, err := c.Chunk("keep", 1); err != nil || string(got) != "kept chunk" {
		t.Fatalf("chunk after the next compaction = %q, %v", got, err)
	}
	if v, _, err := c.GetKV("backups", []byte("keep/0")); err != nil || string(v) != "kept backup" {
		t.Fatalf("backup after the next compaction = %q, %v", v, err)
	}
}

// Compaction holds a bounded part of a segment's live records in memory at
// a time, however many there are: it copies them in batches, and every
// chunk reads back whole afterwards.
func TestCompactionCopiesInBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, err := store.Open(path, store.Options{SegmentSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	copies := 0
	store.AfterCompactCopy(s, func() { copies++ })
	// 1.3 MiB kept among 5.2 MiB dropped: under a quarter of the segment
	// is live, so it is compacted, and more than a batch has to move.
	var kept []string
	chunk := bytes.Repeat([]byte("z"), 4000)
	for i := range 1700 {
		if i%5 == 0 {
			c := fmt.Sprintf("%04d:%s", i, bytes.Repeat([]byte("k"), 3995))
			kept = append(kept, c)
			if err := s.Append("keep", uint64(len(kept)), []byte(c), []byte("k")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.Append("drop", uint64(i), chunk, []byte("d")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish("drop", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	if copies < 2 {
		t.Fatalf("compaction copied %d batches, want the live 1.3 MiB in batches of 1 MiB at most", copies)
	}
	var buf bytes.Buffer
	if _, err := s.CopyRange("keep", &buf, 0, -1); err != nil || buf.String() != joined(kept) {
		t.Fatalf("kept session after compaction: %d bytes, %v; want %d", buf.Len(), err, len(joined(kept)))
	}
}

// A flipped bit in the header of an indexed record, in the middle of the
// last segment, hides where the records after it start: the log seems to end
// there. Those records are indexed and still readable, and new appends go to
// a new segment instead of overwriting them.
func TestDamagedHeaderKeepsLaterRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openStore(t, path)
	for i, c := range []string{"first;", "second;", "third;"} {
		if err := s.Append("a", uint64(i+1), []byte(c), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seg := segments(t, path)[0]
	b, _ := os.ReadFile(seg)
	// The second record's header is 16 bytes before its payload, which
	// starts with the record kind, flags and id length, then "a".
	i := bytes.Index(b, []byte("second;"))
	hdr := bytes.LastIndex(b[:i], []byte{1, 0, 0, 1, 'a'}) - 16
	b[hdr+5] ^= 0x01
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	if err := s.Append("a", 4, []byte("fourth;"), []byte("m")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chunk("a", 3); err != nil || string(got) != "third;" {
		t.Fatalf("record after the damaged one = %q, %v", got, err)
	}
	if _, err := s.Chunk("a", 2); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("record with the damaged header: %v, want ErrDamaged", err)
	}
	if got, err := s.Chunk("a", 4); err != nil || string(got) != "fourth;" {
		t.Fatalf("new append = %q, %v", got, err)
	}
	if n := len(segments(t, path)); n != 2 {
		t.Fatalf("%d segments, want the new append in a second one", n)
	}
}

// A record damaged before its index entry was committed cannot be told
// apart from the rest: its session resumes at the chunk it held, so that
// no later chunk is served with a hole before it.
func TestDamagedUnindexedRecordStopsItsSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	if err := s.Append("a", 1, []byte("c1;"), []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("other", []byte("x")); err != nil { // indexes chunk 1
		t.Fatal(err)
	}
	for i := 2; i <= 4; i++ {
		if err := s.Append("a", uint64(i), []byte(fmt.Sprintf("c%d;", i)), []byte(fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append("b", 1, []byte("b1;"), []byte("mb")); err != nil {
		t.Fatal(err)
	}
	img := crashImage(t, path)
	seg := segments(t, img)[0]
	b, _ := os.ReadFile(seg)
	i := bytes.Index(b, []byte("c3;"))
	b[i] ^= 0x20
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := openStore(t, img)
	var buf bytes.Buffer
	if _, err := c.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "c1;c2;" {
		t.Fatalf("content of a = %q, %v; want it to stop before the damaged chunk", buf.String(), err)
	}
	if meta, _ := c.Meta("a"); string(meta) != "m2" {
		t.Fatalf("meta of a = %q, want m2, the last chunk before the hole", meta)
	}
	if got, err := c.Chunk("b", 1); err != nil || string(got) != "b1;" {
		t.Fatalf("another session = %q, %v", got, err)
	}
}

// Index entries whose commit fails are acknowledged already: however many
// commits fail, and whichever of their retries succeed, meta/logpos must not
// pass an entry that is not committed, or the next Open would not index its
// chunk.
func TestFailedIndexEntryNotPassed(t *testing.T) {
	for fails := 1; fails <= 4; fails++ {
		t.Run(fmt.Sprint(fails), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "orion.db")
			var fail atomic.Int32
			s, err := store.Open(path, store.WithCommitFaults(store.Options{DeferDelay: time.Hour}, func() error {
				if fail.Add(-1) >= 0 {
					return errors.New("injected commit failure")
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ids := []string{"a", "b", "c"}
			for _, id := range ids[:2] {
				if err := s.Append(id, 1, []byte(id+" content"), []byte(id+" meta")); err != nil {
					t.Fatal(err)
				}
			}
			fail.Store(int32(fails))
			s.Flush()
			// A write after them commits them first, or fails.
			for i := 0; ; i++ {
				if err := s.PutMeta("c", []byte("c meta")); err == nil {
					break
				} else if i == fails {
					t.Fatalf("write after %d failed commits: %v", fails, err)
				}
			}
			if err := s.Append("c", 1, []byte("c content"), []byte("c meta")); err != nil {
				t.Fatal(err)
			}
			s.Flush()
			c := openStore(t, crashImage(t, path))
			for _, id := range ids {
				if got, err := c.Chunk(id, 1); err != nil || string(got) != id+" content" {
					t.Errorf("chunk of %s after a crash = %q, %v; want %q", id, got, err, id+" content")
				}
			}
		})
	}
}

// Index entries whose commit still fails at Close are indexed from the log
// at the next Open; until then reads find them.
func TestFailedIndexEntryAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	var failing atomic.Bool
	s, err := store.Open(path, store.WithCommitFaults(store.Options{DeferDelay: time.Hour}, func() error {
		if failing.Load() {
			return errors.New("injected commit failure")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("z", []byte("z meta")); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	for _, id := range []string{"a", "b"} {
		if err := s.Append(id, 1, []byte(id+" content"), []byte(id+" meta")); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	var buf bytes.Buffer
	if _, err := s.CopyRange("b", &buf, 0, -1); err != nil || buf.String() != "b content" {
		t.Errorf("content of b while its index entry fails = %q, %v", buf.String(), err)
	}
	s.Close()
	c := openStore(t, path)
	for _, id := range []string{"a", "b"} {
		if got, err := c.Chunk(id, 1); err != nil || string(got) != id+" content" {
			t.Errorf("chunk of %s after a restart = %q, %v; want %q", id, got, err, id+" content")
		}
	}
}

// What --store-max-bytes is checked against counts every commit that took
// effect, even one whose commit call has not returned yet: a write admitted
// against the bbolt file's use before it would go past the cap unnoticed.
func TestUsedCountsCommitJustMade(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "orion.db"), store.Options{SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, err := s.Used()
	if err != nil {
		t.Fatal(err)
	}
	during, err := store.UsedOnCommit(s, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("used-test"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), bytes.Repeat([]byte("v"), 1<<20))
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Used()
	if err != nil {
		t.Fatal(err)
	}
	if after < before+1<<20 || during != after {
		t.Fatalf("used %d before a commit of a MiB, %d once it took effect, %d after: want the MiB counted as soon as it took effect", before, during, after)
	}
}

// Index entries whose commit failed still hold their metadata in memory
// while they wait again: they count towards the size at which the deferred
// entries commit without waiting, as they did the first time.
func TestFailedIndexEntriesCountTowardsFlush(t *testing.T) {
	s, failing := openWithFailingCommits(t)
	meta := bytes.Repeat([]byte("m"), store.MaxDeferredBytes/4)
	failing.Store(true)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Append(id, 1, []byte(id+" content"), meta); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush() // fails: the three entries wait again
	store.WaitKickedFlushes(s)
	failing.Store(false)
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Three quarters and this one make the limit.
	if err := s.Append("d", 1, []byte("d content"), meta); err != nil {
		t.Fatal(err)
	}
	store.WaitKickedFlushes(s)
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.Commits == before.Commits {
		t.Fatalf("deferred index entries holding %d bytes of metadata, three of them after a failed commit, were not committed: want a commit once they reach %d", 4*len(meta), store.MaxDeferredBytes)
	}
}

// A write refused because the index entries before it cannot commit says
// so once: "store: commit: store: commit: ..." reads as two failures.
func TestWriteBehindFailedIndexEntriesError(t *testing.T) {
	s, failing := openWithFailingCommits(t)
	failing.Store(true)
	if err := s.Append("a", 1, []byte("a content"), []byte("a meta")); err != nil {
		t.Fatal(err)
	}
	err := s.PutMeta("b", []byte("b meta"))
	if err == nil {
		t.Fatal("a write committed before the index entries it must follow")
	}
	if n := strings.Count(err.Error(), "store: commit:"); n != 1 || !strings.Contains(err.Error(), "injected commit failure") {
		t.Fatalf("error %q: want the commit failure, said once", err)
	}
}

// openWithFailingCommits opens a store whose deferred entries wait for an
// explicit flush, and whose commits fail while the returned flag is set.
func openWithFailingCommits(t *testing.T) (*store.Store, *atomic.Bool) {
	t.Helper()
	failing := new(atomic.Bool)
	s, err := store.Open(filepath.Join(t.TempDir(), "orion.db"), store.WithCommitFaults(store.Options{DeferDelay: time.Hour}, func() error {
		if failing.Load() {
			return errors.New("injected commit failure")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, failing
}
