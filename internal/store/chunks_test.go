package store_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/store"

	bolt "go.etcd.io/bbolt"
)

// Chunks larger than a part are stored in parts; every read must return
// exactly what was appended, at and around the sizes where the layout
// changes: the part size (2000), 2 KiB, a whole number of parts, and far
// past a copy round.
func TestLargeChunks(t *testing.T) {
	for _, size := range []int{0, 1, 1999, 2000, 2001, 2047, 2048, 2049, 4000, 4001, 64 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := newStore(t)
			chunks := [][]byte{[]byte("before"), pattern(size, 1), []byte("after")}
			for i, c := range chunks {
				if err := s.Append("a", uint64(i), c, []byte(fmt.Sprint("m", i))); err != nil {
					t.Fatalf("Append(%d): %v", i, err)
				}
			}
			for i, want := range chunks {
				got, err := s.Chunk("a", uint64(i))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("Chunk(%d) = %d bytes, %v; want %d bytes", i, len(got), err, len(want))
				}
			}
			all := bytes.Join(chunks, nil)
			var buf bytes.Buffer
			if n, err := s.CopyRange("a", &buf, 0, -1); err != nil || n != int64(len(all)) || !bytes.Equal(buf.Bytes(), all) {
				t.Fatalf("CopyRange = %d bytes, %v; want %d", n, err, len(all))
			}
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st.Chunks, 3; got != want {
				t.Fatalf("Stats.Chunks = %d, want %d", got, want)
			}
			if got, err := s.Meta("a"); err != nil || string(got) != "m2" {
				t.Fatalf("Meta = %q, %v; want m2", got, err)
			}
			if err := s.DeleteChunks("a"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Chunk("a", 1); err == nil {
				t.Fatal("Chunk after DeleteChunks: no error")
			}
			if got, err := s.Meta("a"); err != nil || string(got) != "m2" {
				t.Fatalf("Meta after DeleteChunks = %q, %v; want m2", got, err)
			}
		})
	}
}

// Appending a seq again replaces the chunk whatever form either has: no
// part of the old chunk may survive into the new one.
func TestReplaceChunkForms(t *testing.T) {
	sizes := []int{10, 2000, 2001, 10000, 4001, 3, 64 << 10, 0, 2001}
	s := newStore(t)
	for i, size := range sizes {
		c := pattern(size, byte(i))
		if err := s.Append("a", 5, c, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Append("a", 6, []byte("next"), nil); err != nil {
			t.Fatal(err)
		}
		got, err := s.Chunk("a", 5)
		if err != nil || !bytes.Equal(got, c) {
			t.Fatalf("after replacing with %d bytes: Chunk = %d bytes, %v", size, len(got), err)
		}
		var buf bytes.Buffer
		if _, err := s.CopyRange("a", &buf, 0, -1); err != nil || !bytes.Equal(buf.Bytes(), append(c, "next"...)) {
			t.Fatalf("after replacing with %d bytes: content = %d bytes, %v", size, buf.Len(), err)
		}
	}
}

// CopyRange starts and stops inside parts and across their boundaries.
func TestCopyRangeParts(t *testing.T) {
	s := newStore(t)
	chunks := [][]byte{pattern(1<<20, 1), pattern(2001, 2), []byte("x"), pattern(64<<10+1, 3), pattern(4000, 4)}
	for i, c := range chunks {
		if err := s.Append("a", uint64(i), c, nil); err != nil {
			t.Fatal(err)
		}
	}
	all := bytes.Join(chunks, nil)
	total := int64(len(all))
	var offs []int64
	for _, o := range []int64{0, 1, 1999, 2000, 2001, 4000, 4001, 1 << 20} {
		offs = append(offs, o, total-o)
	}
	for _, off := range offs {
		for _, n := range []int64{-1, 0, 1, 1999, 2000, 2001, 64 << 10, 1<<20 + 3} {
			end := total
			if n >= 0 && off+n < total {
				end = off + n
			}
			var want []byte
			if off < end {
				want = all[off:end]
			}
			var buf bytes.Buffer
			got, err := s.CopyRange("a", &buf, off, n)
			if err != nil || got != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("CopyRange(off %d, n %d) = %d bytes, %v; want %d", off, n, got, err, len(want))
			}
		}
	}
}

// A store written by a version 2 build, whose chunks are all stored whole
// whatever their size, reads the same after the upgrade, and takes new
// chunks next to the old ones.
func TestSchemaMigrationFrom2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	big := pattern(64<<10, 9)
	// The layout of a version 2 build, written by hand.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	seqKey := func(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("schema"), seqKey(2)); err != nil {
			return err
		}
		sessions, err := tx.CreateBucket([]byte("sessions"))
		if err != nil {
			return err
		}
		if err := sessions.Put([]byte("old"), []byte("first")); err != nil {
			return err
		}
		chunks, err := tx.CreateBucket([]byte("chunks"))
		if err != nil {
			return err
		}
		b, err := chunks.CreateBucket([]byte("old"))
		if err != nil {
			return err
		}
		for seq, v := range [][]byte{[]byte("small"), big} {
			if err := b.Put(seqKey(uint64(seq)), v); err != nil {
				return err
			}
		}
		return b.Put(bytes.Repeat([]byte{0xff}, 9), []byte("last"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openStore(t, path)
	if got, err := s.Meta("old"); err != nil || string(got) != "last" {
		t.Fatalf("Meta after upgrade = %q, %v; want last", got, err)
	}
	if got, err := s.Chunk("old", 1); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Chunk(1) after upgrade = %d bytes, %v", len(got), err)
	}
	newer := pattern(5000, 10)
	if err := s.Append("old", 2, newer, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	want := bytes.Join([][]byte{[]byte("small"), big, newer}, nil)
	var buf bytes.Buffer
	if _, err := s.CopyRange("old", &buf, 0, -1); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("content after upgrade = %d bytes, %v; want %d", buf.Len(), err, len(want))
	}
	var metas []string
	err = s.ForEachMeta(func(id string, meta []byte) error {
		metas = append(metas, id+"="+string(meta))
		return nil
	})
	if err != nil || fmt.Sprint(metas) != "[old=newer]" {
		t.Fatalf("ForEachMeta = %v, %v", metas, err)
	}
	s.Close()

	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if got, want := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema"))), uint64(store.SchemaVersion); got != want {
			return fmt.Errorf("schema version after Open: got %d, want %d", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pattern returns n bytes that differ from one position to the next and
// from one tag to another, so that a misplaced or repeated part shows.
func pattern(n int, tag byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) ^ tag
	}
	return b
}
