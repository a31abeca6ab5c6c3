package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// wholeFile writes one file as an agent's backend does when it has the
// whole content: begin, one append holding all of it, finalize.
func wholeFile(ctx context.Context, c *client.Client, path, content string) error {
	b, err := c.Begin(ctx, protocol.BeginParams{Intent: "benchmark", TargetFile: path, Operation: protocol.OpCreate})
	if err != nil {
		return err
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: content}); err != nil {
		return err
	}
	_, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true})
	return err
}

// writeLarge is `orionctl write` of the file at src: begin, the content
// streamed in chunks as large as the daemon takes (at most 1 MiB, as
// `orionctl write` sends them), each journaled before it is
// acknowledged, and finalize, which makes the target durable. It returns
// how long the finalize took.
func writeLarge(ctx context.Context, c *client.Client, src, target string) (time.Duration, error) {
	id, err := streamLarge(ctx, c, src, target)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: id, EndOfInput: true})
	return time.Since(start), err
}

// streamLarge is writeLarge up to the finalize: it returns the session,
// all of src journaled.
func streamLarge(ctx context.Context, c *client.Client, src, target string) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := c.Begin(ctx, protocol.BeginParams{Intent: "benchmark", TargetFile: target, Operation: protocol.OpCreate})
	if err != nil {
		return "", err
	}
	_, _, err = c.Stream(ctx, b.SessionID, f, client.StreamOptions{ChunkSize: c.WholeFileChunkSize(ctx)})
	return b.SessionID, err
}

// spread is a median with the smallest and largest value of the rounds it
// summarizes: on a shared machine the range says as much as the median.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

func (s spread) String() string { return fmt.Sprintf("%.2f [%.2f-%.2f]", s.Median, s.Min, s.Max) }

// durationSpread is ms, a spread of milliseconds, in µs when under one: a
// client's CPU per append is tens of µs, which two decimals of a
// millisecond do not tell apart.
func durationSpread(ms spread) string {
	if ms.Median >= 1 {
		return ms.String() + " ms"
	}
	return fmt.Sprintf("%.1f [%.1f-%.1f] µs", ms.Median*1000, ms.Min*1000, ms.Max*1000)
}

// sideBySide is one comparison of oriond with a baseline or peer, in
// interleaved rounds.
type sideBySide struct {
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Oriond spread `json:"oriond"`
	Other  spread `json:"other"`
	// OriondName says what Oriond measured, when not oriond's own client;
	// OtherName what Other measured.
	OriondName string `json:"oriond_name,omitempty"`
	OtherName  string `json:"other_name"`
	// Ratio is oriond / other per round (higher is better for oriond).
	Ratio spread `json:"ratio"`
	// CPUms is the daemon's CPU time per operation, in milliseconds.
	CPUms spread `json:"daemon_cpu_ms_per_op"`
	// ClientCPUms is orionbench's own CPU time per operation, in
	// milliseconds, where the client runs in it (--file-mb,
	// --append-rounds), and ClientAllocs its heap allocations per
	// operation (--append-rounds).
	ClientCPUms  *spread `json:"client_cpu_ms_per_op,omitempty"`
	ClientAllocs *spread `json:"client_allocs_per_op,omitempty"`
	// FinalizeMs is how long the finalize of each operation took, in
	// milliseconds, where it is a request of its own (--file-mb).
	FinalizeMs *spread `json:"finalize_ms_per_op,omitempty"`
	// ServerCPUms is the CPU time per operation, in milliseconds, of the
	// server in front of the daemon (orionctl mcp, for --mcp), and
	// OtherCPUms the other side's process's (the filesystem server).
	ServerCPUms *spread `json:"server_cpu_ms_per_op,omitempty"`
	OtherCPUms  *spread `json:"other_cpu_ms_per_op,omitempty"`
	// PeakRSSMiB is the daemon's peak resident memory after the case.
	PeakRSSMiB float64 `json:"daemon_peak_rss_mib"`
	Skip       string  `json:"skip,omitempty"`
}

// interleave runs rounds of oriond's op and the other side's, alternating
// which goes first so that neither always runs on the warmer (or the more
// loaded) half of a round. Each side returns its rate for the round.
func interleave(rounds int, d *daemonProc, oriond, other func(r int) (float64, error)) (o, b, ratio, cpu []float64, err error) {
	for r := range rounds {
		var ov, bv float64
		runO := func() error {
			before := sampleProc(d.pid)
			v, err := oriond(r)
			ov = v
			cpu = append(cpu, float64(sampleProc(d.pid).cpu-before.cpu)/float64(time.Millisecond))
			return err
		}
		runB := func() error {
			v, err := other(r)
			bv = v
			return err
		}
		first, second := runO, runB
		if r%2 == 1 {
			first, second = runB, runO
		}
		if err = first(); err != nil {
			return
		}
		if err = second(); err != nil {
			return
		}
		o, b = append(o, ov), append(b, bv)
		if bv > 0 {
			ratio = append(ratio, ov/bv)
		}
	}
	return
}

// wholeFileCase compares a whole 64 KiB file written through oriond with
// the MCP filesystem server's write_file of the same content, per file.
func wholeFileCase(ctx context.Context, cfg config, d *daemonProc) (sideBySide, error) {
	res := sideBySide{Name: "whole 64 KiB file", Unit: "files/s", OtherName: "MCP " + mcpPackage + " write_file (no fsync)"}
	server, skip := installMCP(ctx, cfg.dir)
	if skip != "" {
		res.Skip = skip
		return res, nil
	}
	res.OtherName = fmt.Sprintf("MCP %s %s write_file (no fsync)", mcpPackage, server.version)
	peerDir := filepath.Join(cfg.dir, "mcp-root")
	if err := os.MkdirAll(peerDir, 0o700); err != nil {
		return res, err
	}
	peer, err := startMCP(ctx, server, peerDir)
	if err != nil {
		res.Skip = "MCP peer skipped: " + err.Error()
		return res, nil
	}
	defer peer.close()
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return res, err
	}
	defer c.Close()
	content := string(chunkOf(64 << 10))
	n := cfg.wholeOps
	rate := func(op func(i int) error) (float64, error) {
		start := time.Now()
		for i := range n {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		return float64(n) / time.Since(start).Seconds(), nil
	}
	o, b, ratio, cpu, err := interleave(cfg.rounds, d, func(r int) (float64, error) {
		return rate(func(i int) error {
			return wholeFile(ctx, c, filepath.Join(d.root, fmt.Sprintf("whole-%d-%d.txt", r, i)), content)
		})
	}, func(r int) (float64, error) {
		return rate(func(i int) error {
			return peer.writeFile(filepath.Join(peerDir, fmt.Sprintf("whole-%d-%d.txt", r, i)), content)
		})
	})
	if err != nil {
		return res, fmt.Errorf("%s: %w", res.Name, err)
	}
	for i := range cpu {
		cpu[i] /= float64(n)
	}
	res.Oriond, res.Other, res.Ratio, res.CPUms = spreadOf(o), spreadOf(b), spreadOf(ratio), spreadOf(cpu)
	res.PeakRSSMiB = float64(sampleProc(d.pid).peakKiB) / 1024
	return res, nil
}

// largeFileCase compares `orionctl write` of a file of cfg.fileMB MB with
// cp and an fsync of the copy (`sync FILE`, which syncs that file only, so
// other writers on the machine do not count against the baseline).
func largeFileCase(ctx context.Context, cfg config, d *daemonProc) (sideBySide, error) {
	res := sideBySide{Name: fmt.Sprintf("write a %d MB file", cfg.fileMB), Unit: "MB/s", OtherName: "cp + sync FILE"}
	size := int64(cfg.fileMB) * 1e6
	src := filepath.Join(cfg.dir, "large-src.txt")
	if err := writeText(src, size); err != nil {
		return res, err
	}
	defer os.Remove(src)
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return res, err
	}
	defer c.Close()
	mbps := func(start time.Time) float64 { return float64(size) / 1e6 / time.Since(start).Seconds() }
	var clientCPU, finalize []float64
	o, b, ratio, cpu, err := interleave(cfg.rounds, d, func(r int) (float64, error) {
		target := filepath.Join(d.root, fmt.Sprintf("large-%d.txt", r))
		before := selfCPU()
		start := time.Now()
		fin, err := writeLarge(ctx, c, src, target)
		if err != nil {
			return 0, err
		}
		v := mbps(start)
		finalize = append(finalize, float64(fin)/float64(time.Millisecond))
		clientCPU = append(clientCPU, float64(selfCPU()-before)/float64(time.Millisecond))
		return v, os.Remove(target)
	}, func(r int) (float64, error) {
		dst := filepath.Join(cfg.dir, fmt.Sprintf("large-cp-%d.txt", r))
		start := time.Now()
		if out, err := exec.CommandContext(ctx, "cp", src, dst).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("cp: %v: %s", err, out)
		}
		if out, err := exec.CommandContext(ctx, "sync", dst).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("sync %s: %v: %s", dst, err, out)
		}
		v := mbps(start)
		return v, os.Remove(dst)
	})
	if err != nil {
		return res, fmt.Errorf("%s: %w", res.Name, err)
	}
	res.Oriond, res.Other, res.Ratio, res.CPUms = spreadOf(o), spreadOf(b), spreadOf(ratio), spreadOf(cpu)
	cs, fs := spreadOf(clientCPU), spreadOf(finalize)
	res.ClientCPUms, res.FinalizeMs = &cs, &fs
	res.PeakRSSMiB = float64(sampleProc(d.pid).peakKiB) / 1024
	return res, nil
}

// selfCPU is the CPU time orionbench has used, user and system.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeText writes size bytes of numbered text lines to path.
func writeText(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := 0; n < size; i++ {
		line := fmt.Sprintf("line %09d: the quick brown fox jumps over the lazy dog\n", i)
		if rest := size - n; int64(len(line)) > rest {
			line = line[:rest-1] + "\n"
		}
		k, err := io.WriteString(w, line)
		if err != nil {
			f.Close()
			return err
		}
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func reportSideBySide(out io.Writer, r sideBySide) {
	if r.Skip != "" {
		fmt.Fprintf(out, "%s: %s\n", r.Name, r.Skip)
		return
	}
	fmt.Fprintf(out, "%s, medians [min-max] of interleaved rounds:\n", r.Name)
	name := "oriond"
	if r.OriondName != "" {
		name = r.OriondName
	}
	fmt.Fprintf(out, "  %s: %s %s, daemon CPU %s ms per op, daemon peak RSS %.1f MiB\n", name, r.Oriond, r.Unit, r.CPUms, r.PeakRSSMiB)
	if r.FinalizeMs != nil {
		fmt.Fprintf(out, "  the finalize's request alone: %s per op\n", durationSpread(*r.FinalizeMs))
	}
	if r.ClientCPUms != nil {
		fmt.Fprintf(out, "  client CPU (orionbench's Go client): %s per op\n", durationSpread(*r.ClientCPUms))
	}
	if r.ClientAllocs != nil {
		fmt.Fprintf(out, "  client allocations: %s per op\n", r.ClientAllocs)
	}

	if r.ServerCPUms != nil {
		fmt.Fprintf(out, "  %s's own CPU: %s ms per op\n", name, r.ServerCPUms)
	}
	fmt.Fprintf(out, "  %s: %s %s\n", r.OtherName, r.Other, r.Unit)
	if r.OtherCPUms != nil {
		fmt.Fprintf(out, "  its CPU: %s ms per op\n", r.OtherCPUms)
	}
	fmt.Fprintf(out, "  ratio oriond / other: %sx\n", r.Ratio)
}
