package main

import (
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
	if m, ok := sampleMem(pid); ok {
		p.rssKiB, p.peakKiB = m.rss, m.hwm
	}
	return p
}

// memSample is the daemon's resident memory at one moment, in KiB, from
// /proc/<pid>/status: all of it (VmRSS), the anonymous part (RssAnon: the
// Go heap, stacks, the runtime's own memory), the file-backed part
// (RssFile: the binary, and the pages of bbolt's read-only mapping of the
// store that the daemon has touched, which are page cache the kernel can
// drop without writing anything), and the peak of VmRSS (VmHWM).
type memSample struct {
	rss, anon, file, hwm int64
}

// sampleMem reads /proc/<pid>/status; ok is false off Linux or when the
// daemon is gone.
func sampleMem(pid int) (m memSample, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memSample{}, false
	}
	for line := range strings.Lines(string(b)) {
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			m.rss, ok = kib, true
		case "RssAnon":
			m.anon = kib
		case "RssFile":
			m.file = kib
		case "VmHWM":
			m.hwm = kib
		}
	}
	return m, ok
}

// resetPeak sets the daemon's VmHWM back to its VmRSS (clear_refs 5,
// Linux 4.0 and later), so that VmHWM afterwards is the peak of what
// follows.
func resetPeak(pid int) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", pid), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("5"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuPerOp is the daemon's CPU time between two samples divided by ops, in
// microseconds; 0 when either sample is missing.
func cpuPerOp(before, after procSample, ops int) float64 {
	if !before.readable || !after.readable || ops == 0 {
		return 0
	}
	return float64((after.cpu - before.cpu).Microseconds()) / float64(ops)
}
