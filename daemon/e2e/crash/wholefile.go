package crash

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/orion-agent/orion/protocol"
)

// wholeClient overwrites one file of its own with session.write again and
// again until ctx ends, and undoes some of the writes, surviving kills. An
// acknowledged write must be on disk whole; a write or undo a kill cut off
// must have left the old content or the new one; an acknowledged undo must
// put back exactly what its write replaced, from the backup the write
// journaled with its content. Some undos come right after their write,
// others after a kill that cut off the next write: their backup's index
// entry was then often not committed yet, and the restart indexed it from
// the content log.
func (r *runner) wholeClient(ctx context.Context, id int, rng *rand.Rand) {
	k := &conn{r: r}
	defer func() {
		if k.c != nil {
			k.c.Close()
		}
	}()
	fail := func(format string, args ...any) {
		r.fail("whole-file writer %d: "+format, append([]any{id}, args...)...)
	}
	target := filepath.Join(r.root, fmt.Sprintf("whole%d.txt", id))
	// Some files take several backup pieces, most one.
	size := func() int { return 1 + rng.IntN([]int{2_000, 70_000, 600_000}[rng.IntN(3)]) }
	// prev is what the file holds before the next write: a cut-off call
	// is settled (see settle) before the file is read.
	prev := randomContent(rng, size())
	if err := os.WriteFile(target, []byte(prev), 0o644); err != nil {
		fail("%v", err)
		return
	}
	// last is the last acknowledged write while the file still holds what
	// it wrote, and base what it replaced.
	var last protocol.FinalizeResult
	var base string
	read := func() (string, bool) {
		got, err := os.ReadFile(target)
		if err != nil {
			fail("%v", err)
		}
		return string(got), err == nil
	}
	// undo undoes last and checks the file; it reports false after a
	// failure.
	undo := func() bool {
		written := prev
		done, err := r.wholeUndo(ctx, k, last.SessionID)
		if err != nil {
			fail("undo of session %s: %v", last.SessionID, err)
			return false
		}
		got, ok := read()
		switch {
		case !ok:
			return false
		case done && got != base:
			r.wholeWrong.Add(1)
			fail("undo of session %s acknowledged: %s holds %d bytes, want the %d its write replaced", last.SessionID, target, len(got), len(base))
			return false
		case done:
			r.wholeUndos.Add(1)
		case got != base && got != written:
			r.wholeWrong.Add(1)
			fail("undo of session %s cut off by a kill: %s holds %d bytes, neither the written %d nor the %d before", last.SessionID, target, len(got), len(written), len(base))
			return false
		}
		prev, last = got, protocol.FinalizeResult{}
		return true
	}
	stop := ctx
	ctx = context.WithoutCancel(ctx) // a write begun is finished
	for n := 0; stop.Err() == nil; n++ {
		next := randomContent(rng, size())
		res, acked, err := r.wholeWrite(ctx, k, target, next)
		if err != nil {
			fail("write %d: %v", n, err)
			return
		}
		got, ok := read()
		if !ok {
			return
		}
		if !acked {
			if got != prev && got != next {
				r.mismatched.Add(1)
				fail("write %d cut off by a kill: %s holds %d bytes, neither the %d before nor the %d sent", n, target, len(got), len(prev), len(next))
				return
			}
			landed := got == next
			prev = got
			if landed {
				last = protocol.FinalizeResult{}
			} else if last.SessionID != "" && rng.IntN(2) == 0 && !undo() {
				return
			}
			continue
		}
		if got != next {
			r.mismatched.Add(1)
			fail("write %d acknowledged: %s holds %d bytes, want the %d sent", n, target, len(got), len(next))
			return
		}
		r.wholeWrites.Add(1)
		last, base, prev = res, prev, next
		if rng.IntN(4) == 0 && !undo() {
			return
		}
	}
}

// wholeWrite sends one session.write of content over target; acked is
// whether its reply came. A kill that cut it off is no error: it returns
// once the daemon answers again, its recovery done.
func (r *runner) wholeWrite(ctx context.Context, k *conn, target, content string) (protocol.FinalizeResult, bool, error) {
	c, err := k.get(ctx)
	if err != nil {
		return protocol.FinalizeResult{}, false, err
	}
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{
		Intent: "crash test, whole file", TargetFile: target, Operation: protocol.OpOverwrite}, Content: content})
	if err == nil {
		return res, true, nil
	}
	if err := k.broken(err); err != nil {
		return res, false, fmt.Errorf("session.write: %w", err)
	}
	return res, false, r.settle(ctx, k)
}

// wholeUndo undoes session id; done is whether its reply came. A kill
// that cut it off is no error: it returns once the daemon answers again.
func (r *runner) wholeUndo(ctx context.Context, k *conn, id string) (bool, error) {
	c, err := k.get(ctx)
	if err != nil {
		return false, err
	}
	if _, err = c.Undo(ctx, id); err == nil {
		return true, nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return false, fmt.Errorf("session.undo: %w", err)
	}
	k.broken(err)
	return false, r.settle(ctx, k)
}

// settle waits until the daemon answers: its recovery, which may finish a
// write the kill cut off, runs before it opens its socket.
func (r *runner) settle(ctx context.Context, k *conn) error {
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if _, err = c.Status(ctx); err == nil {
			return nil
		}
		if err := k.broken(err); err != nil {
			return err
		}
	}
}
