package store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/store"

	bolt "go.etcd.io/bbolt"
)

// v4Manifest is testdata/v4.json: what the store file made by the release
// with schema 4 holds.
type v4Manifest struct {
	Session string `json:"session"`
	Chunks  []string
	// Values maps each content bucket to its keys (hex) and the sha256 of
	// their values.
	Values map[string]map[string]string `json:"values"`
}

// A store written by the release that kept backups and checkpoint contents
// in the bbolt file is migrated on first start: every value reads back as
// it was, now from the content log, the open session's chunks still read
// from the log it had, and what is written afterwards survives a reopen.
func TestMigrateValuesFromReleaseFile(t *testing.T) {
	var want v4Manifest
	b, err := os.ReadFile("testdata/v4.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orion.db")
	copyFile(t, "testdata/v4.db", path)
	if err := os.Mkdir(store.LogDir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "testdata/v4.db.segments/0000000000000001.seg", filepath.Join(store.LogDir(path), "0000000000000001.seg"))

	check := func(round int, s *store.Store) {
		t.Helper()
		var total int64
		for bucket, keys := range want.Values {
			if !store.IsContentBucket(bucket) {
				t.Fatalf("%s is not a content bucket", bucket)
			}
			seen := 0
			err := s.ScanKV(bucket, nil, func(k, v []byte) (bool, error) {
				seen++
				sum := sha256.Sum256(v)
				if got, want := hex.EncodeToString(sum[:]), keys[hex.EncodeToString(k)]; got != want {
					t.Errorf("round %d: %s %x: value sha256 %s, want %s", round, bucket, k, got, want)
				}
				total += int64(len(v))
				if bucket == blobstore.Bucket {
					data, err := blobstore.Decode(v)
					if err != nil || sha256.Sum256(data) != [32]byte(k) {
						t.Errorf("round %d: checkpoint content %x does not decode to its hash (%v)", round, k[:8], err)
					}
				}
				return true, nil
			})
			if err != nil {
				t.Fatalf("round %d: scan %s: %v", round, bucket, err)
			}
			if seen != len(keys) {
				t.Fatalf("round %d: %s holds %d keys, want %d", round, bucket, seen, len(keys))
			}
			for k := range keys {
				key, _ := hex.DecodeString(k)
				if v, ok, err := s.GetKV(bucket, key); err != nil || !ok || hex.EncodeToString(sum(v)) != keys[k] {
					t.Fatalf("round %d: GetKV(%s, %x) = %d bytes, %v, %v", round, bucket, key, len(v), ok, err)
				}
			}
		}
		var buf bytes.Buffer
		if _, err := s.CopyRange(want.Session, &buf, 0, -1); err != nil || buf.String() != joined(want.Chunks) {
			t.Fatalf("round %d: open session's content = %q..., %v", round, buf.String()[:min(buf.Len(), 20)], err)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.LiveLogBytes < total {
			t.Fatalf("round %d: live log bytes %d, less than the %d bytes of values now in the log", round, st.LiveLogBytes, total)
		}
	}
	for round := range 2 { // migrated, then reopened as it is
		s, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(round, s)
		// The bbolt file was rewritten without the pages the values
		// took: it is not left at the old file's size.
		st, _ := s.Stats()
		if old := fileSize(t, "testdata/v4.db"); st.HighWater > old/2 {
			t.Fatalf("round %d: the store file uses %d bytes after the migration, the release's %d", round, st.HighWater, old)
		}
		s.Close()
	}
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Fatalf("the compaction's temporary file is left: %v", err)
	}

	// The bbolt file holds index entries where the values were.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		if got := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema"))); got != store.SchemaVersion {
			t.Errorf("schema version %d after migration, want %d", got, store.SchemaVersion)
		}
		for bucket := range want.Values {
			tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error {
				if len(v) != 28 {
					t.Errorf("%s %x: %d bytes in the bbolt file, want a 28-byte index entry", bucket, k, len(v))
				}
				return nil
			})
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Writes go on: a new value and chunk survive a reopen.
	s := openStore(t, path)
	if err := s.PutKV("backups", []store.KV{{Key: []byte("new/0"), Value: []byte("kept")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(want.Session, uint64(len(want.Chunks)+1), []byte("more"), []byte("m")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, path)
	if v, ok, err := s.GetKV("backups", []byte("new/0")); err != nil || !ok || string(v) != "kept" {
		t.Fatalf("new value after reopen = %q, %v, %v", v, ok, err)
	}
	var buf bytes.Buffer
	if _, err := s.CopyRange(want.Session, &buf, 0, -1); err != nil || buf.String() != joined(want.Chunks)+"more" {
		t.Fatalf("session after reopen: %d bytes, %v", buf.Len(), err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// Values of content buckets are stored in the log and read back through
// every KV method; the bbolt file holds only where they are. Deleting and
// replacing them counts their records dead, so their segments go.
func TestContentBucketValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(path, store.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	big := bytes.Repeat([]byte("backup piece "), 1000) // larger than a segment
	err = s.PutKVs(
		store.Put{Bucket: "backups", KVs: []store.KV{{Key: []byte("s/0"), Value: big}, {Key: []byte("s/1"), Value: []byte{}}}},
		store.Put{Bucket: "other", KVs: []store.KV{{Key: []byte("k"), Value: []byte("small")}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.GetKV("backups", []byte("s/0")); err != nil || !ok || !bytes.Equal(v, big) {
		t.Fatalf("GetKV = %d bytes, %v, %v", len(v), ok, err)
	}
	if v, ok, err := s.GetKV("backups", []byte("s/1")); err != nil || !ok || len(v) != 0 {
		t.Fatalf("GetKV of an empty value = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := s.GetKV("backups", []byte("s/2")); err != nil || ok {
		t.Fatalf("GetKV of a missing key = %v, %v", ok, err)
	}
	var keys []string
	if err := s.ScanKVReverse("backups", nil, func(k, v []byte) (bool, error) {
		keys = append(keys, string(k)+"="+string(v[:min(len(v), 6)]))
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := keys; len(got) != 2 || got[0] != "s/1=" || got[1] != "s/0=backup" {
		t.Fatalf("reverse scan = %q", got)
	}
	st, _ := s.Stats()
	if st.LiveLogBytes < int64(len(big)) {
		t.Fatalf("live log bytes %d, want at least %d", st.LiveLogBytes, len(big))
	}
	// Replaced, then deleted: nothing of the bucket is live any more,
	// and the segments that held it are reclaimed.
	if err := s.PutKV("backups", []store.KV{{Key: []byte("s/0"), Value: []byte("short")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKVs(store.Del{Bucket: "backups", Keys: [][]byte{[]byte("s/0"), []byte("s/1")}}, store.Del{Bucket: "other", Keys: [][]byte{[]byte("k")}}); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	st, _ = s.Stats()
	if st.LiveLogBytes != 0 {
		t.Fatalf("live log bytes %d after deleting every value, want 0", st.LiveLogBytes)
	}
	s.Close()
	if n := segmentFiles(t, path); n != 1 {
		t.Fatalf("%d segment files after every value was deleted, want only the one appends go to", n)
	}
	s, err = store.Open(path, store.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.GetKV("backups", []byte("s/0")); err != nil || ok {
		t.Fatalf("deleted value after reopen: %v, %v", ok, err)
	}
}

func segmentFiles(t *testing.T, path string) int {
	t.Helper()
	return len(segments(t, path))
}

// The segment appends go to is rotated once its records are mostly dead,
// so that it is reclaimed like the others instead of holding dead content
// until appends fill it; an almost empty one is left alone.
func TestMostlyDeadActiveSegmentIsReclaimed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(path, store.Options{SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	// Too little to rotate for: a tenth of the segment.
	if err := s.Append("small", 1, bytes.Repeat([]byte("s"), 6<<10), []byte("m")); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish("small", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	if got := segments(t, path); len(got) != 1 || filepath.Base(got[0]) != "0000000000000001.seg" {
		t.Fatalf("segments after a small dead session: %v, want the first alone", got)
	}
	// Half the segment, then dead, and one small chunk of another
	// session still live in it: copied out, and the segment goes.
	if err := s.Append("keep", 1, []byte("kept"), []byte("k")); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := s.Append("big", uint64(i+1), bytes.Repeat([]byte("b"), 4<<10), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish("big", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	got := segments(t, path)
	if len(got) != 1 || filepath.Base(got[0]) == "0000000000000001.seg" {
		t.Fatalf("segments after most of the active one died: %v, want one new segment", got)
	}
	st, _ := s.Stats()
	if st.Log.Bytes > 1<<10 {
		t.Fatalf("the log holds %d bytes of records with 4 bytes live", st.Log.Bytes)
	}
	s.Close()
	s = openStore(t, path)
	if c, err := s.Chunk("keep", 1); err != nil || string(c) != "kept" {
		t.Fatalf("live chunk after the rotation = %q, %v", c, err)
	}
}

// A segment in which only a checkpoint's content is live is live: reclaim
// counts the content buckets' entries, and compaction moves their records
// like chunks.
func TestContentBucketKeepsItsSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(path, store.Options{SegmentSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	blob := bytes.Repeat([]byte("checkpoint content "), 200) // 3,800 bytes
	if err := s.PutKV("checkpoint_blobs", []store.KV{{Key: []byte("h1"), Value: blob}}); err != nil {
		t.Fatal(err)
	}
	// Sessions fill and leave several segments after it.
	for i := range 12 {
		if err := s.Append("sess", uint64(i+1), bytes.Repeat([]byte("x"), 4<<10), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish("sess", []byte("done")); err != nil {
		t.Fatal(err)
	}
	store.WaitReclaim(s)
	if v, ok, err := s.GetKV("checkpoint_blobs", []byte("h1")); err != nil || !ok || !bytes.Equal(v, blob) {
		t.Fatalf("checkpoint content after reclaim: %d bytes, %v, %v", len(v), ok, err)
	}
	if n := segmentFiles(t, path); n > 3 {
		t.Fatalf("%d segments left, want the dead ones reclaimed", n)
	}
	s.Close()
	s = openStore(t, path)
	if v, ok, err := s.GetKV("checkpoint_blobs", []byte("h1")); err != nil || !ok || !bytes.Equal(v, blob) {
		t.Fatalf("checkpoint content after reopen: %d bytes, %v, %v", len(v), ok, err)
	}
}

// After a write of the log fails, the refused append may still be on disk
// whole. A crash must not bring it back: not when the session was finished
// since (its summary stays, no chunk appears), not when the chunk was
// resent (the resent bytes are the chunk).
func TestRefusedAppendNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(t *testing.T, s *store.Store)
		meta string
		want string
	}{
		{"Finished", func(t *testing.T, s *store.Store) {
			if err := s.Finish("a", []byte("finished")); err != nil {
				t.Fatal(err)
			}
		}, "finished", ""},
		{"Resent", func(t *testing.T, s *store.Store) {
			if err := s.Append("a", 3, []byte("resent;"), []byte("m3")); err != nil {
				t.Fatal(err)
			}
		}, "m3", "one;two;resent;"},
		{"NothingElse", func(t *testing.T, s *store.Store) {}, "m2", "one;two;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "orion.db")
			syncs := 0
			s, err := store.Open(path, store.WithLogFaults(store.Options{DeferDelay: time.Hour}, func(op string) error {
				if op == "sync" {
					if syncs++; syncs == 3 {
						// The write went through whole: only
						// its sync fails.
						return errors.New("injected sync failure")
					}
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, c := range []string{"one;", "two;"} {
				if err := s.Append("a", uint64(i+1), []byte(c), []byte(fmt.Sprintf("m%d", i+1))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Append("a", 3, []byte("refused;"), []byte("refused meta")); err == nil {
				t.Fatal("append acknowledged though its sync failed")
			}
			tc.then(t, s)
			c := openStore(t, crashImage(t, path))
			if m, err := c.Meta("a"); err != nil || string(m) != tc.meta {
				t.Fatalf("metadata after the crash = %q, %v; want %q", m, err, tc.meta)
			}
			var buf bytes.Buffer
			c.CopyRange("a", &buf, 0, -1)
			if buf.String() != tc.want {
				t.Fatalf("content after the crash = %q, want %q", buf.String(), tc.want)
			}
			// Appends go on, and survive another crash.
			if err := c.Append("a", 9, []byte("later;"), []byte("m9")); err != nil {
				t.Fatal(err)
			}
			c2 := openStore(t, crashImage(t, c.Path()))
			if got, err := c2.Chunk("a", 9); err != nil || string(got) != "later;" {
				t.Fatalf("append after the restart, after another crash = %q, %v", got, err)
			}
		})
	}
}

// A damaged value is reported, never returned as data.
func TestDamagedValueIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openStore(t, path)
	if err := s.PutKV("checkpoint_blobs", []store.KV{{Key: []byte("h"), Value: []byte("the stored content")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	seg := filepath.Join(store.LogDir(path), "0000000000000001.seg")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The record is the first of the segment, after its 16-byte header:
	// flip a bit of its value.
	b := make([]byte, 1)
	at := int64(16 + 5 + len("checkpoint_blobs") + 2 + 1 + 3)
	f.ReadAt(b, at)
	b[0] ^= 1
	f.WriteAt(b, at)
	f.Close()
	s = openStore(t, path)
	if _, _, err := s.GetKV("checkpoint_blobs", []byte("h")); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("GetKV of a damaged value: %v, want ErrDamaged", err)
	}
	err = s.ScanKV("checkpoint_blobs", nil, func(k, v []byte) (bool, error) {
		t.Fatalf("scan returned a damaged value: %q", v)
		return false, nil
	})
	if !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("scan of a damaged value: %v, want ErrDamaged", err)
	}
}

// A prefix scan of a content bucket ends at the last key with the prefix
// without reading the next key's value: a damaged record of something else
// must not fail it.
func TestPrefixScanReadsNoValuePastThePrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openStore(t, path)
	if err := s.PutKV("backups", []store.KV{
		{Key: []byte("a/1"), Value: []byte("one;")},
		{Key: []byte("a/2"), Value: []byte("two;")},
		{Key: []byte("a0"), Value: []byte("DAMAGED-UNRELATED")},
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	damageLogged(t, path, "DAMAGED-UNRELATED")
	s = openStore(t, path)
	var got []string
	err := s.ScanKVPrefix("backups", []byte("a/"), func(k, v []byte) (bool, error) {
		got = append(got, string(k)+"="+string(v))
		return true, nil
	})
	if err != nil || strings.Join(got, " ") != "a/1=one; a/2=two;" {
		t.Fatalf("prefix scan = %q, %v; want a/1 and a/2", got, err)
	}
	// The record is damaged indeed: a scan that reaches it fails.
	if err := s.ScanKV("backups", []byte("a/2"), func(k, v []byte) (bool, error) { return true, nil }); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("scan through the damaged value: %v, want ErrDamaged", err)
	}
}

// damageLogged flips a bit of the value that begins with marker in the
// content log of the store at path.
func damageLogged(t *testing.T, path, marker string) {
	t.Helper()
	ents, err := os.ReadDir(store.LogDir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		seg := filepath.Join(store.LogDir(path), e.Name())
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			b[i] ^= 1
			if err := os.WriteFile(seg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%q is not in the content log", marker)
}

// An Append that stores a backup (a content bucket's value) with its chunk
// is one sync of the log and no commit: the value is read at once, is in
// the index after the next commit, and a crash before that commit loses
// neither the chunk nor the value, nor brings back a value it replaced.
func TestAppendWithValueOneSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	put := func(v string) store.Put {
		return store.Put{Bucket: "backups", KVs: []store.KV{{Key: []byte("w/0"), Value: []byte(v)}}}
	}
	if err := s.PutKVs(put("older backup")); err != nil {
		t.Fatal(err)
	}
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append("w", 1, []byte("the new content"), []byte("finalizing"), put("the old content")); err != nil {
		t.Fatal(err)
	}
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Log.Syncs - before.Log.Syncs; got != 1 {
		t.Errorf("the append with its backup took %d syncs of the log, want 1", got)
	}
	if got := after.Commits - before.Commits; got != 0 {
		t.Errorf("the append with its backup took %d bbolt commits before returning, want 0", got)
	}
	img := crashImage(t, path)
	for name, st := range map[string]*store.Store{"running": s, "replayed": openStore(t, img)} {
		if v, ok, err := st.GetKV("backups", []byte("w/0")); err != nil || !ok || string(v) != "the old content" {
			t.Errorf("%s: backup = %q, %v, %v; want the one stored with the append", name, v, ok, err)
		}
		var buf bytes.Buffer
		if _, err := st.CopyRange("w", &buf, 0, -1); err != nil || buf.String() != "the new content" {
			t.Errorf("%s: content = %q, %v", name, buf.String(), err)
		}
		if meta, err := st.Meta("w"); err != nil || string(meta) != "finalizing" {
			t.Errorf("%s: meta = %q, %v", name, meta, err)
		}
	}
	// Dropped after the append: a crash does not bring it back.
	if err := s.DeleteKV("backups", [][]byte{[]byte("w/0")}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := openStore(t, crashImage(t, path)).GetKV("backups", []byte("w/0")); err != nil || ok {
		t.Errorf("a dropped backup came back after a crash: %v, %v", ok, err)
	}
}

// LogMeta journals a session's metadata, and the backup stored with it, in
// one sync of the log and no commit; a crash before the commit that indexes
// them loses neither, and a later write of the session still lands after
// it.
func TestLogMetaOneSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openDeferred(t, path)
	if err := s.Append("w", 1, []byte("streamed content"), []byte("streaming")); err != nil {
		t.Fatal(err)
	}
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	backup := store.Put{Bucket: "backups", KVs: []store.KV{{Key: []byte("w/0"), Value: []byte("the old content")}}}
	if err := s.LogMeta("w", []byte("finalizing"), backup); err != nil {
		t.Fatal(err)
	}
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Log.Syncs - before.Log.Syncs; got != 1 {
		t.Errorf("LogMeta took %d syncs of the log, want 1", got)
	}
	if got := after.Commits - before.Commits; got != 0 {
		t.Errorf("LogMeta took %d bbolt commits, want 0", got)
	}
	if after.Chunks != 1 {
		t.Errorf("Stats counts %d chunks, want 1: the metadata record is none", after.Chunks)
	}
	if err := s.LogMeta("begun", []byte("streaming")); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Stats(); err != nil || st.Sessions != after.Sessions+1 {
		t.Errorf("Stats counts %d sessions after a new one's LogMeta, want %d (%v)", st.Sessions, after.Sessions+1, err)
	}
	check := func(name string, st *store.Store, wantMeta string) {
		t.Helper()
		if meta, err := st.Meta("w"); err != nil || string(meta) != wantMeta {
			t.Errorf("%s: meta = %q, %v; want %q", name, meta, err, wantMeta)
		}
		if v, ok, err := st.GetKV("backups", []byte("w/0")); err != nil || !ok || string(v) != "the old content" {
			t.Errorf("%s: backup = %q, %v, %v", name, v, ok, err)
		}
		var buf bytes.Buffer
		if _, err := st.CopyRange("w", &buf, 0, -1); err != nil || buf.String() != "streamed content" {
			t.Errorf("%s: content = %q, %v", name, buf.String(), err)
		}
	}
	img := crashImage(t, path)
	check("replayed", openStore(t, img), "finalizing")
	if err := s.PutMeta("w", []byte("completed")); err != nil {
		t.Fatal(err)
	}
	check("running", s, "completed")
	check("replayed after a later write", openStore(t, crashImage(t, path)), "completed")
}
