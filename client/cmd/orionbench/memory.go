package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// The daemon's memory targets (docs/benchmarks.md) and the load they are
// stated for.
const (
	memorySessions     = 200
	memoryFileMiB      = 256
	targetIdleMiB      = 40
	targetSessionsMiB  = 120
	targetFinalizeMiB  = 32
	sessionsSampleTick = 50 * time.Millisecond
	finalizeSampleTick = 2 * time.Millisecond
)

// memMiB is resident memory in MiB, split as /proc/<pid>/status splits it
// (see memSample).
type memMiB struct {
	VmRSS   float64 `json:"vm_rss_mib"`
	RssAnon float64 `json:"rss_anon_mib"`
	RssFile float64 `json:"rss_file_mib"`
}

func mibOf(m memSample) memMiB {
	return memMiB{VmRSS: float64(m.rss) / 1024, RssAnon: float64(m.anon) / 1024, RssFile: float64(m.file) / 1024}
}

func (m memMiB) minus(o memMiB) memMiB {
	return memMiB{VmRSS: m.VmRSS - o.VmRSS, RssAnon: m.RssAnon - o.RssAnon, RssFile: m.RssFile - o.RssFile}
}

// memoryReport is what --memory measured on a daemon of its own.
type memoryReport struct {
	// Idle is right after the daemon opened its socket.
	Idle      memMiB `json:"idle"`
	IdleMeets bool   `json:"idle_meets"`

	// Sessions sessions, each on its own connection, appended 1 KiB
	// chunks back to back (each waiting for its acknowledgement) for
	// StreamSeconds, then were all finalized at once. The medians are
	// over the samples taken while all of them streamed, the peaks over
	// their begins and appends (VmRSS's from VmHWM, reset before the
	// first begin). FinalizeAllPeak is the peak while all of them were
	// finalized, a burst the target does not speak of.
	Sessions        int     `json:"sessions"`
	Connections     int     `json:"connections"`
	StreamSeconds   float64 `json:"stream_seconds"`
	Appends         int64   `json:"appends"`
	Samples         int     `json:"samples"`
	SessionsMedian  memMiB  `json:"sessions_median"`
	SessionsPeak    memMiB  `json:"sessions_peak"`
	SessionsMeets   bool    `json:"sessions_meets"`
	FinalizeAllPeak memMiB  `json:"finalize_all_peak"`

	// A FileMiB MiB text file was streamed in ChunkBytes chunks and then
	// finalized; Added is the peak during the finalize minus the memory
	// just before it. FinalizeMeets judges Added.RssAnon (see
	// reportMemory for why).
	FileMiB         int     `json:"file_mib"`
	ChunkBytes      int     `json:"chunk_bytes"`
	FinalizeSeconds float64 `json:"finalize_seconds"`
	BeforeFinalize  memMiB  `json:"before_finalize"`
	FinalizePeak    memMiB  `json:"finalize_peak"`
	Added           memMiB  `json:"finalize_added"`
	FinalizeMeets   bool    `json:"finalize_meets"`

	// PeakFrom says where the VmRSS peaks come from: VmHWM after
	// clear_refs, or (when that could not be reset) the samples.
	PeakFrom string `json:"peak_from"`
}

// sampler reads the daemon's memory every tick until finish.
type sampler struct {
	pid     int
	stop    chan struct{}
	done    chan struct{}
	samples []timedSample
}

type timedSample struct {
	at time.Time
	m  memSample
}

func startSampler(pid int, tick time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			if m, ok := sampleMem(pid); ok {
				s.samples = append(s.samples, timedSample{time.Now(), m})
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling, takes one last sample (whose VmHWM covers
// everything since the last reset) and returns them all.
func (s *sampler) finish() []timedSample {
	close(s.stop)
	<-s.done
	if m, ok := sampleMem(s.pid); ok {
		s.samples = append(s.samples, timedSample{time.Now(), m})
	}
	return s.samples
}

// peakOf is the largest of each figure in samples; VmRSS's is VmHWM when
// hwm says it was reset before the first sample.
func peakOf(samples []timedSample, hwm bool) memSample {
	var p memSample
	for _, s := range samples {
		p.rss, p.anon, p.file = max(p.rss, s.m.rss), max(p.anon, s.m.anon), max(p.file, s.m.file)
		if hwm {
			p.rss = max(p.rss, s.m.hwm)
		}
	}
	return p
}

// medianOf is the median of each figure over the samples taken in [from, to].
func medianOf(samples []timedSample, from, to time.Time) (memSample, int) {
	var rss, anon, file []int64
	for _, s := range samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		rss, anon, file = append(rss, s.m.rss), append(anon, s.m.anon), append(file, s.m.file)
	}
	med := func(v []int64) int64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return memSample{rss: med(rss), anon: med(anon), file: med(file)}, len(rss)
}

// memoryCase measures the memory targets on a daemon of its own,
// started as the timed one is, so that its figures do not depend on which
// other cases ran before: idle, 200 streaming sessions, and the finalize
// of a 256 MiB file.
func memoryCase(ctx context.Context, cfg config) (*memoryReport, error) {
	// A store left by an earlier run would make the idle figure that of
	// reopening it.
	state := filepath.Join(cfg.dir, "state-memory")
	if err := os.RemoveAll(state); err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	d, err := startDaemon(ctx, cfg, "memory", nil)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	idle, ok := sampleMem(d.pid)
	if !ok {
		return nil, fmt.Errorf("--memory: cannot read /proc/%d/status (it needs Linux)", d.pid)
	}
	rep := &memoryReport{Idle: mibOf(idle), PeakFrom: "VmHWM after clear_refs"}
	rep.IdleMeets = rep.Idle.VmRSS <= targetIdleMiB
	if err := streamingMemory(ctx, cfg, d, rep); err != nil {
		return nil, fmt.Errorf("--memory, %d sessions: %w", memorySessions, err)
	}
	if err := finalizeMemory(ctx, cfg, d, rep); err != nil {
		return nil, fmt.Errorf("--memory, a %d MiB finalize: %w", memoryFileMiB, err)
	}
	return rep, nil
}

// streamingMemory begins memorySessions sessions, one connection each as
// that many agents would have, streams 1 KiB appends from all of them for
// cfg.duration and finalizes them, sampling the daemon throughout.
func streamingMemory(ctx context.Context, cfg config, d *daemonProc, rep *memoryReport) error {
	n := memorySessions
	hwm := resetPeak(d.pid) == nil
	if !hwm {
		rep.PeakFrom = fmt.Sprintf("samples every %s and %s (clear_refs failed)", sessionsSampleTick, finalizeSampleTick)
	}
	smp := startSampler(d.pid, sessionsSampleTick)
	defer func() {
		if smp != nil {
			smp.finish()
		}
	}()
	clients := make([]*client.Client, n)
	ids := make([]string, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range n {
		c, err := client.Dial(ctx, d.socket, client.Options{})
		if err != nil {
			return err
		}
		clients[i] = c
		b, err := c.Begin(ctx, protocol.BeginParams{
			Intent: "benchmark", TargetFile: filepath.Join(d.root, fmt.Sprintf("mem-%d.txt", i)), Operation: protocol.OpOverwrite,
		})
		if err != nil {
			return err
		}
		ids[i] = b.SessionID
	}
	chunk := string(chunkOf(1024))
	var (
		appends atomic.Int64
		wg      sync.WaitGroup
		errs    = make([]error, n)
	)
	start := time.Now()
	deadline := start.Add(cfg.duration)
	for i := range n {
		wg.Go(func() {
			for seq := uint64(1); time.Now().Before(deadline); seq++ {
				if _, err := clients[i].Append(ctx, protocol.AppendParams{SessionID: ids[i], Seq: seq, Chunk: chunk}); err != nil {
					errs[i] = err
					return
				}
				appends.Add(1)
			}
		})
	}
	wg.Wait()
	end := time.Now()
	streamed := smp.finish()
	if hwm {
		resetPeak(d.pid)
	}
	smp = startSampler(d.pid, sessionsSampleTick)
	for i := range n {
		wg.Go(func() {
			if errs[i] == nil {
				_, errs[i] = clients[i].Finalize(ctx, protocol.FinalizeParams{SessionID: ids[i], EndOfInput: true})
			}
		})
	}
	wg.Wait()
	finalized := smp.finish()
	smp = nil
	for i := range n {
		os.Remove(filepath.Join(d.root, fmt.Sprintf("mem-%d.txt", i)))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	med, k := medianOf(streamed, start, end)
	rep.Sessions, rep.Connections, rep.Samples = n, n, k
	rep.StreamSeconds, rep.Appends = end.Sub(start).Seconds(), appends.Load()
	rep.SessionsMedian, rep.SessionsPeak = mibOf(med), mibOf(peakOf(streamed, hwm))
	rep.FinalizeAllPeak = mibOf(peakOf(finalized, hwm))
	rep.SessionsMeets = rep.SessionsPeak.VmRSS <= targetSessionsMiB
	return nil
}

// finalizeMemory streams a memoryFileMiB MiB text file as `orionctl write`
// does and measures what its finalize adds to the daemon's memory: the peak
// during the finalize (VmHWM, reset just before it; RssAnon and RssFile
// from samples every few ms) minus the memory just before it.
func finalizeMemory(ctx context.Context, cfg config, d *daemonProc, rep *memoryReport) error {
	src := filepath.Join(cfg.dir, "memory-src.txt")
	if err := writeText(src, memoryFileMiB<<20); err != nil {
		return err
	}
	defer os.Remove(src)
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	target := filepath.Join(d.root, "mem-large.txt")
	os.Remove(target) // left by a run that failed
	rep.FileMiB, rep.ChunkBytes = memoryFileMiB, c.WholeFileChunkSize(ctx)
	id, err := streamLarge(ctx, c, src, target)
	if err != nil {
		return err
	}
	hwm := resetPeak(d.pid) == nil
	before, ok := sampleMem(d.pid)
	if !ok {
		return fmt.Errorf("the daemon is gone")
	}
	smp := startSampler(d.pid, finalizeSampleTick)
	t0 := time.Now()
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: id, EndOfInput: true})
	rep.FinalizeSeconds = time.Since(t0).Seconds()
	samples := smp.finish()
	if err != nil {
		return err
	}
	if res.FileBytes != memoryFileMiB<<20 {
		return fmt.Errorf("finalize wrote %d bytes, not %d", res.FileBytes, memoryFileMiB<<20)
	}
	if !hwm {
		rep.PeakFrom = fmt.Sprintf("samples every %s and %s (clear_refs failed)", sessionsSampleTick, finalizeSampleTick)
	}
	rep.BeforeFinalize, rep.FinalizePeak = mibOf(before), mibOf(peakOf(samples, hwm))
	rep.Added = rep.FinalizePeak.minus(rep.BeforeFinalize)
	rep.FinalizeMeets = rep.Added.RssAnon < targetFinalizeMiB
	return os.Remove(target)
}

func verdict(ok bool) string {
	if ok {
		return "meets"
	}
	return "MISSES"
}

// reportMemory prints the memory figures next to their targets. The
// idle and 200-session targets are judged on VmRSS, all the daemon holds.
// The finalize target is judged on RssAnon: reading the chunks back touches
// every page of bbolt's read-only mapping of them, which VmRSS counts as
// RssFile, but those pages are the page cache's (the same pages a read(2)
// of the store would fill, and the kernel drops them without writing
// anything when memory is short), not memory the daemon allocated.
func reportMemory(out io.Writer, m *memoryReport) {
	fmt.Fprintf(out, "memory (--memory, a daemon of its own), MiB from /proc/<pid>/status; VmRSS = RssAnon (heap, stacks) + RssFile (binary, bbolt's mapping: page cache) + RssShmem:\n")
	fmt.Fprintf(out, "  idle after start: VmRSS %.1f (RssAnon %.1f, RssFile %.1f) (target <= %d MiB: %s)\n",
		m.Idle.VmRSS, m.Idle.RssAnon, m.Idle.RssFile, targetIdleMiB, verdict(m.IdleMeets))
	fmt.Fprintf(out, "  %d sessions streaming 1 KiB appends back to back, one connection each, %.1fs, %d appends (%.0f/s), median of %d samples every %s:\n",
		m.Sessions, m.StreamSeconds, m.Appends, float64(m.Appends)/m.StreamSeconds, m.Samples, sessionsSampleTick)
	fmt.Fprintf(out, "    VmRSS median %.1f, peak %.1f (target <= %d MiB at the peak: %s)\n",
		m.SessionsMedian.VmRSS, m.SessionsPeak.VmRSS, targetSessionsMiB, verdict(m.SessionsMeets))
	fmt.Fprintf(out, "    RssAnon median %.1f, peak %.1f; RssFile median %.1f, peak %.1f\n",
		m.SessionsMedian.RssAnon, m.SessionsPeak.RssAnon, m.SessionsMedian.RssFile, m.SessionsPeak.RssFile)
	fmt.Fprintf(out, "    then all %d finalized at once: peak VmRSS %.1f (RssAnon %.1f, RssFile %.1f)\n",
		m.Sessions, m.FinalizeAllPeak.VmRSS, m.FinalizeAllPeak.RssAnon, m.FinalizeAllPeak.RssFile)
	fmt.Fprintf(out, "  finalize of a %d MiB file streamed in %d-byte chunks (%.1fs); peak VmRSS from %s, RssAnon and RssFile from samples every %s:\n",
		m.FileMiB, m.ChunkBytes, m.FinalizeSeconds, m.PeakFrom, finalizeSampleTick)
	fmt.Fprintf(out, "    before: VmRSS %.1f (RssAnon %.1f, RssFile %.1f); peak: VmRSS %.1f (RssAnon %.1f, RssFile %.1f)\n",
		m.BeforeFinalize.VmRSS, m.BeforeFinalize.RssAnon, m.BeforeFinalize.RssFile, m.FinalizePeak.VmRSS, m.FinalizePeak.RssAnon, m.FinalizePeak.RssFile)
	fmt.Fprintf(out, "    added RssAnon %+.1f (target < %d MiB, judged on RssAnon, the daemon's own memory: %s)\n",
		m.Added.RssAnon, targetFinalizeMiB, verdict(m.FinalizeMeets))
	fmt.Fprintf(out, "    added VmRSS %+.1f, RssFile %+.1f (the chunks read back through bbolt's mapping: page cache, not heap; on VmRSS the target %s)\n",
		m.Added.VmRSS, m.Added.RssFile, verdict(m.Added.VmRSS < targetFinalizeMiB))
}
