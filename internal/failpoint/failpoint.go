// Package failpoint lets crash tests kill the daemon at an exact point of
// its work, such as between two renames of a transaction, which no timing
// of an outside SIGKILL can hit reliably.
//
// Points are armed by the environment variable ORION_TEST_FAILPOINTS, a
// comma-separated list of name=n: the n-th time the named point is reached,
// the process sends itself SIGKILL. Unset (always, outside tests), Hit costs
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
	counts = map[string]int{}
)

func init() {
	var err error
	if armed, err = Parse(os.Getenv(EnvVar)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no failpoint armed)\n", EnvVar, err)
		armed = nil
	}
}

// Parse reads a failpoint list: "name=n,name=n".
func Parse(spec string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, nth, ok := strings.Cut(item, "=")
		n, err := strconv.Atoi(nth)
		if !ok || name == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("failpoint %q: want name=n with n >= 1", item)
		}
		out[name] = n
	}
	return out, nil
}

// Armed lists the armed points, for a startup warning.
func Armed() map[string]int { return armed }

// Hit counts one pass through the named point and kills the process with
// SIGKILL on the armed pass.
func Hit(name string) {
	n, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	counts[name]++
	fire := counts[name] == n
	mu.Unlock()
	if fire {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously; never go on.
	}
}
