// Package e2e holds the daemon's end-to-end tests: each starts the real
// oriond binary (internal/testdaemon) on a temporary socket and state
// directory and drives it through the Go client, over the socket, as any
// client would. They cover what only the whole daemon shows: large files
// arriving byte-identical, the end marker split at every byte, every
// operation, errors with their codes and reasons, the watcher and the
// recovery spool, idle prompts and truncation, restarts and resume, and
// the crash tests (SIGKILL at exact failpoints during finalize and
// transaction commit). crash/ is the randomized crash run that the suite
// runs briefly and orioncrash runs long.
//
// The package has no code of its own: the tests are in its _test.go files.
package e2e
