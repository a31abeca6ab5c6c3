//go:build race

package testdaemon

const raceEnabled = true
