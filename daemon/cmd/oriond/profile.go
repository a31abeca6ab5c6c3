package main

import (
	"fmt"
	"os"
	"runtime/pprof"
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
