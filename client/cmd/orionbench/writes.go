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

// writeRoundsCase compares session.write of a whole file of size bytes with
// the same file written durably by hand: a temp file written and fsynced,
// renamed over the target, the directory fsynced. That is what the daemon
// does after journaling the content, so the ratio says what its journal
// record and request path cost on top of the file itself.
func writeRoundsCase(ctx context.Context, cfg config, d *daemonProc, size int) (sideBySide, error) {
	res := sideBySide{Name: "session.write " + sizeName(size), Unit: "files/s",
		OtherName: "temp + fsync + rename + directory fsync, by hand"}
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return res, err
	}
	defer c.Close()
	content := string(chunkOf(size))
	handDir := filepath.Join(cfg.dir, "by-hand")
	if err := os.MkdirAll(handDir, 0o700); err != nil {
		return res, err
	}
	// The peak printed is this case's: VmHWM otherwise holds the highest
	// RSS of every case run before on the same daemon (the 64-session
	// appends').
	resetPeak(d.pid)
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
			_, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "benchmark",
				Operation: protocol.OpCreate, TargetFile: filepath.Join(d.root, fmt.Sprintf("write-%d-%d-%d.txt", size, r, i))},
				Content: content})
			return err
		})
	}, func(r int) (float64, error) {
		return rate(func(i int) error {
			return durableWrite(handDir, fmt.Sprintf("write-%d-%d-%d.txt", size, r, i), content)
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
