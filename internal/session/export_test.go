package session

// SetRenameHook makes every commit call f after each file is in place, for
// tests that fail a transaction between its renames.
func SetRenameHook(f func(i int) error) (restore func()) {
	testHookRenamed = f
	return func() { testHookRenamed = nil }
}
