package session

import "context"

// SetRenameHook makes every commit call f after each file is in place, for
// tests that fail a transaction between its renames.
func SetRenameHook(f func(i int) error) (restore func()) {
	testHookRenamed = f
	return func() { testHookRenamed = nil }
}

// HoldCheckMemory takes n bytes of m's budget for content checked in
// memory, as a finalize in progress would, until release is called.
func HoldCheckMemory(m *Manager, n int64) (release func()) {
	held, err := m.checks.acquire(context.Background(), n)
	if err != nil {
		panic(err)
	}
	return func() { m.checks.release(held) }
}

// Waiting returns how many requests wait for session id's chunks in flight.
func Waiting(m *Manager, id string) int {
	e, err := m.lookup(id)
	if err != nil {
		return 0
	}
	if !e.mu.mu.TryLock() {
		return 0 // held: by a request that did not wait, maybe
	}
	defer e.mu.mu.Unlock()
	return e.mu.waiting
}

// Streamed returns how many streamed files m holds open, and how many
// finalizes named theirs.
func Streamed(m *Manager) (open int, named int64) {
	m.streams.mu.Lock()
	defer m.streams.mu.Unlock()
	return m.streams.open, m.streamsNamed.Load()
}

// MaxStreamedFiles is how many streamed files the daemon holds at once.
const MaxStreamedFiles = maxStreamedFiles

// SetEarlyHook makes every session.write that started writing its file
// before its check call f with whether the finalize took that file.
func SetEarlyHook(f func(taken bool)) (restore func()) {
	testHookEarly = f
	return func() { testHookEarly = nil }
}

// SetListedHook makes every session.write call f with its session's id
// once other requests can find the session by it.
func SetListedHook(f func(id string)) (restore func()) {
	testHookListed = f
	return func() { testHookListed = nil }
}

// SetNoHiddenFiles makes files without a name look unavailable, as on a
// file system without O_TMPFILE, until the returned function runs.
func SetNoHiddenFiles() (restore func()) {
	testHookNoHidden.Store(true)
	return func() { testHookNoHidden.Store(false) }
}
