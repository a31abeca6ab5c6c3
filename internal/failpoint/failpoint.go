// Package failpoint lets crash tests kill the daemon at an exact point of
// its work, such as between two renames of a transaction, which no timing
// of an outside SIGKILL can hit reliably.
//
// Points are armed by the environment variable ORION_TEST_FAILPOINTS, a
// comma-separated list of name=n: the n-th time the named point is reached,
// the process sends itself SIGKILL. name=n:panic panics there instead, for
// tests of what survives a bug. Unset (always, outside tests), Hit costs
// one map lookup of an empty map.
package failpoint

import (
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
	mu     sync.Mutex
	armed  map[string]int
	panics map[string]bool
	counts = map[string]int{}
)

func init() {
	var err error
	if armed, panics, err = parse(os.Getenv(EnvVar)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no failpoint armed)\n", EnvVar, err)
		armed, panics = nil, nil
	}
}

// Parse reads a failpoint list: "name=n,name=n:panic".
func Parse(spec string) (map[string]int, error) {
	out, _, err := parse(spec)
	return out, err
}

// parse is Parse that also returns the points that panic.
func parse(spec string) (map[string]int, map[string]bool, error) {
	out, panics := map[string]int{}, map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, nth, ok := strings.Cut(item, "=")
		nth, action, _ := strings.Cut(nth, ":")
		n, err := strconv.Atoi(nth)
		if !ok || name == "" || err != nil || n < 1 || (action != "" && action != "panic") {
			return nil, nil, fmt.Errorf("failpoint %q: want name=n or name=n:panic with n >= 1", item)
		}
		out[name] = n
		if action == "panic" {
			panics[name] = true
		}
	}
	return out, panics, nil
}

// Armed lists the armed points, for a startup warning.
func Armed() map[string]int { return armed }

// Hit counts one pass through the named point and kills the process with
// SIGKILL on the armed pass, or panics there for a point armed with :panic.
func Hit(name string) {
	n, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	counts[name]++
	fire := counts[name] == n
	mu.Unlock()
	if fire && panics[name] {
		panic("failpoint " + name + " (armed by " + EnvVar + ")")
	}
	if fire {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously; never go on.
	}
}
