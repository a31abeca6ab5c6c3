//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || mips64le || mipsle || 386 || arm))

package atomicfile

import "os"

// pendingSync never exists here: there is no asynchronous fsync to ask
// for, and every sync is made by its caller.
type pendingSync struct{}

func asyncSyncs() bool { return false }

func startSync(*os.File) (*pendingSync, error) { return nil, errNoAsync }

func (*pendingSync) wait() error { return nil }

func asyncInFlight() int { return 0 }

func setAsyncOff() (restore func()) { return func() {} }

func asyncFree() int { return 0 }
