//go:build unix

// Package atomicfile replaces a file's content so that, after a crash or a
// power failure, the file holds either its old content or its new content,
// never a mix or nothing.
//
// The new content is streamed into a temp file in the target's directory,
// which is fsynced and renamed over the target; then the directory is
// fsynced, because until then the rename itself may be lost. Temp files are
// named with TempPrefix so the leftovers of a crash can be found and removed
// with CleanTemp.
//
// Every operation is relative to one open directory (a *confine.Dir): the
// temp file and the target are single names in it, so no path is resolved
// twice and nothing written here can land outside that directory.
package atomicfile

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
)

// TempPrefix starts every temp file name, so a crash leftover can be found.
const TempPrefix = ".orion-tmp-"

// Mode says whether Write may replace an existing target.
type Mode int

const (
	// Replace overwrites the target, or creates it if it does not exist.
	Replace Mode = iota
	// CreateNew creates the target and fails with ErrExists if it exists,
	// even if it appears while the content is being written.
	CreateNew
)

// ErrExists is returned (wrapped) by Write in CreateNew mode when the target
// exists.
var ErrExists = errors.New("target exists")

// ErrNotDurable is returned (wrapped, together with the cause) when the new
// content is already in place but the directory could not be fsynced, so the
// change may not survive a power failure. Write's Result is valid then; the
// caller decides whether to report success.
var ErrNotDurable = errors.New("written but not yet durable")

// maxTagLen bounds Options.Tag so that a temp name keeps room for the
// target's base name within the 255-byte limit on a file name.
const maxTagLen = 64

// nameMax is the longest file name Linux and macOS file systems accept.
const nameMax = 255

// Options controls Write.
type Options struct {
	// Mode is Replace or CreateNew.
	Mode Mode
	// Perm is the permission of a target that does not exist yet; 0 means
	// 0644. It is applied exactly, regardless of the umask, so the result
	// does not depend on how the daemon was started. An existing target
	// keeps its permission bits instead, since a rewrite must not make a
	// script non-executable or a private file readable. Only the 0777 bits
	// are used: setuid and setgid are never set, as the kernel clears them
	// on any write to such a file.
	Perm os.FileMode
	// Tag is an optional token put in the temp file's name, such as a
	// session id, so that CleanTemp can remove the leftovers of one writer
	// only. It must not contain '/' or NUL and is at most 64 bytes.
	Tag string
	// SHA256, if set, is the hex SHA-256 of exactly what fill will write,
	// which the caller computed as the content came in: Result.SHA256 is
	// it, and the bytes are not hashed again on the way to the file.
	SHA256 string
	// Unhashed, with SHA256 empty, leaves Result.SHA256 empty: for a
	// caller that hashes the same content itself, elsewhere.
	Unhashed bool
}

// Result describes the file Write produced.
type Result struct {
	// Bytes is the size of the new content.
	Bytes int64
	// SHA256 is the hex-encoded SHA-256 of the whole new content.
	SHA256 string
	// Mode is the permission the file was given.
	Mode os.FileMode
}

// Write replaces the content of name in dir with what fill writes. It
// creates a temp file in dir, named TempPrefix+Tag+"-"+random+"-"+base,
// and calls fill to write the new content into it; fill may stream any
// amount, and must not keep w after it returns. Everything written is hashed
// (unless opts.SHA256 gives the hash) and counted. Write then fsyncs the temp file, sets its mode (and, where
// permitted, the existing target's owner), renames it over path (without
// replacing in CreateNew mode), and fsyncs the directory.
//
// On any error before the rename the temp file is removed and the target is
// untouched; an error from fill is returned as is. The temp file is also
// removed if fill panics. An error wrapping ErrNotDurable means the rename
// happened but the directory fsync failed.
//
// A symlink at name is replaced, not followed; a directory or a special
// file there is refused. The temp file is created with O_EXCL|O_NOFOLLOW,
// so nothing planted at its name is ever written through.
func Write(dir *confine.Dir, name string, opts Options, fill func(w io.Writer) error) (Result, error) {
	s, err := Stage(dir, name, opts, fill)
	if err != nil {
		return Result{}, err
	}
	return s.Commit()
}

// Staged is new content written and fsynced into a temp file next to its
// target, not yet in place. Several staged files are what a transaction
// needs: every new content is durable before the first target changes.
type Staged struct {
	dir       *confine.Dir
	path      string // for messages
	name, tmp string
	mode      Mode
	res       Result
	done      bool
	// hidden is the temp file of StageHidden until Commit names it (tmp
	// is "" until then); tag is the Options.Tag its name gets.
	hidden *os.File
	tag    string
	// syncing is the hidden file's sync while the kernel makes it
	// (StageHiddenAsync), waited for before the file is named or let go.
	syncing *pendingSync
}

// Stage does everything Write does up to the rename, and returns the temp
// file for Commit or Discard. Until one of them is called the temp file
// stays; a crash leaves it for CleanTemp. dir must stay open until then.
func Stage(dir *confine.Dir, name string, opts Options, fill func(w io.Writer) error) (*Staged, error) {
	return stage(dir, name, opts, fill, stageNamed)
}

// staging is how stage makes its temp file.
type staging int

const (
	// stageNamed is a temp file with a name, synced before stage returns.
	stageNamed staging = iota
	// stageHidden is a temp file without a name (StageHidden).
	stageHidden
	// stageHiddenAsync is stageHidden whose sync stage only starts
	// (StageHiddenAsync).
	stageHiddenAsync
)

func stage(dir *confine.Dir, name string, opts Options, fill func(w io.Writer) error, how staging) (*Staged, error) {
	hidden := how != stageNamed
	path := dir.Join(name)
	if err := checkArgs(path, name, opts); err != nil {
		return nil, err
	}

	perm, owner, err := targetOf(dir, name, path, opts)
	if err != nil {
		return nil, err
	}

	var (
		f   *os.File
		tmp string
	)
	if hidden {
		f, err = dir.CreateUnnamed(0o600)
	} else {
		f, tmp, err = createTemp(dir, opts.Tag, name)
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	closed := false
	kept := false
	defer func() {
		if !closed {
			f.Close()
		}
		if !kept && tmp != "" {
			dir.Remove(tmp)
		}
	}()

	bw := writers.Get().(*bufio.Writer)
	bw.Reset(&writeBehind{f: f})
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
	hw := &hashWriter{w: bw}
	if opts.SHA256 == "" && !opts.Unhashed {
		hw.h = sha256.New()
	}
	if err := fill(hw); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := ownAndPerm(f, path, perm, owner); err != nil {
		return nil, err
	}
	var syncing *pendingSync
	if how == stageHiddenAsync {
		if syncing, err = startSync(f); err != nil {
			syncing = nil // this file system's: synced here instead
		}
	}
	if syncing == nil {
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	res := Result{Bytes: hw.n, SHA256: opts.SHA256, Mode: perm}
	if hw.h != nil {
		res.SHA256 = hex.EncodeToString(hw.h.Sum(nil))
	}
	if hidden {
		// Crash tests die here: the content durable (or, staged with
		// its sync asynchronous, being synced) in a file without a
		// name, which the kill takes with it.
		failpoint.Hit("atomicfile.hidden-synced")
		closed, kept = true, true
		return &Staged{dir: dir, path: path, name: name, mode: opts.Mode, tag: opts.Tag, hidden: f, syncing: syncing, res: res}, nil
	}
	closed = true
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	kept = true
	return &Staged{dir: dir, path: path, name: name, tmp: tmp, mode: opts.Mode, res: res}, nil
}

// targetOf checks what is at name in dir before content is staged for it,
// and returns the permission the new file gets and the existing target's
// owner to carry over (nil: none).
func targetOf(dir *confine.Dir, name, path string, opts Options) (fs.FileMode, *confine.Info, error) {
	perm := opts.Perm & fs.ModePerm
	if perm == 0 {
		perm = 0o644
	}
	var owner *confine.Info // the existing target's, to carry over
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, nil, fmt.Errorf("write %s: %w", path, err)
	case opts.Mode == CreateNew:
		// Fail before streaming anything; the no-replace rename in Commit
		// still catches a target created in the meantime.
		return 0, nil, fmt.Errorf("create %s: %w", path, ErrExists)
	case fi.Mode.IsDir():
		return 0, nil, fmt.Errorf("write %s: %w", path, syscall.EISDIR)
	case fi.Mode.IsRegular():
		perm = fi.Mode.Perm()
		owner = &fi
	case fi.Mode&fs.ModeSymlink != 0:
		// The rename replaces the link itself, never what it points to.
	default:
		// A FIFO, socket or device: renaming over it would be harmless,
		// but it is no file a model may mean to write. (Checked again: it
		// may have been replaced by a file meanwhile.)
		if err := dir.CheckWritable(name); err != nil {
			return 0, nil, err
		}
	}
	return perm, owner, nil
}

// ownAndPerm gives a staged temp file its owner and permission.
func ownAndPerm(f *os.File, path string, perm fs.FileMode, owner *confine.Info) error {
	if owner != nil {
		// Keeps a file owned by the user who owns it when the daemon runs
		// as root. Without privilege this fails (EPERM) unless nothing
		// changes; the file then belongs to the daemon's user, as with any
		// editor's save.
		if err := f.Chown(int(owner.Uid), int(owner.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	// After Chown, which may clear mode bits, and explicitly rather than
	// at open, where the umask would alter it.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Result describes the staged content.
func (s *Staged) Result() Result { return s.res }

// TempPath is the staged temp file's path, for messages and tests.
func (s *Staged) TempPath() string { return s.dir.Join(s.tmp) }

// Commit renames the temp file over the target (without replacing in
// CreateNew mode) and fsyncs the directory. On an error other than
// ErrNotDurable the temp file is removed and the target is untouched.
func (s *Staged) Commit() (Result, error) {
	dirSynced, err := s.commit(false)
	if err != nil {
		return Result{}, err
	}
	return dirSynced()
}

// CommitSyncing is Commit that leaves the directory's fsync to the kernel
// while the caller goes on, where it can (see StageHiddenAsync): when it
// returns without an error the file is in place, and dirSynced waits for
// the directory's sync and returns what Commit would have (an error
// wrapping ErrNotDurable when that sync failed). The caller calls
// dirSynced once, before it tells anyone the file is durable: what it
// only prepares (a record to journal, a reply) it may prepare meanwhile.
func (s *Staged) CommitSyncing() (dirSynced func() (Result, error), err error) {
	return s.commit(true)
}

func (s *Staged) commit(async bool) (func() (Result, error), error) {
	if s.done {
		return nil, fmt.Errorf("write %s: staged content already committed or discarded", s.path)
	}
	s.done = true
	if s.syncing != nil {
		err := s.syncing.wait()
		s.syncing = nil
		if err != nil {
			s.hidden.Close()
			s.hidden = nil
			return nil, fmt.Errorf("write %s: %w", s.path, err)
		}
	}
	if s.hidden != nil && s.mode == CreateNew {
		if err := s.linkHidden(); err != nil {
			return nil, err
		}
		return s.syncDir(async), nil
	}
	if s.hidden != nil {
		if err := s.nameHidden(); err != nil {
			return nil, fmt.Errorf("write %s: %w", s.path, err)
		}
	}
	// Crash tests die here: the temp file written and synced, not renamed.
	failpoint.Hit("atomicfile.before-rename")
	var err error
	if s.mode == CreateNew {
		err = s.dir.RenameNoReplace(s.tmp, s.name)
		if errors.Is(err, fs.ErrExist) {
			s.dir.Remove(s.tmp)
			return nil, fmt.Errorf("create %s: %w", s.path, ErrExists)
		}
	} else {
		err = s.dir.Rename(s.tmp, s.name)
	}
	if err != nil {
		s.dir.Remove(s.tmp)
		return nil, fmt.Errorf("write %s: %w", s.path, err)
	}
	return s.syncDir(async), nil
}

// syncDir syncs the directory the file was named in, now or, with async,
// while the caller goes on, and returns what waits for it.
func (s *Staged) syncDir(async bool) func() (Result, error) {
	done := func(err error) (Result, error) {
		if err != nil {
			return s.res, fmt.Errorf("write %s: sync directory: %w: %w", s.path, ErrNotDurable, err)
		}
		return s.res, nil
	}
	if async {
		if p, err := startSync(s.dir.SyncFile()); err == nil {
			return func() (Result, error) { return done(p.wait()) }
		}
	}
	err := s.dir.Sync()
	return func() (Result, error) { return done(err) }
}

// Discard removes the temp file; the target was never touched. It is a
// no-op after Commit.
func (s *Staged) Discard() {
	if s.done {
		return
	}
	s.done = true
	if s.syncing != nil {
		// Its context is reused only once the sync is reaped.
		s.syncing.wait()
		s.syncing = nil
	}
	if s.hidden != nil {
		// Closing the last descriptor of a file without a name frees it.
		s.hidden.Close()
		return
	}
	s.dir.Remove(s.tmp)
}

// CleanTemp removes leftover temp files in dir: with tag "" every name
// starting with TempPrefix, otherwise only the names of that tag (starting
// with TempPrefix+tag+"-"). It returns the names it removed, and keeps going
// past a file it cannot remove. A live writer's temp file is removed too, making that Write fail,
// so call it with tag "" only when no Write runs in dir (at startup), and
// otherwise with the tag of a writer known to be gone.
func CleanTemp(dir *confine.Dir, tag string) ([]string, error) {
	names, err := dir.Names()
	if err != nil {
		return nil, fmt.Errorf("clean temp files: %w", err)
	}
	// The tag is matched up to its closing "-", so that tag "a" does not
	// match another writer's tag "ab".
	prefix := TempPrefix
	if tag != "" {
		prefix += tag + "-"
	}
	var removed []string
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if fi, err := dir.Lstat(name); err != nil || fi.Mode.IsDir() {
			continue
		}
		err := dir.Remove(name)
		switch {
		case errors.Is(err, fs.ErrNotExist): // removed by someone else
		case err != nil:
			errs = append(errs, err)
		default:
			removed = append(removed, name)
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("clean temp files: %w", errors.Join(errs...))
	}
	return removed, nil
}

// writers holds the buffers files are written through: a new one for each
// file was most of the garbage a small whole-file write made.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// hashWriter counts and hashes what reaches the file, so the Result
// describes exactly the bytes written (only counts them when h is nil: the
// caller gave their hash).
type hashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	if hw.h == nil {
		n, err := hw.w.Write(p)
		hw.n += int64(n)
		return n, err
	}
	if len(p) < parallelHash {
		n, err := hw.w.Write(p)
		hw.h.Write(p[:n])
		hw.n += int64(n)
		return n, err
	}
	// A large piece is hashed while it is written: the hash is as much
	// CPU as the rest of the write, and another core is usually idle
	// (the client waits for the reply). A short write fails the whole
	// file, so hashing all of p then does no harm.
	done := make(chan struct{})
	go func() {
		hw.h.Write(p)
		close(done)
	}()
	n, err := hw.w.Write(p)
	<-done
	hw.n += int64(n)
	return n, err
}

// parallelHash is the size from which a write is hashed beside it rather
// than after it: under it, starting a goroutine costs more than it saves.
const parallelHash = 256 << 10

// randomToken returns the random part of a temp name. Tests replace it to
// predict the name.
var randomToken = func() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// createTemp creates a new temp file in dir. O_EXCL|O_NOFOLLOW makes the
// create fail rather than write through anything already at the name, such
// as a symlink planted by another user of the directory; then a new name is
// tried.
func createTemp(dir *confine.Dir, tag, base string) (*os.File, string, error) {
	const attempts = 10
	var err error
	for range attempts {
		name := tempName(tag, randomToken(), base)
		var f *os.File
		f, err = dir.CreateExclusive(name, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ELOOP) {
			break
		}
	}
	return nil, "", fmt.Errorf("create temp file: %w", err)
}

// tempName builds TempPrefix+tag+"-"+random+"-"+base, cutting base (on a
// UTF-8 boundary) so that the name fits in nameMax bytes: a target with a
// long name must still be writable, and base is only there for people.
func tempName(tag, random, base string) string {
	prefix := TempPrefix + tag + "-" + random + "-"
	if max := nameMax - len(prefix); len(base) > max {
		for max > 0 && !utf8.RuneStart(base[max]) {
			max--
		}
		base = base[:max]
	}
	return prefix + base
}

func checkTag(tag string) error {
	if len(tag) > maxTagLen || strings.ContainsAny(tag, "/\x00") {
		return fmt.Errorf("temp tag %q: want at most %d bytes and no '/' or NUL", tag, maxTagLen)
	}
	return nil
}

// Remove deletes name from dir and fsyncs dir, so the removal survives a
// power failure as a rename does.
func Remove(dir *confine.Dir, name string) error {
	if err := dir.Remove(name); err != nil {
		return err
	}
	return dir.Sync()
}

// checkArgs refuses a write the caller got wrong before anything is
// opened: an unknown mode, a tag that would not make a recognisable temp
// name, or a name that is not one file's.
func checkArgs(path, name string, opts Options) error {
	if opts.Mode != Replace && opts.Mode != CreateNew {
		return fmt.Errorf("write %s: unknown mode %d", path, opts.Mode)
	}
	if err := checkTag(opts.Tag); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("write %s: not a file name", path)
	}
	return nil
}
