// Package failpoint lets crash tests kill the daemon at an exact point of
// its work, such as between two renames of a transaction, which no timing
// of an outside SIGKILL can hit reliably.
//
// Points are armed by the environment variable ORION_TEST_FAILPOINTS, a
// comma-separated list of name=n: the n-th time the named point is reached,
// the process sends itself SIGKILL. name=n:panic panics there instead, for
// tests of what survives a bug; name=n:wait, at a point passed with Wait,
// holds the work there until its context is done (its client went away),
// for tests of what stops then. Unset (always, outside tests), Hit costs
// one map lookup of an empty map.
package failpoint

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar arms failpoints.
const EnvVar = "ORION_TEST_FAILPOINTS"

var (
	mu      sync.Mutex
	armed   map[string]int
	actions map[string]string
	counts  = map[string]int{}
)

// What an armed point does on its pass, besides the default SIGKILL.
const (
	actionPanic = "panic"
	actionWait  = "wait"
)

func init() {
	var err error
	if armed, actions, err = parse(os.Getenv(EnvVar)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no failpoint armed)\n", EnvVar, err)
		armed, actions = nil, nil
	}
}

// Parse reads a failpoint list: "name=n,name=n:panic,name=n:wait".
func Parse(spec string) (map[string]int, error) {
	out, _, err := parse(spec)
	return out, err
}

// parse is Parse that also returns the action of each point armed with
// one.
func parse(spec string) (map[string]int, map[string]string, error) {
	out, actions := map[string]int{}, map[string]string{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, nth, ok := strings.Cut(item, "=")
		nth, action, _ := strings.Cut(nth, ":")
		n, err := strconv.Atoi(nth)
		if !ok || name == "" || err != nil || n < 1 || (action != "" && action != actionPanic && action != actionWait) {
			return nil, nil, fmt.Errorf("failpoint %q: want name=n, name=n:panic or name=n:wait with n >= 1", item)
		}
		out[name] = n
		if action != "" {
			actions[name] = action
		}
	}
	return out, actions, nil
}

// Armed lists the armed points, for a startup warning.
func Armed() map[string]int { return armed }

// Hit counts one pass through the named point and kills the process with
// SIGKILL on the armed pass, or panics there for a point armed with :panic.
// A point armed with :wait does nothing here: it waits only where the work
// has a context (Wait).
func Hit(name string) {
	if _, ok := armed[name]; ok && actions[name] != actionWait {
		fire(context.Background(), name)
	}
}

// Wait is Hit for work done on behalf of a request: on the armed pass of a
// point armed with :wait it returns only once ctx is done, so a test can
// hold the work at that point until its client goes away, then see what
// the work does next.
func Wait(ctx context.Context, name string) {
	if _, ok := armed[name]; ok {
		fire(ctx, name)
	}
}

// fire counts a pass through name and, on its armed pass, does what it was
// armed for; ctx is waited on only by a point armed with :wait, which Hit
// never fires.
func fire(ctx context.Context, name string) {
	mu.Lock()
	counts[name]++
	now := counts[name] == armed[name]
	mu.Unlock()
	if !now {
		return
	}
	switch actions[name] {
	case actionPanic:
		panic("failpoint " + name + " (armed by " + EnvVar + ")")
	case actionWait:
		// Said on stderr, which tests read, so that they let the caller go
		// only once the work is held here.
		fmt.Fprintf(os.Stderr, "failpoint %s: holding the work until its caller is gone (armed by %s)\n", name, EnvVar)
		<-ctx.Done()
	default:
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously; never go on.
	}
}
