package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// checkpointConfig sizes --checkpoints' workspace.
type checkpointConfig struct {
	files   int
	mb      int
	turns   int
	repeats int
}

// checkpointReport is what --checkpoints measured, each figure next to
// its baseline measured in the same run on the same tree.
type checkpointReport struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`

	// First is the first checkpoint of the workspace (every file read,
	// hashed, compressed, stored); GitAddCommit is `git add -A && git
	// commit -q` into a fresh repository of the same tree.
	FirstMS        float64 `json:"first_checkpoint_ms"`
	GitAddCommitMS float64 `json:"git_add_commit_ms"`

	// Scan is a checkpoint without the watcher's help (the first after a
	// restart: every file stat'ed against the stat cache), median of
	// Repeats; GitStatus `git status --porcelain` on the same tree with a
	// warm index.
	ScanMS      float64 `json:"scan_ms"`
	GitStatusMS float64 `json:"git_status_ms"`

	// Watched is a checkpoint with the watcher running after N files
	// changed, median of Repeats, by N.
	Watched map[int]float64 `json:"watched_checkpoint_ms"`

	// Storage after Turns turns each changing 10 files: the blob store
	// and the store's live data before and after, and the bytes the
	// turns changed (their new contents).
	Turns      int   `json:"turns"`
	BlobsFirst int64 `json:"blobs_after_first_bytes"`
	BlobsAfter int64 `json:"blobs_after_turns_bytes"`
	StoreFirst int64 `json:"store_after_first_bytes"`
	StoreAfter int64 `json:"store_after_turns_bytes"`
	// DiskFirst and DiskAfter are the disk the daemon's state directory
	// takes (allocated blocks, as du counts them) after the first
	// checkpoint and after the turns.
	DiskFirst      int64   `json:"disk_after_first_bytes"`
	DiskAfter      int64   `json:"disk_after_turns_bytes"`
	ChangedBytes   int64   `json:"changed_bytes"`
	UndoHundredMS  float64 `json:"undo_100_files_ms"`
	RSSWatchingMiB float64 `json:"daemon_rss_watching_mib"`
	RSSAnonMiB     float64 `json:"daemon_rss_anon_watching_mib"`
	WatchedDirs    int     `json:"watched_dirs"`
}

// textFile returns n bytes of source-like text, different per seed.
func textFile(rng *rand.Rand, n int) []byte {
	words := []string{"func", "return", "if", "err", "nil", "value", "index", "for", "range", "the", "checkpoint", "{", "}", "(", ")", ":=", "\n\t"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, ' ')
		if rng.IntN(8) == 0 {
			b = append(b, fmt.Sprintf("%d", rng.Int64())...)
		}
	}
	return b[:n]
}

func buildWorkspace(root string, cc checkpointConfig) (int64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	per := int64(cc.mb) << 20 / int64(cc.files)
	var total int64
	for i := range cc.files {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", i/1000), fmt.Sprintf("mod%02d", (i/100)%10))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return 0, err
			}
		}
		b := textFile(rng, int(per))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d.go", i)), b, 0o644); err != nil {
			return 0, err
		}
		total += int64(len(b))
	}
	return total, nil
}

func filePath(root string, i int) string {
	return filepath.Join(root, fmt.Sprintf("pkg%03d", i/1000), fmt.Sprintf("mod%02d", (i/100)%10), fmt.Sprintf("f%06d.go", i))
}

func timeIt(f func() error) (float64, error) {
	start := time.Now()
	err := f()
	return float64(time.Since(start).Microseconds()) / 1000, err
}

func medianMS(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=b@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

func checkpointCase(ctx context.Context, cfg config, cc checkpointConfig) (*checkpointReport, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("--checkpoints compares with git, which is not installed")
	}
	// The store's default cap (1 GiB) holds checkpoints of half of it;
	// the measured workspace is bigger.
	cfg.extra = append(slices.Clone(cfg.extra), "--store-max-bytes", "17179869184")
	d, err := startDaemon(ctx, cfg, "checkpoints", nil)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()
	ws := filepath.Join(d.root, "ws")
	rep := &checkpointReport{Files: cc.files, Turns: cc.turns, Watched: map[int]float64{}}
	if rep.Bytes, err = buildWorkspace(ws, cc); err != nil {
		return nil, err
	}
	// git first: it reads the tree once more, so both find it in the page
	// cache.
	if err := git(ws, "init", "-q"); err != nil {
		return nil, err
	}
	if rep.GitAddCommitMS, err = timeIt(func() error {
		if err := git(ws, "add", "-A"); err != nil {
			return err
		}
		return git(ws, "commit", "-q", "-m", "bench")
	}); err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, d.socket, client.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { c.Close() }()
	status := func() protocol.StatusResult {
		st, _ := c.Status(ctx)
		return st
	}
	if rep.FirstMS, err = timeIt(func() error {
		_, err := c.CheckpointCreate(ctx, protocol.CheckpointCreateParams{WorkspaceRoot: ws})
		return err
	}); err != nil {
		return nil, err
	}
	st := status()
	rep.BlobsFirst, rep.StoreFirst = st.Checkpoints.StoredBytes, st.Store.Bytes
	stateDir := filepath.Join(cfg.dir, "state-checkpoints")
	rep.DiskFirst = diskUsage(stateDir)

	// Scans: a restart makes the next checkpoint compare every file with
	// the stat cache.
	var scans, gits []float64
	for range cc.repeats {
		d.stop()
		c.Close()
		if d, err = startDaemon(ctx, cfg, "checkpoints", nil); err != nil {
			stopped = true
			return nil, err
		}
		if c, err = client.Dial(ctx, d.socket, client.Options{}); err != nil {
			return nil, err
		}
		ms, err := timeIt(func() error {
			_, err := c.CheckpointCreate(ctx, protocol.CheckpointCreateParams{WorkspaceRoot: ws})
			return err
		})
		if err != nil {
			return nil, err
		}
		scans = append(scans, ms)
		git(ws, "status", "--porcelain") // warm the index
		g, err := timeIt(func() error { return git(ws, "status", "--porcelain") })
		if err != nil {
			return nil, err
		}
		gits = append(gits, g)
	}
	rep.ScanMS, rep.GitStatusMS = medianMS(scans), medianMS(gits)

	// Watched checkpoints: N files changed, then a checkpoint.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{10, 100, 1000} {
		if n > cc.files {
			continue
		}
		var ms []float64
		for range cc.repeats {
			for range n {
				p := filePath(ws, rng.IntN(cc.files))
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(f, "// %d\n", rng.Int64())
				f.Close()
			}
			t, err := timeIt(func() error {
				_, err := c.CheckpointCreate(ctx, protocol.CheckpointCreateParams{WorkspaceRoot: ws})
				return err
			})
			if err != nil {
				return nil, err
			}
			ms = append(ms, t)
		}
		rep.Watched[n] = medianMS(ms)
	}
	st = status()
	for _, w := range st.Checkpoints.Workspaces {
		rep.WatchedDirs += w.Watches
	}
	// After the checkpoints settle: memory held while watching, not the
	// peak of recording.
	time.Sleep(2 * time.Second)
	if m, ok := sampleMem(d.pid); ok {
		rep.RSSWatchingMiB, rep.RSSAnonMiB = float64(m.rss)/1024, float64(m.anon)/1024
	}

	// Storage: Turns turns of 10 changed files each.
	st = status()
	blobsBefore, storeBefore := st.Checkpoints.StoredBytes, st.Store.Bytes
	for range cc.turns {
		b, err := c.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "bench"})
		if err != nil {
			return nil, err
		}
		for range 10 {
			p := filePath(ws, rng.IntN(cc.files))
			old, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			// An edit in the middle, as an agent makes.
			mid := len(old) / 2
			nb := slices.Concat(old[:mid], []byte(fmt.Sprintf("\n// edit %d\n", rng.Int64())), old[mid:])
			if err := os.WriteFile(p, nb, 0o644); err != nil {
				return nil, err
			}
			rep.ChangedBytes += int64(len(nb))
		}
		if _, err := c.TurnEnd(ctx, b.TurnID); err != nil {
			return nil, err
		}
	}
	st = status()
	rep.BlobsAfter = rep.BlobsFirst + st.Checkpoints.StoredBytes - blobsBefore
	rep.StoreAfter = rep.StoreFirst + st.Store.Bytes - storeBefore
	rep.DiskAfter = diskUsage(stateDir)

	// Undo of a turn that changed 100 files.
	b, err := c.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "bench"})
	if err != nil {
		return nil, err
	}
	for i := range min(100, cc.files) {
		f, err := os.OpenFile(filePath(ws, i*(cc.files/100)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "// undo me\n")
		f.Close()
	}
	if _, err := c.TurnEnd(ctx, b.TurnID); err != nil {
		return nil, err
	}
	if rep.UndoHundredMS, err = timeIt(func() error {
		_, err := c.TurnUndo(ctx, protocol.TurnUndoParams{TurnID: b.TurnID})
		return err
	}); err != nil {
		return nil, err
	}
	return rep, nil
}

func reportCheckpoints(out io.Writer, r *checkpointReport) {
	fmt.Fprintf(out, "checkpoints: workspace of %d files, %.0f MiB (git's tree in the same directory)\n", r.Files, float64(r.Bytes)/(1<<20))
	fmt.Fprintf(out, "  first checkpoint          %8.0f ms   git add -A && git commit -q %8.0f ms   ratio %.2f (target <= 1.0)\n",
		r.FirstMS, r.GitAddCommitMS, r.FirstMS/r.GitAddCommitMS)
	fmt.Fprintf(out, "  scan without the watcher  %8.1f ms   git status (warm index)     %8.1f ms   ratio %.2f (target <= 1.0)\n",
		r.ScanMS, r.GitStatusMS, r.ScanMS/r.GitStatusMS)
	for _, n := range []int{10, 100, 1000} {
		if ms, ok := r.Watched[n]; ok {
			fmt.Fprintf(out, "  watched checkpoint, %4d files changed: %6.1f ms median\n", n, ms)
		}
	}
	fmt.Fprintf(out, "  storage after %d turns x 10 files: blobs %.1f -> %.1f MiB (+%.2f MiB for %.2f MiB changed: %.2fx, target <= 1.1x); store live data %.1f -> %.1f MiB (+%.2fx)\n",
		r.Turns, mib(r.BlobsFirst), mib(r.BlobsAfter), mib(r.BlobsAfter-r.BlobsFirst), mib(r.ChangedBytes),
		float64(r.BlobsAfter-r.BlobsFirst)/float64(r.ChangedBytes), mib(r.StoreFirst), mib(r.StoreAfter),
		float64(r.StoreAfter-r.StoreFirst)/float64(r.ChangedBytes))
	fmt.Fprintf(out, "  state directory on disk: %.1f MiB after the first checkpoint, %.1f MiB after the turns (+%.2fx the bytes changed)\n",
		mib(r.DiskFirst), mib(r.DiskAfter), float64(r.DiskAfter-r.DiskFirst)/float64(r.ChangedBytes))
	fmt.Fprintf(out, "  undo of a turn that changed 100 files: %.0f ms (target <= 1000)\n", r.UndoHundredMS)
	fmt.Fprintf(out, "  daemon VmRSS while watching %d directories: %.1f MiB (target <= 100), of it anonymous %.1f MiB (the rest the store's mapped pages)\n",
		r.WatchedDirs, r.RSSWatchingMiB, r.RSSAnonMiB)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// diskUsage is the disk the files under dir take, as du counts it:
// allocated blocks, so a sparse file counts what it holds and a
// preallocated one what it reserved.
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
