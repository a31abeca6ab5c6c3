// Command orionbench measures oriond's acknowledged-append throughput and
// latency over the socket, next to baselines measured in the same run on the
// same disk: an O_APPEND write plus fdatasync per chunk, the cheapest way to
// make a chunk durable by hand. With each case it prints the daemon's CPU
// time per operation and its resident memory (from /proc), and the syncs
// each kind of operation costs (counted on a second daemon run under
// strace, when strace is installed).
//
// --peer-mcp adds whole 64 KiB files written through oriond next to the
// same files written by the MCP filesystem server's write_file, installed
// from npm for the run; --mcp adds the same files written with write_file
// through `orionctl mcp` next to the filesystem server's, both driven by
// the official TypeScript SDK client over stdio; --file-mb adds a large file written as `orionctl
// write` does next to cp and an fsync of the copy. Both run in interleaved
// rounds and print medians and ranges. --memory measures the memory
// targets on a daemon of its own: resident memory idle, while 200 sessions
// stream, and added by the finalize of a 256 MiB file. --proxy-memory
// measures `orionctl proxy` (--orionctl) under its memory attacks: its peak
// resident memory while 256 MiB of model text or a 256 MiB file stream
// through it, and with 24 concurrent 30 MiB request bodies.
//
//	go build -o bin/ ./daemon/cmd/oriond ./client/cmd/orionctl ./client/cmd/orionbench
//	bin/orionbench --oriond bin/oriond --dir /var/tmp/orionbench --peer-mcp --mcp --file-mb 50
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/internal/sibling"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/protocol"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "orionbench:", err)
		os.Exit(1)
	}
}

type config struct {
	oriond string
	// orionctl: the orionctl binary of --proxy-memory and --mcp.
	orionctl    string
	proxyMemory bool
	dir         string
	duration    time.Duration
	chunk       int
	sessions    []int
	baselines   []int
	json        bool
	extra       []string
	peerMCP     bool
	mcp         bool
	fileMB      int
	rounds      int
	wholeOps    int
	syncs       bool
	memory      bool
	checkpoints bool
	cp          checkpointConfig
	// appendCases runs the timed append cases (--appends, true).
	appendCases bool
	appends     bool
	writes      bool
}

// result is one measured case.
type result struct {
	Name      string  `json:"name"`
	Writers   int     `json:"writers"`
	Ops       int     `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	// CPUus is the daemon's CPU time per acknowledged op (user + system,
	// all threads) and RSSMiB its resident memory at the end of the case;
	// zero for the baselines.
	CPUus  float64 `json:"daemon_cpu_us_per_op,omitempty"`
	RSSMiB float64 `json:"daemon_rss_mib,omitempty"`
	// ClientCPUus and ClientAllocs are orionbench's own CPU time (user +
	// system) and heap allocations per acknowledged op, where the client
	// runs in it (the session cases): on a machine of few cores the
	// client's CPU is taken from the daemon's.
	ClientCPUus  float64 `json:"client_cpu_us_per_op,omitempty"`
	ClientAllocs float64 `json:"client_allocs_per_op,omitempty"`
}

// report is everything one run measured, as --json prints it.
type fullReport struct {
	Results     []result          `json:"results"`
	Syncs       []syncRow         `json:"syncs,omitempty"`
	SyncsSkip   string            `json:"syncs_skip,omitempty"`
	Compare     []sideBySide      `json:"compare,omitempty"`
	IdleRSS     float64           `json:"daemon_idle_rss_mib,omitempty"`
	Memory      *memoryReport     `json:"memory,omitempty"`
	ProxyMem    []proxyMemRow     `json:"proxy_memory,omitempty"`
	Checkpoints *checkpointReport `json:"checkpoints,omitempty"`
}

func run(args []string, out io.Writer) error {
	cfg := config{}
	fs := flag.NewFlagSet("orionbench", flag.ContinueOnError)
	fs.StringVar(&cfg.oriond, "oriond", sibling.Binary("oriond"), "path of the oriond binary to benchmark")
	fs.StringVar(&cfg.orionctl, "orionctl", sibling.Binary("orionctl"), "path of the orionctl binary for --proxy-memory and --mcp")
	fs.BoolVar(&cfg.proxyMemory, "proxy-memory", false, "also measure orionctl proxy's peak RSS under its memory attacks (256 MiB of text, a 256 MiB file, 24 concurrent 30 MiB bodies)")
	fs.StringVar(&cfg.dir, "dir", "", "directory on the disk to measure (default: the temp dir); each run works in a new directory inside it, removed at its end, where the daemon's store and the baseline files both go")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "how long each case runs")
	fs.IntVar(&cfg.chunk, "chunk", 1024, "chunk size in bytes")
	sessions := fs.String("sessions", "1,8,64", "concurrent session counts to measure")
	baselines := fs.String("baselines", "1,8", "concurrent writer counts for the fdatasync baseline")
	fs.BoolVar(&cfg.json, "json", false, "print results as JSON")
	fs.Func("daemon-arg", "extra flag for oriond run (repeatable), e.g. --daemon-arg=--trace=false", func(v string) error {
		cfg.extra = append(cfg.extra, v)
		return nil
	})
	fs.BoolVar(&cfg.peerMCP, "peer-mcp", false, "also compare whole 64 KiB files with the MCP filesystem server's write_file (installs "+mcpPackage+" with npm into a temp dir)")
	fs.BoolVar(&cfg.mcp, "mcp", false, "also compare 1 KiB and 64 KiB write_file calls through `orionctl mcp` with the MCP filesystem server's, both driven by the TypeScript SDK client over stdio (installs "+mcpSDKPackage+" and "+mcpPackage+" with npm into a temp dir)")
	fs.IntVar(&cfg.fileMB, "file-mb", 0, "also write a file of this many MB as `orionctl write` does, next to cp + sync (0: skip)")
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds of the --peer-mcp, --mcp and --file-mb comparisons")
	fs.IntVar(&cfg.wholeOps, "whole-ops", 20, "files per side per round of the --peer-mcp and --mcp comparisons")
	fs.BoolVar(&cfg.appends, "append-rounds", false, "also compare 4 KiB appends (1 and 64 sessions) and 64 KiB appends with write+fdatasync on 1 and 8 files, in --rounds interleaved rounds")
	fs.BoolVar(&cfg.writes, "write-rounds", false, "also compare session.write of 1 KiB and 64 KiB files, new and overwriting ones, and a streamed 64 KiB file (begin, append, finalize) with the same files written durably by hand (temp, fsync, rename, directory fsync), in --rounds interleaved rounds of --whole-ops files")
	fs.BoolVar(&cfg.syncs, "syncs", true, "count fsync/fdatasync per operation on a second daemon under strace")
	fs.BoolVar(&cfg.memory, "memory", false, fmt.Sprintf("also measure the memory targets on a daemon of its own: RSS idle, at %d streaming sessions, and added by finalizing a %d MiB file", memorySessions, memoryFileMiB))
	fs.BoolVar(&cfg.checkpoints, "checkpoints", false, "also measure workspace checkpoints against git on the same tree: the first checkpoint, a scan, watched checkpoints, storage after many turns, an undo of 100 files, RSS while watching")
	fs.IntVar(&cfg.cp.files, "checkpoint-files", 100_000, "files of --checkpoints' workspace")
	fs.IntVar(&cfg.cp.mb, "checkpoint-mb", 1024, "MiB of --checkpoints' workspace")
	fs.IntVar(&cfg.cp.turns, "checkpoint-turns", 100, "turns of 10 changed files for --checkpoints' storage figure")
	fs.IntVar(&cfg.cp.repeats, "checkpoint-repeats", 5, "repeats of --checkpoints' scan and watched cases (medians)")
	fs.BoolVar(&cfg.appendCases, "appends", true, "run the append cases (false: only the comparisons asked for)")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of orionbench itself, the client side of --file-mb and --write-rounds, to this file (ORION_CPU_PROFILE in the environment profiles the daemons, and each orionctl mcp of --mcp into that path with .orionctl-mcp-TAG added)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var err error
	if cfg.sessions, err = parseInts(*sessions); err != nil {
		return fmt.Errorf("--sessions: %w", err)
	}
	if cfg.baselines, err = parseInts(*baselines); err != nil {
		return fmt.Errorf("--baselines: %w", err)
	}
	if cfg.rounds < 1 || cfg.wholeOps < 1 || cfg.fileMB < 0 {
		return fmt.Errorf("--rounds and --whole-ops must be at least 1, --file-mb at least 0")
	}
	// Each run works in a directory of its own, removed at its end: a run
	// cut short leaves no files, roots or store for the next one to trip
	// on (a create over a file a failed run left).
	if cfg.dir != "" {
		if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
			return err
		}
	}
	if cfg.dir, err = os.MkdirTemp(cfg.dir, "orionbench"); err != nil {
		return err
	}
	defer os.RemoveAll(cfg.dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var rep fullReport
	if !cfg.appendCases {
		cfg.baselines, cfg.sessions, cfg.syncs = nil, nil, false
	}
	for _, n := range cfg.baselines {
		r, err := baseline(cfg, n)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	d, err := startDaemon(ctx, cfg, "timed", nil)
	if err != nil {
		return err
	}
	defer d.stop()
	rep.IdleRSS = float64(sampleProc(d.pid).rssKiB) / 1024
	for _, n := range cfg.sessions {
		r, err := sessionsCase(ctx, cfg, d, n)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if cfg.appends {
		rs, err := appendRounds(ctx, cfg, d)
		if err != nil {
			return err
		}
		rep.Compare = append(rep.Compare, rs...)
	}
	if cfg.writes {
		for _, w := range writeCases {
			r, err := writeRoundsCase(ctx, cfg, d, w)
			if err != nil {
				return err
			}
			rep.Compare = append(rep.Compare, r)
		}
	}
	if cfg.peerMCP {
		r, err := wholeFileCase(ctx, cfg, d)
		if err != nil {
			return err
		}
		rep.Compare = append(rep.Compare, r)
	}
	var bench *mcpBench
	if cfg.mcp {
		b, skip := installMCPBench(ctx, cfg.dir)
		if skip == "" {
			bench = &b
		}
		for _, size := range []int{1 << 10, 64 << 10} {
			r, err := mcpCase(ctx, cfg, d, bench, skip, size)
			if err != nil {
				return err
			}
			rep.Compare = append(rep.Compare, r)
		}
	}
	if cfg.fileMB > 0 {
		r, err := largeFileCase(ctx, cfg, d)
		if err != nil {
			return err
		}
		rep.Compare = append(rep.Compare, r)
	}
	if cfg.memory {
		if rep.Memory, err = memoryCase(ctx, cfg); err != nil {
			return err
		}
	}
	if cfg.checkpoints {
		if rep.Checkpoints, err = checkpointCase(ctx, cfg, cfg.cp); err != nil {
			return fmt.Errorf("checkpoints: %w", err)
		}
	}
	if cfg.proxyMemory {
		if rep.ProxyMem, err = proxyMemoryCase(ctx, cfg); err != nil {
			return err
		}
	}
	if cfg.syncs {
		if rep.Syncs, rep.SyncsSkip, err = countSyncs(ctx, cfg, bench); err != nil {
			return fmt.Errorf("counting syncs: %w", err)
		}
	}
	if cfg.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if cfg.appendCases {
		report(out, cfg, rep.Results)
	}
	fmt.Fprintf(out, "\ndaemon RSS idle (after start): %.1f MiB\n", rep.IdleRSS)
	for _, c := range rep.Compare {
		fmt.Fprintln(out)
		reportSideBySide(out, c)
	}
	if rep.Memory != nil {
		fmt.Fprintln(out)
		reportMemory(out, rep.Memory)
	}
	if rep.ProxyMem != nil {
		fmt.Fprintln(out)
		reportProxyMemory(out, rep.ProxyMem)
	}
	if rep.Checkpoints != nil {
		fmt.Fprintln(out)
		reportCheckpoints(out, rep.Checkpoints)
	}
	if cfg.syncs {
		fmt.Fprintln(out)
		reportSyncs(out, rep.Syncs, rep.SyncsSkip)
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func chunkOf(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	b[len(b)-1] = '\n'
	return b
}

// baseline appends chunks to one file per writer with O_APPEND, making each
// durable with fdatasync before the next, as a naive journal would.
func baseline(cfg config, writers int) (result, error) {
	dir := filepath.Join(cfg.dir, "baseline")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	chunk := chunkOf(cfg.chunk)
	return measure(fmt.Sprintf("baseline append+fdatasync, %d writer(s)", writers), writers, cfg, nil, func(i int) (func() error, func(), error) {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("w%d", i)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, err
		}
		op := func() error {
			if _, err := f.Write(chunk); err != nil {
				return err
			}
			return datasync(f)
		}
		return op, func() { f.Close() }, nil
	})
}

// sessionsCase streams chunks from n concurrent sessions, each on its own
// connection, timing each acknowledged append.
func sessionsCase(ctx context.Context, cfg config, d *daemonProc, n int) (result, error) {
	chunk := string(chunkOf(cfg.chunk))
	root := d.root
	var (
		before     procSample
		clientCPU  time.Duration
		mem        runtime.MemStats
		clientMall uint64
	)
	started := func() (stopped func()) {
		runtime.ReadMemStats(&mem)
		mallocs := mem.Mallocs
		before = sampleProc(d.pid)
		self := selfCPU()
		return func() {
			clientCPU = selfCPU() - self
			runtime.ReadMemStats(&mem)
			clientMall = mem.Mallocs - mallocs
		}
	}
	r, err := measure(fmt.Sprintf("oriond session.append, %d session(s)", n), n, cfg, started, func(i int) (func() error, func(), error) {
		c, err := client.Dial(ctx, d.socket, client.Options{})
		if err != nil {
			return nil, nil, err
		}
		begun, err := c.Begin(ctx, protocol.BeginParams{
			Intent: "benchmark", TargetFile: filepath.Join(root, fmt.Sprintf("s%d-%d.txt", n, i)), Operation: protocol.OpOverwrite,
		})
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		seq := uint64(0)
		op := func() error {
			seq++
			_, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: seq, Chunk: chunk})
			return err
		}
		cleanup := func() {
			c.Abort(ctx, begun.SessionID)
			c.Close()
		}
		return op, cleanup, nil
	})
	if err != nil {
		return r, err
	}
	after := sampleProc(d.pid)
	r.CPUus = cpuPerOp(before, after, r.Ops)
	r.RSSMiB = float64(after.rssKiB) / 1024
	if r.Ops > 0 {
		r.ClientCPUus = float64(clientCPU) / float64(time.Microsecond) / float64(r.Ops)
		r.ClientAllocs = float64(clientMall) / float64(r.Ops)
	}
	return r, nil
}

// measure runs op from writers goroutines for cfg.duration and summarizes
// throughput and latency. started, if set, runs once every writer is set
// up, just before the clock starts, and what it returns once the last op
// returned, before the writers are cleaned up.
func measure(name string, writers int, cfg config, started func() (stopped func()), setup func(i int) (op func() error, cleanup func(), err error)) (result, error) {
	ops := make([]func() error, writers)
	for i := range writers {
		op, cleanup, err := setup(i)
		if err != nil {
			return result{}, fmt.Errorf("%s: %w", name, err)
		}
		defer cleanup()
		ops[i] = op
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
	)
	stopped := func() {}
	if started != nil {
		stopped = started()
	}
	start := time.Now()
	deadline := start.Add(cfg.duration)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := ops[i](); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopped()
	if firstErr != nil {
		return result{}, fmt.Errorf("%s: %w", name, firstErr)
	}
	slices.Sort(latencies)
	r := result{Name: name, Writers: writers, Ops: len(latencies)}
	r.OpsPerSec = float64(r.Ops) / elapsed.Seconds()
	r.MBPerSec = r.OpsPerSec * float64(cfg.chunk) / 1e6
	r.P50 = percentile(latencies, 0.50)
	r.P99 = percentile(latencies, 0.99)
	return r, nil
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(float64(len(sorted))*p), len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}

// daemonProc is a running oriond: its socket, its process (for /proc) and
// the allowed root its files go under.
type daemonProc struct {
	socket string
	pid    int
	root   string
	stop   func()
}

// startDaemon runs the oriond under test with its store in cfg.dir, so it
// measures the same disk as the baselines. name keeps the state of two
// daemons of one run apart; wrap, if set, is a command line the daemon
// runs under (strace), and the daemon's own pid then comes from
// daemon.status.
func startDaemon(ctx context.Context, cfg config, name string, wrap []string) (*daemonProc, error) {
	root := filepath.Join(cfg.dir, "root-"+name)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	// Socket paths are short-limited; cfg.dir may be long.
	sockDir, err := paths.SocketTempDir("ob", "oriond.sock")
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(sockDir, "oriond.sock")
	args := append([]string{cfg.oriond, "run", "--socket", socket, "--state-dir", filepath.Join(cfg.dir, "state-"+name),
		"--allow-root", root, "--max-session-bytes", strconv.Itoa(1 << 30), "--log-level", "warn"}, cfg.extra...)
	args = append(slices.Clone(wrap), args...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("starting %s: %w (build it with `go build -o bin/ ./daemon/cmd/oriond` and pass --oriond)", args[0], err)
	}
	d := &daemonProc{socket: socket, pid: cmd.Process.Pid, root: root}
	d.stop = func() {
		// The daemon itself is told to stop: strace, given SIGINT,
		// would detach and leave it running.
		if p, err := os.FindProcess(d.pid); err == nil {
			p.Signal(os.Interrupt)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(sockDir)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := client.Dial(ctx, socket, client.Options{})
		if err != nil {
			continue
		}
		if len(wrap) > 0 {
			st, err := c.Status(ctx)
			if err != nil {
				c.Close()
				d.stop()
				return nil, err
			}
			d.pid = st.PID
		}
		c.Close()
		return d, nil
	}
	d.stop()
	return nil, fmt.Errorf("oriond did not open %s", socket)
}

// report prints the table and the ratios the targets are stated in.
func report(out io.Writer, cfg config, results []result) {
	fmt.Fprintf(out, "disk: %s, chunk %d bytes, %s per case\n\n", cfg.dir, cfg.chunk, cfg.duration)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tchunks/s\tMB/s\tp50 ms\tp99 ms\tdaemon CPU µs/op\tdaemon RSS MiB\tclient CPU µs/op\tclient allocs/op\t")
	byName := map[string]result{}
	for _, r := range results {
		cpu, rss, ccpu, callocs := "", "", "", ""
		if r.CPUus > 0 {
			cpu, rss = fmt.Sprintf("%.0f", r.CPUus), fmt.Sprintf("%.1f", r.RSSMiB)
		}
		if r.ClientCPUus > 0 {
			ccpu, callocs = fmt.Sprintf("%.0f", r.ClientCPUus), fmt.Sprintf("%.1f", r.ClientAllocs)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Name, r.OpsPerSec, r.MBPerSec, r.P50, r.P99, cpu, rss, ccpu, callocs)
		byName[r.Name] = r
	}
	tw.Flush()
	fmt.Fprintln(out)
	base := func(n int) (result, bool) {
		r, ok := byName[fmt.Sprintf("baseline append+fdatasync, %d writer(s)", n)]
		return r, ok
	}
	sess := func(n int) (result, bool) {
		r, ok := byName[fmt.Sprintf("oriond session.append, %d session(s)", n)]
		return r, ok
	}
	ratio := func(s, b int, target float64) {
		sr, ok1 := sess(s)
		br, ok2 := base(b)
		if !ok1 || !ok2 || br.OpsPerSec == 0 {
			return
		}
		got := sr.OpsPerSec / br.OpsPerSec
		if target == 0 {
			fmt.Fprintf(out, "%2d session(s) / %d-writer baseline: %.2fx\n", s, b, got)
			return
		}
		verdict := "meets"
		if got < target {
			verdict = "MISSES"
		}
		fmt.Fprintf(out, "%2d session(s) / %d-writer baseline: %.2fx (target >= %.2fx: %s)\n", s, b, got, target, verdict)
	}
	ratio(1, 1, 0.45)
	ratio(8, 8, 0)
	ratio(64, 8, 1.0)
}
