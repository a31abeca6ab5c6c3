//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are passed on to the command orionctl exec runs.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// terminalSignal: the terminal sends these to its whole foreground process
// group.
func terminalSignal(s os.Signal) bool {
	return s == syscall.SIGINT || s == syscall.SIGQUIT || s == syscall.SIGWINCH
}
