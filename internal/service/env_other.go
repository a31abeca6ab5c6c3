//go:build !linux

package service

// Only Linux runs systemd; Detect does not ask elsewhere.
func systemdBooted() bool { return false }

// pid1 is launchd on macOS; only Linux's message names PID 1.
func pid1() string { return "unknown" }
