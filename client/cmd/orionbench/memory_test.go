package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestSampleMem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/<pid>/status")
	}
	m, ok := sampleMem(os.Getpid())
	if !ok {
		t.Fatal("sampleMem of this process: not readable")
	}
	if m.rss <= 0 || m.anon <= 0 || m.file <= 0 || m.hwm < m.rss {
		t.Fatalf("sampleMem = %+v, want every figure above 0 and VmHWM >= VmRSS", m)
	}
	if m.anon+m.file > m.rss+1 {
		t.Fatalf("RssAnon %d + RssFile %d > VmRSS %d", m.anon, m.file, m.rss)
	}
	if _, ok := sampleMem(-1); ok {
		t.Fatal("sampleMem(-1) is readable")
	}
}

func TestPeakAndMedian(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	samples := []timedSample{
		{at(0), memSample{rss: 100, anon: 60, file: 40, hwm: 100}},
		{at(1), memSample{rss: 300, anon: 90, file: 210, hwm: 400}},
		{at(2), memSample{rss: 200, anon: 150, file: 50, hwm: 400}},
		{at(3), memSample{rss: 250, anon: 100, file: 150, hwm: 400}},
	}
	for _, tc := range []struct {
		name string
		hwm  bool
		want memSample
	}{
		{"VmHWM", true, memSample{rss: 400, anon: 150, file: 210}},
		{"Sampled", false, memSample{rss: 300, anon: 150, file: 210}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := peakOf(samples, tc.hwm); got != tc.want {
				t.Fatalf("peakOf = %+v, want %+v", got, tc.want)
			}
		})
	}
	med, n := medianOf(samples, at(1), at(3))
	if want := (memSample{rss: 250, anon: 100, file: 150}); med != want || n != 3 {
		t.Fatalf("medianOf(1s..3s) = %+v of %d samples, want %+v of 3", med, n, want)
	}
}

func TestResetPeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writes /proc/<pid>/clear_refs")
	}
	if err := resetPeak(os.Getpid()); err != nil {
		t.Skipf("clear_refs not writable here: %v", err)
	}
	m, _ := sampleMem(os.Getpid())
	// VmHWM is now about VmRSS; allow for pages touched since.
	if m.hwm > m.rss+4096 {
		t.Fatalf("after resetPeak VmHWM %d kB is far above VmRSS %d kB", m.hwm, m.rss)
	}
}
