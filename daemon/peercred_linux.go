package daemon

import (
	"os"
	"strconv"
)

// peerProcess returns the name of process pid (its comm, as ps shows it),
// for listings; "" when unknown. It is read at accept, while the peer is
// connected, so the pid is still the peer's.
func peerProcess(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return processName(b)
}
