package store_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/store"
)

func TestKV(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "kv.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutKV("sessions", nil); err == nil {
		t.Fatal("PutKV into the journal's own bucket succeeded")
	}
	var kvs []store.KV
	for i := range 10 {
		kvs = append(kvs, store.KV{Key: []byte(fmt.Sprintf("k%02d", i)), Value: []byte(fmt.Sprint(i))})
	}
	if err := s.PutKV("traces", kvs); err != nil {
		t.Fatal(err)
	}
	scan := func(reverse bool, from string, limit int) string {
		var got string
		fn := func(k, v []byte) (bool, error) {
			got += string(v)
			return len(got) < limit, nil
		}
		var f []byte
		if from != "" {
			f = []byte(from)
		}
		var err error
		if reverse {
			err = s.ScanKVReverse("traces", f, fn)
		} else {
			err = s.ScanKV("traces", f, fn)
		}
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	tests := []struct {
		name    string
		reverse bool
		from    string
		limit   int
		want    string
	}{
		{"All", false, "", 100, "0123456789"},
		{"From", false, "k05", 100, "56789"},
		{"FromBetweenKeys", false, "k045", 3, "567"},
		{"ReverseAll", true, "", 100, "9876543210"},
		{"ReverseFrom", true, "k05", 2, "54"},
		{"ReverseFromBetweenKeys", true, "k045", 2, "43"},
		{"ReverseFromPastEnd", true, "z", 1, "9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scan(tt.reverse, tt.from, tt.limit); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if err := s.DeleteKV("traces", [][]byte{[]byte("k00"), []byte("k09")}); err != nil {
		t.Fatal(err)
	}
	if got := scan(false, "", 100); got != "12345678" {
		t.Fatalf("after delete: %q", got)
	}
	if err := s.ScanKV("absent", nil, func(k, v []byte) (bool, error) { t.Fatal("called"); return false, nil }); err != nil {
		t.Fatal(err)
	}
}

func TestPutKVs(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "kv.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	err = s.PutKVs(
		store.Put{Bucket: "events", KVs: []store.KV{{Key: []byte("e1"), Value: []byte("one")}}},
		store.Put{Bucket: "index", KVs: []store.KV{{Key: []byte("s1/e1"), Value: []byte{}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := after.Commits-before.Commits, uint64(1); got != want {
		t.Fatalf("commits: got %d, want %d", got, want)
	}
	for _, bucket := range []string{"events", "index"} {
		n := 0
		if err := s.ScanKV(bucket, nil, func(k, v []byte) (bool, error) { n++; return true, nil }); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("bucket %s holds %d keys, want 1", bucket, n)
		}
	}

	t.Run("ErrReservedBucket", func(t *testing.T) {
		err := s.PutKVs(
			store.Put{Bucket: "events", KVs: []store.KV{{Key: []byte("e2"), Value: []byte("two")}}},
			store.Put{Bucket: "chunks", KVs: []store.KV{{Key: []byte("x"), Value: []byte("y")}}},
		)
		if err == nil {
			t.Fatal("PutKVs into the journal's own bucket succeeded")
		}
		if err := s.ScanKV("events", []byte("e2"), func(k, v []byte) (bool, error) {
			t.Fatalf("stored %q although the call failed", k)
			return false, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
