package store_test

import (
	"bytes"
	"testing"

	"github.com/orion-agent/orion/internal/store"
)

// Dropping the mapped pages leaves every value readable.
func TestDropMappedPagesKeepsData(t *testing.T) {
	s := newStore(t)
	big := bytes.Repeat([]byte("v"), 64<<10)
	if err := s.PutKV("drop", []store.KV{{Key: []byte("k"), Value: big}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DropMappedPages(); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := s.ScanKV("drop", nil, func(k, v []byte) (bool, error) {
		got = bytes.Clone(v)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("after dropping the mapped pages: %d bytes, want %d", len(got), len(big))
	}
}
