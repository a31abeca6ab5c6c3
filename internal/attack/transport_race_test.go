//go:build race

package attack

// raceBuild is set when the tests, and so the oriond they build, run with
// the race detector, which multiplies the daemon's memory use.
const raceBuild = true
