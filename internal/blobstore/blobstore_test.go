package blobstore_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/store"
)

func open(t *testing.T) (*blobstore.Bolt, *store.Store) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := blobstore.OpenBolt(st)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func blob(data []byte) blobstore.Blob { return blobstore.Blob{Hash: sha256.Sum256(data), Data: data} }

// A content is stored once however often it is put, comes back byte-exact,
// and is gone once released.
func TestPutGetRelease(t *testing.T) {
	b, st := open(t)
	text := bytes.Repeat([]byte("hello checkpoint\n"), 1000)
	small := []byte("x")
	added, err := b.Put([]blobstore.Blob{blob(text), blob(text), blob(small)})
	if err != nil {
		t.Fatal(err)
	}
	if added <= 0 || added >= int64(len(text)) {
		t.Errorf("added %d bytes for %d bytes of repetitive text: want compressed", added, len(text))
	}
	if again, _ := b.Put([]blobstore.Blob{blob(text)}); again != 0 {
		t.Errorf("putting a stored content again added %d bytes", again)
	}
	if n, _ := b.Stats(); n != 2 {
		t.Errorf("%d contents stored, want 2", n)
	}
	for _, data := range [][]byte{text, small} {
		got, err := b.Get(sha256.Sum256(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get: %v, %d bytes, want %d", err, len(got), len(data))
		}
	}
	// Counts survive a reopen.
	b2, _ := blobstore.OpenBolt(st)
	if n1, s1 := b.Stats(); true {
		if n2, s2 := b2.Stats(); n1 != n2 || s1 != s2 {
			t.Errorf("reopened stats %d/%d, want %d/%d", n2, s2, n1, s1)
		}
	}
	if err := b.Release([]blobstore.Hash{sha256.Sum256(text)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(sha256.Sum256(text)); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("get after release: %v, want ErrNotFound", err)
	}
	if n, _ := b.Stats(); n != 1 {
		t.Errorf("%d contents after release, want 1", n)
	}
}

// Contents are kept in the store's content log, not its bbolt file: they
// count as the log's live bytes while stored and stop counting once
// released, sizes and contents in one commit.
func TestContentsLiveInTheLog(t *testing.T) {
	if !store.IsContentBucket(blobstore.Bucket) || store.IsContentBucket(blobstore.SizeBucket) {
		t.Fatalf("%s must be a content bucket of the store and %s not", blobstore.Bucket, blobstore.SizeBucket)
	}
	b, st := open(t)
	data := bytes.Repeat([]byte("some file content, "), 500)
	added, err := b.Put([]blobstore.Blob{blob(data)})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := st.Stats(); s.LiveLogBytes < added {
		t.Fatalf("log holds %d live bytes after storing %d", s.LiveLogBytes, added)
	}
	if err := b.Release([]blobstore.Hash{sha256.Sum256(data)}); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.Stats(); s.LiveLogBytes != 0 {
		t.Fatalf("log holds %d live bytes after the release", s.LiveLogBytes)
	}
	h := sha256.Sum256(data)
	if _, found, _ := st.GetKV(blobstore.Bucket, h[:]); found {
		t.Fatal("content still stored after its release")
	}
}

// A content left without its size entry (a crash in the middle of a
// release by an earlier release of the daemon) is released at open, so it
// does not hold its bytes forever.
func TestContentWithoutSizeReleasedAtOpen(t *testing.T) {
	b, st := open(t)
	kept := []byte("a content still named by its size")
	if _, err := b.Put([]blobstore.Blob{blob(kept)}); err != nil {
		t.Fatal(err)
	}
	leaked := bytes.Repeat([]byte("leaked "), 100)
	h := sha256.Sum256(leaked)
	if err := st.PutKV(blobstore.Bucket, []store.KV{{Key: h[:], Value: blobstore.Encode(leaked)}}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Stats()
	b2, err := blobstore.OpenBolt(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := st.GetKV(blobstore.Bucket, h[:]); found {
		t.Fatal("content without a size still stored after open")
	}
	if after, _ := st.Stats(); after.LiveLogBytes >= before.LiveLogBytes {
		t.Fatalf("live log bytes %d after the release at open, %d before", after.LiveLogBytes, before.LiveLogBytes)
	}
	if got, err := b2.Get(sha256.Sum256(kept)); err != nil || !bytes.Equal(got, kept) {
		t.Fatalf("the named content after open: %q, %v", got, err)
	}
}
