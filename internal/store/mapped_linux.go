package store

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// DropMappedPages unmaps from the process the store's file pages it has
// touched, which count in its resident set although they are the page
// cache's: bbolt maps the whole file read-only, and writing big values
// reads the pages around them back. The pages stay cached; the next read
// of one maps it again. It reads /proc/self/maps to find the mapping.
func (s *Store) DropMappedPages() error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, " "+s.path) {
			continue
		}
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err != nil || hi <= lo {
			continue
		}
		// The mapping is bbolt's, read-only and shared: MADV_DONTNEED
		// drops this process's page table entries and nothing else.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_DONTNEED); errno != 0 {
			return errno
		}
	}
	return sc.Err()
}
