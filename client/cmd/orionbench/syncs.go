package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"text/tabwriter"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// syncCall matches the line strace writes when a traced call starts (a
// call another thread interrupts shows again as "<... fdatasync resumed>",
// which this does not match, so each call counts once), with the path of
// its file (strace -y). A sync the daemon asks of the kernel without
// waiting (Linux AIO: io_submit of IOCB_CMD_FSYNC or IOCB_CMD_FDSYNC, one
// per call) is a sync as much: it counts as an fsync or an fdatasync.
var syncCall = regexp.MustCompile(`\b(?:(fsync|fdatasync)\(|io_submit\([^,]*, 1, \[\{[^}]*aio_lio_opcode=IOCB_CMD_(FSYNC|FDSYNC), aio_fildes=)\d+(?:<([^>]*)>)?`)

// preparing is the name of a content-log segment being filled with zeros
// ahead of need (internal/contentlog): its syncs, 64 per 64 MiB segment, run
// in the background on no append's path, and in a count of a few appends
// would swamp theirs, so they are counted apart.
const preparing = "spare.tmp"

// syncLog is the output of strace following the daemon: only fsync,
// fdatasync and io_submit are traced, and with --seccomp-bpf only they stop the daemon,
// so the rest of its work runs at full speed. It is a separate daemon from
// the timed one all the same: the timed figures carry no tracing cost.
type syncLog struct{ path string }

// counts returns how many fsync and fdatasync calls the log holds so far,
// leaving out those of a segment being prepared.
func (l syncLog) counts() (fsync, fdatasync int, err error) {
	fsync, fdatasync, _, err = l.countsAll()
	return fsync, fdatasync, err
}

// countsAll is counts, with the syncs of segments being prepared.
func (l syncLog) countsAll() (fsync, fdatasync, prep int, err error) {
	b, err := os.ReadFile(l.path)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, m := range syncCall.FindAllSubmatch(b, -1) {
		if filepath.Base(string(m[3])) == preparing {
			prep++
			continue
		}
		if call := string(m[1]) + string(m[2]); call == "fsync" || call == "FSYNC" {
			fsync++
		} else {
			fdatasync++
		}
	}
	return fsync, fdatasync, prep, nil
}

// settled waits until strace has written every call that returned before
// now: it writes a line as the call returns, so two equal readings 50 ms
// apart mean the log caught up.
func (l syncLog) settled() (fsync, fdatasync int, err error) {
	pf, pd, err := l.counts()
	if err != nil {
		return 0, 0, err
	}
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		f, d, err := l.counts()
		if err != nil {
			return 0, 0, err
		}
		if f == pf && d == pd {
			return f, d, nil
		}
		pf, pd = f, d
	}
	return pf, pd, nil
}

// syncRow is the syncs one operation costs, averaged over its repetitions.
type syncRow struct {
	Op        string  `json:"op"`
	Fdatasync float64 `json:"fdatasync_per_op"`
	Fsync     float64 `json:"fsync_per_op"`
	// Total marks the row of the segment preparation's syncs: counts over
	// the whole run, in no operation's row.
	Total bool `json:"total,omitempty"`
}

// deferDelay is a little over the daemon's store's default defer delay
// (internal/store), after which a completion that rode no commit commits
// by itself.
const deferDelay = 1100 * time.Millisecond

// countSyncs runs each operation a few times against a daemon under strace
// and returns the syncs per operation. Without strace it says why it
// counted nothing.
func countSyncs(ctx context.Context, cfg config, mcp *mcpBench) ([]syncRow, string, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, "syncs not counted: strace is not installed", nil
	}
	log := syncLog{path: filepath.Join(cfg.dir, "strace.out")}
	d, err := startDaemon(ctx, cfg, "strace", []string{strace, "-f", "--seccomp-bpf", "-qq", "-e", "signal=none",
		"-y", "-e", "trace=fsync,fdatasync,io_submit", "-o", log.path})
	if err != nil {
		return nil, fmt.Sprintf("syncs not counted: the daemon did not start under strace (%v)", err), nil
	}
	defer d.stop()
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return nil, "", err
	}
	defer c.Close()

	var rows []syncRow
	// measure runs op n times and adds its row.
	measure := func(name string, n int, op func(i int) error) error {
		// The last completion of the operation before rides no later
		// commit: it commits by itself after the store's defer delay
		// (1 s). Waiting it out keeps it off this operation's count; it
		// is one commit per burst of writes, not per write.
		time.Sleep(deferDelay)
		f0, d0, err := log.settled()
		if err != nil {
			return err
		}
		for i := range n {
			if err := op(i); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		f1, d1, err := log.settled()
		if err != nil {
			return err
		}
		rows = append(rows, syncRow{Op: name, Fdatasync: float64(d1-d0) / float64(n), Fsync: float64(f1-f0) / float64(n)})
		return nil
	}
	for _, size := range []int{1 << 10, 64 << 10} {
		chunk := string(chunkOf(size))
		begun, err := c.Begin(ctx, protocol.BeginParams{Intent: "benchmark", Operation: protocol.OpOverwrite,
			TargetFile: filepath.Join(d.root, fmt.Sprintf("append-%d.txt", size))})
		if err != nil {
			return nil, "", err
		}
		err = measure(fmt.Sprintf("session.append %s", sizeName(size)), 20, func(i int) error {
			_, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: chunk})
			return err
		})
		if err != nil {
			return nil, "", err
		}
		c.Abort(ctx, begun.SessionID)
	}
	// Streams of appends, counting what they cost in all: the trailing
	// commit of the last appends' bookkeeping (after the defer delay) is
	// part of the count, spread over the stream.
	stream := func(name string, sessions, each int) error {
		chunk := string(chunkOf(4 << 10))
		clients := make([]*client.Client, sessions)
		ids := make([]string, sessions)
		for i := range sessions {
			cc, err := client.Dial(ctx, d.socket, client.Options{})
			if err != nil {
				return err
			}
			defer cc.Close()
			b, err := cc.Begin(ctx, protocol.BeginParams{Intent: "benchmark", Operation: protocol.OpOverwrite,
				TargetFile: filepath.Join(d.root, fmt.Sprintf("stream-%d-%d.txt", sessions, i))})
			if err != nil {
				return err
			}
			clients[i], ids[i] = cc, b.SessionID
		}
		time.Sleep(deferDelay)
		f0, d0, err := log.settled()
		if err != nil {
			return err
		}
		errs := make(chan error, sessions)
		for i := range sessions {
			go func() {
				for seq := range each {
					if _, err := clients[i].Append(ctx, protocol.AppendParams{SessionID: ids[i], Seq: uint64(seq + 1), Chunk: chunk}); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range sessions {
			if err := <-errs; err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		time.Sleep(deferDelay)
		f1, d1, err := log.settled()
		if err != nil {
			return err
		}
		n := float64(sessions * each)
		rows = append(rows, syncRow{Op: name, Fdatasync: float64(d1-d0) / n, Fsync: float64(f1-f0) / n})
		for i := range sessions {
			clients[i].Abort(ctx, ids[i])
		}
		return nil
	}
	if err := stream("session.append 4 KiB, 1 session, 1000 appends", 1, 1000); err != nil {
		return nil, "", err
	}
	if err := stream("session.append 4 KiB, 64 sessions, 64x50 appends", 64, 50); err != nil {
		return nil, "", err
	}
	// A whole file, step by step and then as one operation.
	const files = 10
	content := string(chunkOf(64 << 10))
	ids := make([]string, files)
	steps := []struct {
		name string
		op   func(i int) error
	}{
		{"session.begin", func(i int) error {
			b, err := c.Begin(ctx, protocol.BeginParams{Intent: "benchmark", Operation: protocol.OpCreate,
				TargetFile: filepath.Join(d.root, fmt.Sprintf("steps-%d.txt", i))})
			ids[i] = b.SessionID
			return err
		}},
		{"session.append 64 KiB (first)", func(i int) error {
			_, err := c.Append(ctx, protocol.AppendParams{SessionID: ids[i], Seq: 1, Chunk: content})
			return err
		}},
		{"session.finalize 64 KiB", func(i int) error {
			_, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: ids[i], EndOfInput: true})
			return err
		}},
		{"whole 64 KiB file (begin+append+finalize)", func(i int) error {
			return wholeFile(ctx, c, filepath.Join(d.root, fmt.Sprintf("whole-%d.txt", i)), content)
		}},
	}
	steps = append(steps, struct {
		name string
		op   func(i int) error
	}{"session.write 64 KiB (one request)", func(i int) error {
		_, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "benchmark", Operation: protocol.OpCreate,
			TargetFile: filepath.Join(d.root, fmt.Sprintf("one-%d.txt", i))}, Content: content})
		return err
	}})
	if mcp != nil {
		if _, err := exec.LookPath(cfg.orionctl); err == nil {
			root := filepath.Join(d.root, "mcp-syncs")
			if err := os.MkdirAll(root, 0o700); err != nil {
				return nil, "", err
			}
			steps = append(steps, struct {
				name string
				op   func(i int) error
			}{"MCP write_file 64 KiB (orionctl mcp)", func(i int) error {
				if i > 0 {
					return nil // the first op writes all the files, in one client run
				}
				_, _, err := mcp.run(ctx, "orion", root, files, 64<<10, "syncs", 0, cfg.orionctl, "--socket", d.socket, "mcp")
				return err
			}})
		}
	}
	for _, s := range steps {
		if err := measure(s.name, files, s.op); err != nil {
			return nil, "", err
		}
	}
	_, _, prep, err := log.countsAll()
	if err != nil {
		return nil, "", err
	}
	rows = append(rows, syncRow{Op: "segment preparation", Fdatasync: float64(prep), Total: true})
	return rows, "", nil
}

func sizeName(n int) string {
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func reportSyncs(out io.Writer, rows []syncRow, why string) {
	if why != "" {
		fmt.Fprintln(out, why)
		return
	}
	fmt.Fprintln(out, "syncs per operation (a second daemon under strace -f -e trace=fsync,fdatasync,io_submit; not timed; a burst of finalizes or")
	fmt.Fprintln(out, "whole-file writes adds one commit, of its last completion, 1 s after it, counted in none of these rows):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tfdatasync\tfsync\tall\t")
	prep := -1.0
	for _, r := range rows {
		if r.Total {
			prep = r.Fdatasync
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t\n", r.Op, r.Fdatasync, r.Fsync, r.Fdatasync+r.Fsync)
	}
	tw.Flush()
	if prep >= 0 {
		fmt.Fprintf(out, "not in these rows: %.0f syncs of content-log segments filled with zeros ahead of need, in the background\n", prep)
		fmt.Fprintln(out, "(64 per 64 MiB segment, a segment's worth of appends apart; a store that has written under 1 MiB makes none)")
	}
}
