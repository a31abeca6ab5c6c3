//go:build !race

package testdaemon

const raceEnabled = false
