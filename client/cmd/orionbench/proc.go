package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux the daemon supports (it is fixed in the kernel ABI).
const clockTick = 10 * time.Millisecond

// procSample is what the kernel says about the daemon at one moment: CPU
// time of all its threads (user + system) and resident memory.
type procSample struct {
	cpu      time.Duration
	rssKiB   int64
	peakKiB  int64
	readable bool
}

// sampleProc reads /proc/<pid>/stat and /proc/<pid>/status. Off Linux, or
// when the daemon is gone, the sample is marked unreadable and the
// benchmark prints no CPU or memory figure rather than a wrong one.
func sampleProc(pid int) procSample {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procSample{}
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return procSample{}
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return procSample{}
	}
	p := procSample{cpu: time.Duration(ut+st) * clockTick, readable: true}
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			p.rssKiB = kib
		case "VmHWM":
			p.peakKiB = kib
		}
	}
	return p
}

// cpuPerOp is the daemon's CPU time between two samples divided by ops, in
// microseconds; 0 when either sample is missing.
func cpuPerOp(before, after procSample, ops int) float64 {
	if !before.readable || !after.readable || ops == 0 {
		return 0
	}
	return float64((after.cpu - before.cpu).Microseconds()) / float64(ops)
}
