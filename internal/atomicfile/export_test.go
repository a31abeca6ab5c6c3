package atomicfile

// SetRandomToken makes temp names predictable for a test and returns a
// function that restores the default. Tests using it must not run in
// parallel.
func SetRandomToken(f func() string) (restore func()) {
	old := randomToken
	randomToken = f
	return func() { randomToken = old }
}

// AsyncSyncsInFlight is how many asynchronous syncs were started and not
// yet waited for (their contexts are not free).
func AsyncSyncsInFlight() int { return asyncInFlight() }

// SetAsyncSyncsOff makes the kernel's asynchronous syncs look unavailable
// until the returned function runs.
func SetAsyncSyncsOff() (restore func()) { return setAsyncOff() }

// HasAsyncSyncs says whether the kernel here takes asynchronous syncs.
func HasAsyncSyncs() bool { return asyncSyncs() }

// FreeAsyncContexts is how many contexts for asynchronous syncs are kept
// for later ones.
func FreeAsyncContexts() int { return asyncFree() }
