// Command validatecorpus measures oriond's content checks on real files:
// it gathers files of the checked types that this team did not write (the
// Go distribution, the Go module cache, installed npm packages, system data
// files, Python's standard library), truncates each at random byte offsets
// and prints, per file type, the share of truncated copies caught and the
// share of untouched originals flagged.
//
// Usage:
//
//	go run ./internal/cmd/validatecorpus [-seed N] [-cuts N] [-per-type N]
//	    [-max-size BYTES] [-npm-dir DIR]... [-dir [NAME=]DIR]... [-no-default]
//	    [-v [-keep N]] [-json] [-fail-on-miss]
//
// The corpus is found at run time, never committed. The exit status is 2
// on bad usage; with -fail-on-miss it is 1 when a class of file types
// misses its target, otherwise 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/orion-agent/orion/internal/validate/corpus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.Is(err, errTargetMissed):
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "validatecorpus:", err)
		os.Exit(2)
	}
}

// errTargetMissed is returned when a class misses its target.
var errTargetMissed = errors.New("a target was missed")

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validatecorpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed for sampling files and truncation points")
	cuts := fs.Int("cuts", 5, "random truncations per file")
	perType := fs.Int("per-type", 400, "most files sampled per file type")
	maxSize := fs.Int64("max-size", 256<<10, "skip files larger than this many bytes")
	workers := fs.Int("workers", 0, "files checked at once (0: GOMAXPROCS)")
	noDefault := fs.Bool("no-default", false, "do not gather from the default sources (GOROOT, GOMODCACHE, npm root -g, /usr/share, Python's stdlib)")
	verbose := fs.Bool("v", false, "list false positives, missed truncations and placeholder hits")
	keep := fs.Int("keep", 25, "with -v, how many false positives and misses to list per type")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	failOnMiss := fs.Bool("fail-on-miss", false, "exit with status 1 when a class misses its target")
	var npmDirs, dirs listFlag
	fs.Var(&npmDirs, "npm-dir", "a node_modules directory to gather from (repeatable)")
	fs.Var(&dirs, "dir", "another directory to gather from, as DIR or NAME=DIR (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "validatecorpus: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return flag.ErrHelp
	}

	var sources []corpus.Source
	if !*noDefault {
		sources = defaultSources(ctx)
	}
	for _, d := range npmDirs {
		sources = append(sources, corpus.Source{Name: "npm-dir", Dir: d})
	}
	for _, d := range dirs {
		name, dir, ok := strings.Cut(d, "=")
		if !ok {
			name, dir = filepath.Base(d), d
		}
		sources = append(sources, corpus.Source{Name: name, Dir: dir})
	}
	if len(sources) == 0 {
		return errors.New("no source directory: pass -dir or -npm-dir, or drop -no-default")
	}

	start := time.Now()
	files, err := corpus.Gather(ctx, sources, corpus.GatherOptions{MaxBytes: *maxSize, PerType: *perType, Seed: *seed})
	if err != nil {
		return fmt.Errorf("gathering files: %w", err)
	}
	perSource := make(map[string]int)
	for _, f := range files {
		perSource[f.Source]++
	}
	for _, s := range sources {
		fmt.Fprintf(stderr, "source %-10s %5d files  %s\n", s.Name, perSource[s.Name], s.Dir)
		perSource[s.Name] = 0 // print each name's count once
	}
	kept := 0
	if *verbose {
		kept = *keep
	}
	rows := corpus.Evaluate(ctx, files, corpus.EvalOptions{Cuts: *cuts, Seed: *seed, Workers: *workers, Keep: kept})
	if err := ctx.Err(); err != nil {
		return err
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "seed %d, %d cuts per file, %d files, %s\n\n", *seed, *cuts, len(files), time.Since(start).Round(100*time.Millisecond))
		if err := corpus.WriteTable(stdout, rows); err != nil {
			return err
		}
		if *verbose {
			fmt.Fprintln(stdout)
			corpus.WriteDetails(stdout, rows)
		}
	}
	if !*failOnMiss {
		return nil
	}
	for _, t := range corpus.Totals(rows) {
		target, ok := corpus.Targets[t.Class]
		if ok && (t.FPRate() > target.MaxFP || target.MinTP > 0 && t.TPRate() <= target.MinTP) {
			return errTargetMissed
		}
	}
	return nil
}

// defaultSources finds the directories this machine already has.
func defaultSources(ctx context.Context) []corpus.Source {
	var out []corpus.Source
	add := func(name, dir string) {
		if dir == "" {
			return
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			out = append(out, corpus.Source{Name: name, Dir: dir})
		}
	}
	add("goroot", output(ctx, "go", "env", "GOROOT"))
	add("gomodcache", output(ctx, "go", "env", "GOMODCACHE"))
	add("npm", output(ctx, "npm", "root", "-g"))
	add("usr-share", "/usr/share")
	add("python", output(ctx, "python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"))
	return out
}

// output runs a command and returns its trimmed standard output, or ""
// if it fails: a missing tool only means one source fewer.
func output(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
