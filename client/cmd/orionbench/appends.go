package main

import (
	"context"
	"fmt"
)

// appendCase is one comparison of --append-rounds: sessions appending chunks
// of size next to writers appending the same chunks to files of their own
// with write and fdatasync.
type appendCase struct {
	size, sessions, writers int
}

var appendCases = []appendCase{
	{4 << 10, 1, 1},
	{4 << 10, 64, 8},
	{64 << 10, 1, 1},
}

// appendRounds measures each appendCase in cfg.rounds interleaved rounds of
// cfg.duration a side, and reports the daemon's CPU per append with it.
func appendRounds(ctx context.Context, cfg config, d *daemonProc) ([]sideBySide, error) {
	var out []sideBySide
	for _, ac := range appendCases {
		c := cfg
		c.chunk = ac.size
		res := sideBySide{
			Name:      fmt.Sprintf("%s append, %d session(s)", sizeName(ac.size), ac.sessions),
			Unit:      "appends/s",
			OtherName: fmt.Sprintf("write+fdatasync, %d file(s) in parallel", ac.writers),
		}
		var cpuMs, clientMs, clientAllocs []float64
		o, b, ratio, _, err := interleave(cfg.rounds, d, func(int) (float64, error) {
			r, err := sessionsCase(ctx, c, d, ac.sessions)
			cpuMs = append(cpuMs, r.CPUus/1000)
			clientMs = append(clientMs, r.ClientCPUus/1000)
			clientAllocs = append(clientAllocs, r.ClientAllocs)
			return r.OpsPerSec, err
		}, func(int) (float64, error) {
			r, err := baseline(c, ac.writers)
			return r.OpsPerSec, err
		})
		if err != nil {
			return nil, err
		}
		res.Oriond, res.Other, res.Ratio, res.CPUms = spreadOf(o), spreadOf(b), spreadOf(ratio), spreadOf(cpuMs)
		cm, ca := spreadOf(clientMs), spreadOf(clientAllocs)
		res.ClientCPUms, res.ClientAllocs = &cm, &ca
		res.PeakRSSMiB = float64(sampleProc(d.pid).rssKiB) / 1024
		out = append(out, res)
	}
	return out, nil
}
