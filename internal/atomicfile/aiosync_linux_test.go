//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || mips64le || mipsle || 386 || arm)

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A sync whose context the kernel no longer answers for (here: destroyed
// under it) is made again by the caller, and its context is given back to
// the system rather than kept taken: nothing is left counted in flight.
func TestAsyncSyncContextLost(t *testing.T) {
	if !asyncSyncs() {
		t.Skip("no asynchronous fsync here")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := asyncInFlight()
	p, err := startSync(f)
	if err != nil {
		t.Skip(err)
	}
	// Reaped first, so that the context can be destroyed without a wait;
	// then the sync looks submitted on a context that is gone.
	var ev ioEvent
	if _, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(p.ctx), 1, 1, uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		t.Fatal(e)
	}
	unix.Syscall(unix.SYS_IO_DESTROY, uintptr(p.ctx), 0, 0)
	if err := p.wait(); err != nil {
		t.Fatalf("the sync made again failed: %v", err)
	}
	if got := asyncInFlight(); got != before {
		t.Errorf("%d syncs counted in flight after a lost context, want %d", got, before)
	}
	for _, ctx := range aioContexts.free {
		if ctx == p.ctx {
			t.Error("a lost context was kept for later syncs")
		}
	}
}
