package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
)

// ErrNoHidden is StageHidden's error where the file system cannot make a
// file without a name: Stage it instead.
var ErrNoHidden = confine.ErrNoUnnamed

// StageHidden is Stage with a temp file that has no name until Commit
// (O_TMPFILE on Linux): the content is written and fsynced, and a crash
// before Commit leaves nothing in dir. That lets a caller write the file
// while it makes its own record of the write durable, and name the file
// only after: whenever the process dies, either nothing of the write is in
// dir, or the record that explains it is durable. It fails with an error
// wrapping ErrNoHidden where such files cannot be made.
func StageHidden(dir *confine.Dir, name string, opts Options, fill func(w io.Writer) error) (*Staged, error) {
	return stage(dir, name, opts, fill, stageHidden)
}

// StageHiddenAsync is StageHidden that does not wait for the file's
// fsync: the kernel makes it while the caller goes on, and Commit waits
// for it before the file gets its name (Discard, before letting go of
// it). A caller with a sync of its own to make (a journal's) makes both at
// once from one thread.
//
// It fails with an error wrapping ErrNoAsync, having written nothing,
// where the kernel cannot sync a file asynchronously: StageHidden it then
// (in a goroutine, for the same overlap). Where only the file's file
// system cannot, the sync is made before it returns, as StageHidden's.
func StageHiddenAsync(dir *confine.Dir, name string, opts Options, fill func(w io.Writer) error) (*Staged, error) {
	if !asyncSyncs() {
		return nil, fmt.Errorf("write %s: %w", dir.Join(name), ErrNoAsync)
	}
	return stage(dir, name, opts, fill, stageHiddenAsync)
}

// ErrNoAsync is StageHiddenAsync's error where the kernel cannot sync a
// file while the caller goes on.
var ErrNoAsync = errNoAsync

var errNoAsync = errors.New("no asynchronous fsync here")

// nameHidden gives the hidden temp file its temp name, trying new names as
// createTemp does, and closes it.
func (s *Staged) nameHidden() error {
	f := s.hidden
	s.hidden = nil
	defer f.Close()
	const attempts = 10
	var err error
	for range attempts {
		tmp := tempName(s.tag, randomToken(), s.name)
		if err = s.dir.LinkUnnamed(f, tmp); err == nil {
			s.tmp = tmp
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return fmt.Errorf("no free temp name after %d attempts: %w", attempts, err)
}

// linkHidden commits a new file staged without a name by giving it its
// name: the link fails if the name exists, as the rename that replaces
// nothing would, and takes the place of a temp name and that rename. The
// directory is synced by the caller (Staged.syncDir).
func (s *Staged) linkHidden() error {
	f := s.hidden
	s.hidden = nil
	defer f.Close()
	if err := s.dir.LinkUnnamed(f, s.name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", s.path, ErrExists)
		}
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	// Crash tests die here: the new file in place, its directory not
	// synced (where a temp file is renamed, before that rename).
	failpoint.Hit("atomicfile.before-rename")
	return nil
}
