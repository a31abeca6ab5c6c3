package contentlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hookedFile is a segment file whose Close and Sync run hooks first.
type hookedFile struct {
	segFile
	path string
	hook func(op, path string)
}

func (f hookedFile) Close() error {
	f.hook("close", f.path)
	return f.segFile.Close()
}

func (f hookedFile) Sync() error {
	f.hook("sync", f.path)
	return f.segFile.Sync()
}

// A preparation that failed lets go of spare.tmp only once it has removed
// it: a segment recycled as the spare right after is renamed to that name,
// and the failed preparation's remove must not take it away, which left
// the recycled segment gone and no spare.
func TestFailedPreparationKeepsRecycledSpare(t *testing.T) {
	dir := t.TempDir()
	if !prepares(dir) {
		t.Skip("the log prepares no spare segments on this file system (" + dir + ")")
	}
	const size = 4096
	tmp := filepath.Join(dir, prepareName)
	var failing, armed atomic.Bool
	failing.Store(true)
	closing := make(chan struct{}, 1)
	release := make(chan struct{})
	hook := func(op, path string) {
		if !armed.Load() {
			return
		}
		switch {
		case op == "close" && path == tmp:
			// The failed preparation, about to remove its file.
			closing <- struct{}{}
			<-release
		case op == "sync" && filepath.Base(path) == "0000000000000001.seg":
			// The recycled segment's preparation: the failed one
			// has had every chance to remove spare.tmp.
			<-release
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if _, err := os.Stat(tmp); errors.Is(err, os.ErrNotExist) {
					break
				}
			}
		}
	}
	opts := Options{SegmentSize: size, Fault: func(op string) error {
		if op == "prepare" && failing.Load() {
			return syscall.ENOSPC
		}
		return nil
	}, file: func(path string, flag int) (segFile, error) {
		f, err := openOSFile(path, flag)
		if err != nil {
			return nil, err
		}
		return hookedFile{f, path, hook}, nil
	}}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	add := func(rec string) Ref {
		t.Helper()
		refs, err := l.Append([][]byte{[]byte(rec)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return refs[0]
	}
	// Segment 1 written whole, then segment 2 begun; no spare prepared.
	for range 4 {
		add(strings.Repeat("a", 1000))
		WaitPrepared(l)
	}
	if ref := add(strings.Repeat("c", 100)); ref.Seg != 2 {
		t.Fatalf("record at %+v, want it in segment 2", ref)
	}
	WaitPrepared(l)
	armed.Store(true)
	add(strings.Repeat("b", 1000)) // a preparation starts, and fails
	<-closing
	failing.Store(false)
	if err := l.Reclaim(1); err != nil {
		t.Fatal(err)
	}
	close(release)
	WaitPrepared(l)
	if st := l.Stats(); st.Recycled == 1 && st.SpareBytes != size {
		t.Fatalf("stats %+v: segment 1 recycled, but no spare of %d bytes", st, size)
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); l.Stats().Recycled == 1 && err != nil {
		t.Fatalf("segment 1 recycled, but no spare on disk: %v", err)
	}
}
