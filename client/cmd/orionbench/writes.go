package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// writeKind is how a --write-rounds case writes its files through oriond.
type writeKind int

const (
	// writeCreate is session.write of a new file.
	writeCreate writeKind = iota
	// writeOverwrite is session.write over a file that exists: the daemon
	// reads the old content and keeps it as a backup for undo, and the
	// by-hand side renames over an existing file too.
	writeOverwrite
	// writeStreamed is a new file written in three requests (begin, one
	// append, finalize), as an agent's backend streams one.
	writeStreamed
)

// writeCase is one --write-rounds comparison.
type writeCase struct {
	kind writeKind
	size int
}

// writeCases are the --write-rounds comparisons in the order they run.
// The creates come first and keep their names: scripts read those rows.
var writeCases = []writeCase{
	{writeCreate, 1 << 10}, {writeCreate, 64 << 10},
	{writeOverwrite, 1 << 10}, {writeOverwrite, 64 << 10},
	{writeStreamed, 64 << 10},
}

func (w writeCase) name() string {
	switch w.kind {
	case writeOverwrite:
		return "session.write " + sizeName(w.size) + " overwrite"
	case writeStreamed:
		return "streamed " + sizeName(w.size) + " (begin, append, finalize)"
	}
	return "session.write " + sizeName(w.size)
}

// file is the name of the i-th file of round r, the same on both sides.
// An overwrite's rounds all write the same files, which seed made before
// the first: each timed write then replaces a file that exists.
func (w writeCase) file(r, i int) string {
	switch w.kind {
	case writeOverwrite:
		return fmt.Sprintf("overwrite-%d-%d.txt", w.size, i)
	case writeStreamed:
		return fmt.Sprintf("streamed-%d-%d-%d.txt", w.size, r, i)
	}
	return fmt.Sprintf("write-%d-%d-%d.txt", w.size, r, i)
}

// contents are what the rounds write: an overwrite's round writes the
// variant the file does not hold (seed wrote the last), so no write
// leaves a file as it found it.
func (w writeCase) contents() [2]string {
	a := chunkOf(w.size)
	b := chunkOf(w.size)
	b[0] = 'B'
	return [2]string{string(a), string(b)}
}

// seed makes the files an overwrite case's rounds replace, in each of
// dirs, durably and untimed, holding old; other cases need none.
func (w writeCase) seed(n int, old string, dirs ...string) error {
	if w.kind != writeOverwrite {
		return nil
	}
	for _, dir := range dirs {
		for i := range n {
			if err := durableWrite(dir, w.file(0, i), old); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRoundsCase compares a whole file written through oriond, as w says,
// with the same file written durably by hand: a temp file written and
// fsynced, renamed over the target, the directory fsynced. That is what
// the daemon does after journaling the content, so the ratio says what its
// journal record, backup (for an overwrite) and request path cost on top
// of the file itself.
func writeRoundsCase(ctx context.Context, cfg config, d *daemonProc, w writeCase) (sideBySide, error) {
	res := sideBySide{Name: w.name(), Unit: "files/s",
		OtherName: "temp + fsync + rename + directory fsync, by hand"}
	if w.kind == writeOverwrite {
		res.OtherName = "temp + fsync + rename over the file + directory fsync, by hand"
	}
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return res, err
	}
	defer c.Close()
	content := w.contents()
	handDir := filepath.Join(cfg.dir, "by-hand")
	if err := os.MkdirAll(handDir, 0o700); err != nil {
		return res, err
	}
	n := cfg.wholeOps
	if err := w.seed(n, content[1], d.root, handDir); err != nil {
		return res, fmt.Errorf("%s: making the files to overwrite: %w", res.Name, err)
	}
	// The peak printed is this case's: VmHWM otherwise holds the highest
	// RSS of every case run before on the same daemon (the 64-session
	// appends').
	resetPeak(d.pid)
	rate := func(op func(i int) error) (float64, error) {
		start := time.Now()
		for i := range n {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		return float64(n) / time.Since(start).Seconds(), nil
	}
	op := protocol.OpCreate
	if w.kind == writeOverwrite {
		op = protocol.OpOverwrite
	}
	o, b, ratio, cpu, err := interleave(cfg.rounds, d, func(r int) (float64, error) {
		return rate(func(i int) error {
			target := filepath.Join(d.root, w.file(r, i))
			if w.kind == writeStreamed {
				return wholeFile(ctx, c, target, content[r%2])
			}
			_, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "benchmark",
				Operation: op, TargetFile: target},
				Content: content[r%2]})
			return err
		})
	}, func(r int) (float64, error) {
		return rate(func(i int) error {
			return durableWrite(handDir, w.file(r, i), content[r%2])
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

// durableWrite replaces dir/name with content so that a crash leaves the
// old file or the new one: the floor of any durable whole-file write.
func durableWrite(dir, name, content string) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	df, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer df.Close()
	return df.Sync()
}
