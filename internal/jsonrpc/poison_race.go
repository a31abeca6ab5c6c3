//go:build race

package jsonrpc

// poisonBodies: under the race detector (the tests' runs), a body's buffer
// is overwritten as it is handed back, so that anything that still reads
// the params of a request it released (a chunk kept past the engine's
// Append) reads garbage, and the tests that check what was stored fail.
const poisonBodies = true
