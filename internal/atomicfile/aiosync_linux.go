//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || mips64le || mipsle || 386 || arm)

package atomicfile

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An fsync the kernel runs while the caller goes on (Linux AIO's
// IOCB_CMD_FSYNC, run by a kernel worker): a caller with a second sync to
// make (a journal's) makes both at once without waking a thread of its
// own for one of them, which on a machine of two cores cost more than
// the sync it overlapped.

// iocb is struct iocb of linux/aio_abi.h, little-endian layout (aio_key
// before aio_rw_flags; the build constraint keeps to such machines).
type iocb struct {
	_      uint64 // aio_data
	_      uint32 // aio_key
	_      uint32 // aio_rw_flags
	opcode uint16
	_      int16 // aio_reqprio
	fildes uint32
	_      [4]uint64 // aio_buf, aio_nbytes, aio_offset, aio_reserved2
	_      uint32    // aio_flags
	_      uint32    // aio_resfd
}

// ioEvent is struct io_event.
type ioEvent struct {
	_   [2]uint64 // data, obj
	res int64
	_   int64 // res2
}

const iocbCmdFsync = 2

// aioContexts are the kernel's AIO contexts of one event each, kept for
// the next sync once theirs is reaped (up to maxFreeContexts).
var aioContexts struct {
	mu   sync.Mutex
	free []uint64
	// off is set once the kernel refused a context (no AIO, or a
	// sandbox forbidding it): every sync is then made by the caller.
	off bool
}

// asyncSyncs says whether the kernel takes asynchronous fsyncs: a context
// for one can be had.
func asyncSyncs() bool {
	ctx, err := takeContext()
	if err != nil {
		return false
	}
	putContext(ctx)
	return true
}

func takeContext() (uint64, error) {
	aioContexts.mu.Lock()
	defer aioContexts.mu.Unlock()
	if aioContexts.off {
		return 0, errNoAsync
	}
	if n := len(aioContexts.free); n > 0 {
		ctx := aioContexts.free[n-1]
		aioContexts.free = aioContexts.free[:n-1]
		inFlight++
		return ctx, nil
	}
	var ctx uint64
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		if e != unix.EAGAIN {
			// EAGAIN is the system's limit on contexts, reached for
			// now; anything else will not change.
			aioContexts.off = true
		}
		return 0, fmt.Errorf("%w: io_setup: %w", errNoAsync, e)
	}
	inFlight++
	return ctx, nil
}

// maxFreeContexts bounds the contexts kept for later syncs: each holds a
// share of the system's AIO events (fs.aio-max-nr), which other programs
// (databases) need too, so a burst's extra contexts are given back.
const maxFreeContexts = 16

func putContext(ctx uint64) {
	aioContexts.mu.Lock()
	inFlight--
	keep := len(aioContexts.free) < maxFreeContexts
	if keep {
		aioContexts.free = append(aioContexts.free, ctx)
	}
	aioContexts.mu.Unlock()
	if !keep {
		// Not on the caller's path: io_destroy waits out an RCU grace
		// period, 30-50 ms here, which each sync of a burst past the
		// kept contexts paid before its reply.
		go unix.Syscall(unix.SYS_IO_DESTROY, uintptr(ctx), 0, 0)
	}
}

// dropContext gives a taken context back to the system (io_destroy, which
// waits for what it still runs, aside as putContext does) rather than to
// the free list.
func dropContext(ctx uint64) {
	aioContexts.mu.Lock()
	inFlight--
	aioContexts.mu.Unlock()
	go unix.Syscall(unix.SYS_IO_DESTROY, uintptr(ctx), 0, 0)
}

// pendingSync is an fsync submitted and not yet reaped.
type pendingSync struct {
	ctx uint64
	err error
	// f is kept reachable, and so open, until the sync is reaped.
	f    *os.File
	done bool
}

// startSync submits an fsync of f and returns at once. It fails with
// errNoAsync, having submitted nothing, where the kernel (or the file's
// file system) cannot sync a file so: the caller then syncs it itself.
func startSync(f *os.File) (*pendingSync, error) {
	ctx, err := takeContext()
	if err != nil {
		return nil, err
	}
	cb := iocb{opcode: iocbCmdFsync, fildes: uint32(f.Fd())}
	p := &cb
	for {
		_, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, uintptr(ctx), 1, uintptr(unsafe.Pointer(&p)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			// EINVAL: this file system has no asynchronous fsync.
			// EAGAIN: the kernel is out of room for the request, on a
			// context that holds nothing else; retrying could spin, so
			// this sync is made by the caller.
			putContext(ctx)
			return nil, fmt.Errorf("%w: io_submit: %w", errNoAsync, e)
		}
		return &pendingSync{ctx: ctx, f: f}, nil
	}
}

// wait waits for the sync and returns its error, the fsync's own.
func (p *pendingSync) wait() error {
	if p.done {
		return p.err
	}
	var ev ioEvent
	for {
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(p.ctx), 1, 1, uintptr(unsafe.Pointer(&ev)), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || n != 1 {
			// The context is in a state nothing can trust: it is
			// given back to the system, not kept for another sync,
			// and the file's sync is made again.
			dropContext(p.ctx)
			p.done = true
			p.err = p.f.Sync()
			return p.err
		}
		break
	}
	p.done = true
	putContext(p.ctx)
	if ev.res < 0 {
		p.err = &os.PathError{Op: "fsync", Path: p.f.Name(), Err: unix.Errno(-ev.res)}
	}
	return p.err
}

// inFlight counts the contexts taken and not given back, for tests.
var inFlight int

func asyncInFlight() int {
	aioContexts.mu.Lock()
	defer aioContexts.mu.Unlock()
	return inFlight
}

func setAsyncOff() (restore func()) {
	aioContexts.mu.Lock()
	was := aioContexts.off
	aioContexts.off = true
	aioContexts.mu.Unlock()
	return func() {
		aioContexts.mu.Lock()
		aioContexts.off = was
		aioContexts.mu.Unlock()
	}
}

func asyncFree() int {
	aioContexts.mu.Lock()
	defer aioContexts.mu.Unlock()
	return len(aioContexts.free)
}
