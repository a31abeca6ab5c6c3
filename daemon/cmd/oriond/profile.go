package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile profiles the daemon into path until the returned function
// runs (at a graceful stop). It is set by $ORION_CPU_PROFILE rather than a
// flag so that it never lands in a config file or a service unit by accident:
// it is for measuring (orionbench, README "Benchmarks"), not for serving.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("ORION_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("ORION_CPU_PROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startMemProfile creates path now, so that a path that cannot be written
// fails the start, and the returned function writes the daemon's heap
// profile into it (at a graceful stop), after a collection so that its
// in-use figures are what is still live. Its alloc_space view holds every
// allocation since the start (sampled about every 512 KiB), which is what
// says where a workload's memory went. It is set by $ORION_MEM_PROFILE, for
// the same reason as the CPU profile.
func startMemProfile(path string, logger *slog.Logger) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("ORION_MEM_PROFILE: %w", err)
	}
	return func() {
		runtime.GC()
		err := pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			logger.Error("writing the heap profile", "path", path, "err", err)
		}
	}, nil
}

// startExecTrace writes a Go execution trace of the daemon into path until
// the returned function runs (at a graceful stop): which goroutine runs
// what, when, and what each waits for, where a CPU profile only says how
// much. It is set by $ORION_EXEC_TRACE, for the same reason as the CPU
// profile.
func startExecTrace(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("ORION_EXEC_TRACE: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("ORION_EXEC_TRACE: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}
