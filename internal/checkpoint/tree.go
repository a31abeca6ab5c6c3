package checkpoint

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/ignore"
)

// vcsDirs are never recorded and never restored: undoing a turn does not
// move a branch.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".jj": true, ".svn": true}

// Change is one path that differs between two checkpoints.
type Change struct {
	Path string `json:"p"`
	Old  *Entry `json:"o,omitempty"`
	New  *Entry `json:"n,omitempty"`
}

// errTooBig stops a scan that went over the workspace limits.
var errTooBig = errors.New("workspace over the checkpoint limits")

// tree is a workspace's recorded state in memory: every path not ignored,
// and each directory's children, so one directory can be rescanned alone.
type tree struct {
	root     string
	entries  map[string]*Entry
	children map[string]map[string]bool
	ignore   *ignore.Matcher
	files    int64 // regular files and links
	bytes    int64
}

func newTree(root, globalExcludes string) *tree {
	return &tree{root: root, entries: map[string]*Entry{}, children: map[string]map[string]bool{"": {}},
		ignore: ignore.New(root, globalExcludes)}
}

// set records e at rel (nil removes it), keeping the children and totals.
func (t *tree) set(rel string, e *Entry) {
	if old := t.entries[rel]; old != nil && old.Type != TypeDir {
		t.files--
		t.bytes -= old.Size
	}
	parent, name := split(rel)
	if e == nil {
		delete(t.entries, rel)
		if c := t.children[parent]; c != nil {
			delete(c, name)
		}
		return
	}
	t.entries[rel] = e
	if e.Type != TypeDir {
		t.files++
		t.bytes += e.Size
	}
	c := t.children[parent]
	if c == nil {
		c = map[string]bool{}
		t.children[parent] = c
	}
	c[name] = true
	if e.Type == TypeDir && t.children[rel] == nil {
		t.children[rel] = map[string]bool{}
	}
}

func split(rel string) (parent, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// scan compares the directories dirs (relative; "" is the root) with the
// tree: recursively where recursive, otherwise one level, descending
// into directories that are new. It updates the tree, appends each change
// to changes, and queues new contents in blobs. A scan that finds the
// workspace over the limits stops with errTooBig.
type scan struct {
	t        *tree
	maxFile  int64
	maxFiles int64
	maxBytes int64
	started  time.Time
	changes  []Change
	// refreshed are entries whose content is unchanged but whose stat
	// (or racy mark) moved: stored with the checkpoint's index.
	refreshed  []string
	pending    []blobstore.Blob
	pendingLen int64
	flush      func([]blobstore.Blob) error
	has        func(blobstore.Hash) bool
	// onDir is called for each directory scanned, before it is read (the
	// watcher adds its watch there, so nothing written after is missed).
	onDir func(abs string)
	// ignoreChanged is set when an ignore file changed: the caller
	// rescans everything.
	ignoreChanged bool
	// countOnly stats without reading: a first pass that finds a
	// workspace too big before any content is read or stored.
	countOnly bool
}

// flushBytes bounds the new contents held before they are stored: the
// daemon's memory while it records a big workspace.
const flushBytes = 16 << 20

func (s *scan) dir(rel string, recursive bool) error {
	abs := filepath.Join(s.t.root, filepath.FromSlash(rel))
	if s.onDir != nil {
		s.onDir(abs)
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Gone or replaced since its parent was read: the parent's scan
		// (now or at the next checkpoint) records what stands there.
		s.removeMissing(rel, nil)
		return nil
	}
	f := os.NewFile(uintptr(fd), abs)
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return fmt.Errorf("reading %s: %w", abs, err)
	}
	defer f.Close()
	slices.Sort(names)
	if slices.ContainsFunc(names, ignore.IsIgnoreFile) || s.t.ignore.Has(rel) {
		s.t.ignore.Load(abs, rel)
	}
	seen := make(map[string]bool, len(names))
	var subdirs []string
	stats, errs := statAll(fd, names)
	for i, name := range names {
		if vcsDirs[name] {
			continue
		}
		child := join(rel, name)
		st := &stats[i]
		if errs[i] != nil {
			continue // gone since the listing
		}
		mode := st.Mode & unix.S_IFMT
		isDir := mode == unix.S_IFDIR
		if s.t.ignore.Ignored(child, isDir) {
			continue
		}
		cur := &Entry{Mode: uint32(st.Mode & 0o7777), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}
		switch mode {
		case unix.S_IFREG:
			cur.Type = TypeFile
		case unix.S_IFLNK:
			cur.Type = TypeSymlink
		case unix.S_IFDIR:
			cur.Type = TypeDir
			cur.Size = 0
		default:
			continue // FIFOs, sockets, devices: never recorded
		}
		seen[name] = true
		old := s.t.entries[child]
		cur.Racy = s.racy(cur)
		switch {
		case cur.Type == TypeDir:
			cur.Mtime, cur.Ctime = 0, 0 // a directory's own times change with every entry
			if old == nil || !sameState(old, cur) {
				s.record(child, old, cur)
			}
			if recursive || old == nil || old.Type != TypeDir {
				subdirs = append(subdirs, child)
			}
			continue
		case statEqual(old, cur):
			continue
		case s.countOnly:
			// counted by set below; nothing read
		case cur.Type == TypeSymlink:
			if err := s.readLink(fd, name, cur); err != nil {
				continue
			}
		case cur.Size > s.maxFile:
			cur.Big = true
		default:
			if err := s.readFile(fd, name, cur); err != nil {
				continue
			}
		}
		if ignore.IsIgnoreFile(name) && (old == nil || !sameState(old, cur)) {
			s.ignoreChanged = true
		}
		if old != nil && old.Type == TypeDir {
			s.removeSubtree(child)
		}
		if !sameState(old, cur) {
			s.record(child, old, cur)
		} else {
			s.t.set(child, cur) // refresh the stat cache
			s.refreshed = append(s.refreshed, child)
		}
		if s.t.files > s.maxFiles || s.t.bytes > s.maxBytes {
			return errTooBig
		}
	}
	s.removeMissing(rel, seen)
	for _, d := range subdirs {
		if err := s.dir(d, recursive); err != nil {
			return err
		}
	}
	return nil
}

// statAll lstats names in the directory fd, a big directory split among
// a few goroutines: the stat calls are most of a full scan, and the
// kernel serves them in parallel.
func statAll(fd int, names []string) ([]unix.Stat_t, []error) {
	stats := make([]unix.Stat_t, len(names))
	errs := make([]error, len(names))
	part := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			errs[i] = unix.Fstatat(fd, names[i], &stats[i], unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(names)/statPerWorker)
	if workers < 2 {
		part(0, len(names))
		return stats, errs
	}
	var wg sync.WaitGroup
	per := (len(names) + workers - 1) / workers
	for lo := 0; lo < len(names); lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			part(lo, hi)
		}(lo, min(lo+per, len(names)))
	}
	wg.Wait()
	return stats, errs
}

// statPerWorker is the fewest entries worth a goroutine of statAll.
const statPerWorker = 32

// racy reports whether e's timestamps are too close to the scan for its
// stat to prove a later one unchanged (a write in the same tick).
func (s *scan) racy(e *Entry) bool {
	return e.Mtime >= s.started.Add(-2*time.Second).UnixNano() || e.Ctime >= s.started.Add(-2*time.Second).UnixNano()
}

func (s *scan) record(rel string, old, cur *Entry) {
	s.changes = append(s.changes, Change{Path: rel, Old: old, New: cur})
	s.t.set(rel, cur)
}

// removeMissing drops dir's children that are not in seen (nil: all).
func (s *scan) removeMissing(dir string, seen map[string]bool) {
	for name := range s.t.children[dir] {
		if seen[name] {
			continue
		}
		child := join(dir, name)
		old := s.t.entries[child]
		if old != nil && old.Type == TypeDir {
			s.removeSubtree(child)
		}
		if old != nil {
			s.record(child, old, nil)
		}
	}
}

// removeSubtree drops everything below dir (not dir itself).
func (s *scan) removeSubtree(dir string) {
	s.removeMissing(dir, nil)
	delete(s.t.children, dir)
	s.t.ignore.Forget(dir)
}

func (s *scan) readLink(dirfd int, name string, e *Entry) error {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return err
	}
	e.Link = string(buf[:n])
	e.Size = 0
	e.Hash = Hash(sha256.Sum256([]byte(e.Link)))
	return nil
}

func (s *scan) readFile(dirfd int, name string, e *Entry) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	if st.Size > s.maxFile {
		e.Big = true
		e.Size = st.Size
		return nil
	}
	data := make([]byte, 0, st.Size+1)
	data, err = readAll(f, data, s.maxFile+1)
	if err != nil {
		return err
	}
	if int64(len(data)) > s.maxFile {
		e.Big = true
		e.Size = int64(len(data))
		return nil
	}
	// The stat of the open file, read after its content: a write during
	// the read shows in it and makes the entry racy.
	var after unix.Stat_t
	if err := unix.Fstat(fd, &after); err == nil {
		e.Size, e.Mtime, e.Ctime, e.Mode = int64(len(data)), after.Mtim.Nano(), after.Ctim.Nano(), uint32(after.Mode&0o7777)
		if after.Mtim.Nano() != st.Mtim.Nano() || after.Size != int64(len(data)) {
			e.Racy = true
		}
	}
	e.Hash = Hash(sha256.Sum256(data))
	h := blobstore.Hash(e.Hash)
	if !s.has(h) {
		s.pending = append(s.pending, blobstore.Blob{Hash: h, Data: data})
		s.pendingLen += int64(len(data))
		if s.pendingLen >= flushBytes {
			return s.flushPending()
		}
	}
	return nil
}

func (s *scan) flushPending() error {
	if len(s.pending) == 0 {
		return nil
	}
	err := s.flush(s.pending)
	s.pending, s.pendingLen = nil, 0
	return err
}

func readAll(r io.Reader, b []byte, limit int64) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) >= limit {
			return b, nil
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// relOf returns abs relative to the tree's root, slash-separated, and
// whether it is inside.
func (t *tree) relOf(abs string) (string, bool) {
	rel, err := filepath.Rel(t.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		return "", true
	}
	return filepath.ToSlash(rel), true
}
