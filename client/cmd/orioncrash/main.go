// Command orioncrash is the long crash run: it kills oriond with SIGKILL at
// random moments (1,000 times by default) while clients stream, restarts it,
// resumes every session, runs turns and undoes them, and prints kills, sessions, acknowledged bytes and
// lost bytes. It exits non-zero if anything acknowledged was lost, a target
// was wrong or torn, an undo was left half-done, or a temp file was left behind.
//
//	go build -o bin/ ./daemon/cmd/oriond ./client/cmd/orioncrash
//	bin/orioncrash --oriond bin/oriond --kills 1000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/orion-agent/orion/client/internal/sibling"
	"github.com/orion-agent/orion/daemon/e2e/crash"
)

func main() {
	cfg := crash.Config{}
	var keep, asJSON bool
	flag.StringVar(&cfg.Oriond, "oriond", sibling.Binary("oriond"), "oriond binary to crash")
	flag.StringVar(&cfg.Dir, "dir", "", "directory for the state and the written files (default: a new temp dir)")
	flag.IntVar(&cfg.Kills, "kills", 1000, "how many times to SIGKILL the daemon")
	flag.IntVar(&cfg.Clients, "clients", 4, "concurrent streaming clients")
	flag.IntVar(&cfg.TurnWorkers, "turn-workers", 2, "concurrent workers running turns (writes, turn.end, turn.undo, turn.redo), each in a workspace of its own")
	flag.IntVar(&cfg.WholeWriters, "whole-writers", 2, "concurrent workers overwriting a file each with session.write (a whole file in one request) and undoing some of the writes")
	flag.DurationVar(&cfg.MaxPause, "max-pause", 300*time.Millisecond, "longest random pause between kills")
	flag.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	flag.BoolVar(&keep, "keep", false, "keep the directory afterwards")
	flag.BoolVar(&asJSON, "json", false, "print the report as JSON")
	flag.Parse()
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "orioncrash")
		if err != nil {
			fail(err)
		}
		cfg.Dir = dir
		if !keep {
			defer os.RemoveAll(dir)
		}
	}
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	rep, err := crash.Run(ctx, cfg)
	if err != nil {
		fail(err)
	}
	if asJSON {
		json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		fmt.Printf("seed %d, %s\n", cfg.Seed, time.Since(start).Round(time.Second))
		fmt.Printf("kills:             %d\n", rep.Kills)
		fmt.Printf("sessions finished: %d\n", rep.Sessions)
		fmt.Printf("sessions begun pipelined: %d\n", rep.Pipelined)
		fmt.Printf("chunks acked:      %d\n", rep.Chunks)
		fmt.Printf("bytes acked:       %d\n", rep.AckedBytes)
		fmt.Printf("bytes lost:        %d\n", rep.LostBytes)
		fmt.Printf("wrong targets:     %d\n", rep.Mismatched)
		fmt.Printf("temp files left:   %d\n", rep.LeftoverTemps)
		fmt.Printf("finalizes unrecorded: %d\n", rep.Unrecorded)
		fmt.Printf("targets edited after finalize: %d, edits overwritten: %d, sessions reopened in conflict: %d\n", rep.Edited, rep.Overwritten, rep.EditsKeptOpen)
		fmt.Printf("reconnects:        %d\n", rep.Reconnects)
		fmt.Printf("begun sessions lost before any content, begun again: %d\n", rep.BegunLost)
		fmt.Printf("transactions:      %d committed, %d found torn\n", rep.Transactions, rep.TornTxs)
		fmt.Printf("turns:             %d ended, %d undone, %d redone\n", rep.Turns, rep.Undos, rep.Redos)
		fmt.Printf("whole files:       %d written with session.write, %d of them undone and checked, %d found wrong after an undo\n", rep.WholeWrites, rep.WholeUndos, rep.WholeWrong)
		fmt.Printf("undos interrupted: %d by a kill, %d finished by the daemon at restart, %d found half-done, %d workspaces wrong after an acknowledged turn.end, undo or redo\n", rep.OpsInterrupted, rep.OpsRecovered, rep.HalfDone, rep.OpsWrong)
		for _, f := range rep.Failures {
			fmt.Println("FAIL:", f)
		}
	}
	if !rep.OK() {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "orioncrash:", err)
	os.Exit(1)
}
