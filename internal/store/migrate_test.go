package store_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/store"

	bolt "go.etcd.io/bbolt"
)

// v5Manifest is testdata/v5.json: what the store made by the release with
// schema 5 holds, as that release read it back.
type v5Manifest struct {
	Session string   `json:"session"`
	Chunks  []string `json:"chunks"`
	// Metas maps each session to the sha256 of its metadata.
	Metas map[string]string `json:"metas"`
	// Values maps each content bucket to its keys (hex) and the sha256 of
	// their values.
	Values map[string]map[string]string `json:"values"`
}

// A store written by the release with schema 5 opens as it was: its open
// session's chunks, every session's metadata, its backups and checkpoint
// contents read back, the file says version 6 with its index entries as
// they were (the migration moved nothing), and what is written afterwards,
// records waiting in the log included, survives a reopen and a crash. A
// file of a later version is refused, as a version 5 build refuses this
// one.
func TestMigrateFromRelease5(t *testing.T) {
	var want v5Manifest
	b, err := os.ReadFile("testdata/v5.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orion.db")
	copyFile(t, "testdata/v5.db", path)
	if err := os.Mkdir(store.LogDir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "testdata/v5.db.segments/0000000000000001.seg", filepath.Join(store.LogDir(path), "0000000000000001.seg"))
	before := indexEntries(t, "testdata/v5.db")

	check := func(round int, s *store.Store) {
		t.Helper()
		var buf bytes.Buffer
		if _, err := s.CopyRange(want.Session, &buf, 0, -1); err != nil || buf.String() != joined(want.Chunks) {
			t.Fatalf("round %d: open session's content = %d bytes, %v; want %d bytes", round, buf.Len(), err, len(joined(want.Chunks)))
		}
		for i, c := range want.Chunks {
			if got, err := s.Chunk(want.Session, uint64(i+1)); err != nil || string(got) != c {
				t.Fatalf("round %d: chunk %d = %d bytes, %v; want %d bytes", round, i+1, len(got), err, len(c))
			}
		}
		metas := 0
		err := s.ForEachMeta(func(id string, meta []byte) error {
			if w, ok := want.Metas[id]; ok {
				metas++
				if got := hex.EncodeToString(sum(meta)); got != w {
					return fmt.Errorf("session %s: metadata sha256 %s, want %s", id, got, w)
				}
			}
			return nil
		})
		if err != nil || metas != len(want.Metas) {
			t.Fatalf("round %d: %d of %d sessions' metadata read back: %v", round, metas, len(want.Metas), err)
		}
		for bucket, keys := range want.Values {
			seen := 0
			err := s.ScanKV(bucket, nil, func(k, v []byte) (bool, error) {
				if w, ok := keys[hex.EncodeToString(k)]; ok {
					seen++
					if got := hex.EncodeToString(sum(v)); got != w {
						t.Errorf("round %d: %s %x: value sha256 %s, want %s", round, bucket, k, got, w)
					}
				}
				return true, nil
			})
			if err != nil || seen != len(keys) {
				t.Fatalf("round %d: %s: %d of %d keys read back: %v", round, bucket, seen, len(keys), err)
			}
			for k, w := range keys {
				key, _ := hex.DecodeString(k)
				if v, ok, err := s.GetKV(bucket, key); err != nil || !ok || hex.EncodeToString(sum(v)) != w {
					t.Fatalf("round %d: GetKV(%s, %x) = %d bytes, %v, %v", round, bucket, key, len(v), ok, err)
				}
			}
		}
	}
	for round := range 2 { // migrated, then reopened as it is
		s, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(round, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := fileSchema(t, path); got != store.SchemaVersion {
			t.Fatalf("round %d: schema version %d after Open, want %d", round, got, store.SchemaVersion)
		}
	}
	// Only the number changed: every chunk and content entry points where
	// the release left it.
	after := indexEntries(t, path)
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("index entry %q changed by the migration: %x, was %x", k, after[k], v)
		}
	}

	// Writes go on. A chunk with the backup it carries and a finalize's
	// metadata wait in the log for their index entries; a crash then
	// loses neither, and a graceful stop keeps them too.
	s := openDeferred(t, path)
	backup := store.Put{Bucket: "backups", KVs: []store.KV{{Key: []byte("after-v5/0"), Value: []byte("replaced content")}}}
	if err := s.Append(want.Session, uint64(len(want.Chunks)+1), []byte("more"), []byte("m"), backup); err != nil {
		t.Fatal(err)
	}
	if err := s.LogMeta(want.Session, []byte("finalizing")); err != nil {
		t.Fatal(err)
	}
	checkWritten := func(what string, s *store.Store) {
		t.Helper()
		var buf bytes.Buffer
		if _, err := s.CopyRange(want.Session, &buf, 0, -1); err != nil || buf.String() != joined(want.Chunks)+"more" {
			t.Fatalf("%s: session holds %d bytes, %v; want the release's chunks and the new one", what, buf.Len(), err)
		}
		if v, ok, err := s.GetKV("backups", []byte("after-v5/0")); err != nil || !ok || string(v) != "replaced content" {
			t.Fatalf("%s: backup = %q, %v, %v", what, v, ok, err)
		}
		if m, err := s.Meta(want.Session); err != nil || string(m) != "finalizing" {
			t.Fatalf("%s: metadata = %q, %v", what, m, err)
		}
	}
	crashed := openStore(t, crashImage(t, path))
	checkWritten("after a crash", crashed)
	crashed.Close()
	s.Close()
	checkWritten("after a reopen", openStore(t, path))

	// A version 7 file is refused with the versions named, as a version 5
	// build refuses a version 6 file, whose waiting records it would skip.
	later := filepath.Join(t.TempDir(), "orion.db")
	copyFile(t, "testdata/v5.db", later)
	db, err := bolt.Open(later, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 7))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(later, store.Options{}); err == nil {
		s.Close()
		t.Fatal("Open accepted a file with schema version 7")
	} else if !strings.Contains(err.Error(), "schema version 7, this build reads versions up to 6") {
		t.Fatalf("Open of a version 7 file: %v; want an error naming both versions", err)
	}
	if got := fileSchema(t, later); got != 7 {
		t.Fatalf("the refused file says version %d, want 7 left as it was", got)
	}
}

// fileSchema returns the schema version the store file at path records.
func fileSchema(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint64
	db.View(func(tx *bolt.Tx) error {
		v = binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema")))
		return nil
	})
	return v
}

// indexEntries returns the entries of the store file at path that point
// into the content log: its sessions' chunks and its content buckets'
// values, by bucket path and key.
func indexEntries(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"backups", "checkpoint_blobs"} {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return fmt.Errorf("no bucket %s", name)
			}
			b.ForEach(func(k, v []byte) error {
				out[name+"/"+string(k)] = append([]byte(nil), v...)
				return nil
			})
		}
		chunks := tx.Bucket([]byte("chunks"))
		return chunks.ForEachBucket(func(id []byte) error {
			return chunks.Bucket(id).ForEach(func(k, v []byte) error {
				out["chunks/"+string(id)+"/"+string(k)] = append([]byte(nil), v...)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the release file holds no index entries")
	}
	return out
}
