package atomicfile

// SetRandomToken makes temp names predictable for a test and returns a
// function that restores the default. Tests using it must not run in
// parallel.
func SetRandomToken(f func() string) (restore func()) {
	old := randomToken
	randomToken = f
	return func() { randomToken = old }
}
