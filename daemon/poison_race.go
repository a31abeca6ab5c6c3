//go:build race

package daemon

// poisonServed: under the race detector (the tests' runs), a request served
// on its connection's read loop leaves poisoned contexts in its memory
// until the next request takes it (served.release).
const poisonServed = true
