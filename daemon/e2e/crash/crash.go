// Package crash runs oriond under SIGKILL at random moments while several
// clients stream, restarts it, resumes every session and checks that nothing
// acknowledged was lost or duplicated and no target was torn. The test suite
// runs it briefly; orioncrash runs it long.
package crash

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/protocol"
)

// Config describes one crash run.
type Config struct {
	// Oriond is the daemon binary under test.
	Oriond string
	// Dir holds the state directory and the allowed root.
	Dir string
	// Kills is how many times the daemon is killed.
	Kills int
	// Clients stream concurrently, one session after another.
	Clients int
	// TurnWorkers each run turns in a workspace of their own: writes
	// through sessions and by the worker itself, turn.end, turn.undo and
	// sometimes turn.redo.
	TurnWorkers int
	// WholeWriters each overwrite a file of their own with session.write
	// and undo some of the writes.
	WholeWriters int
	// MaxPause bounds the random time between kills.
	MaxPause time.Duration
	Seed     uint64
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
}

// Report is what a run found. A good run has zero LostBytes, Mismatched,
// and LeftoverTemps.
type Report struct {
	Kills    int   `json:"kills"`
	Sessions int64 `json:"sessions"`
	// Pipelined counts the sessions begun whose chunks were sent several
	// in flight (client.Stream), as orionctl write sends them.
	Pipelined     int64 `json:"pipelined_sessions"`
	Chunks        int64 `json:"chunks"`
	AckedBytes    int64 `json:"acked_bytes"`
	LostBytes     int64 `json:"lost_bytes"`
	Mismatched    int64 `json:"mismatched_targets"`
	LeftoverTemps int   `json:"leftover_temp_files"`
	Reconnects    int64 `json:"reconnects"`
	// BegunLost counts begun sessions a kill took before any of their
	// content was acknowledged (begin journals nothing: a session is
	// durable with its first chunk); their clients began again.
	BegunLost int64 `json:"begun_sessions_lost"`
	// Transactions counts the three-file transactions committed; TornTxs
	// the times their files were found neither all old nor all new.
	Transactions int64 `json:"transactions"`
	TornTxs      int64 `json:"torn_transactions"`
	// Unrecorded counts sessions whose finalize succeeded but which the
	// daemon, after the kills, no longer reports as completed: a finalize
	// journals its completion after replying, and recovery must complete
	// it when a kill lands in between.
	Unrecorded int64 `json:"unrecorded_finalizes"`
	// Overwritten counts files a client edited after their session's
	// finalize returned (as an editor would save) that the daemon wrote
	// over after a kill: recovery must keep such an edit, not finalize
	// again.
	Overwritten int64 `json:"edits_overwritten"`
	// Edited counts the targets edited after their finalize; EditsKeptOpen
	// those whose session recovery reopened in conflict.
	Edited        int64 `json:"edited_targets"`
	EditsKeptOpen int64 `json:"edits_kept_open"`
	// Turns counts the turns ended; Undos and Redos the undos and redos
	// done (acknowledged, or found done after the kill that swallowed
	// their reply); OpsInterrupted the undo or redo calls a kill cut off.
	Turns          int64 `json:"turns"`
	Undos          int64 `json:"undos"`
	Redos          int64 `json:"redos"`
	OpsInterrupted int64 `json:"undos_interrupted"`
	// OpsRecovered counts the undos and redos the daemon found journaled
	// but unfinished at a start (a kill landed while it wrote their
	// files) and finished, as its log says.
	OpsRecovered int `json:"undos_finished_at_restart"`
	// HalfDone counts the interrupted undos and redos found, once the
	// daemon answered again, neither wholly done nor wholly not done.
	HalfDone int64 `json:"undos_half_done"`
	// OpsWrong counts the workspaces found other than they should be
	// after an acknowledged turn.end, undo or redo.
	OpsWrong int64 `json:"undos_wrong"`
	// WholeWrites counts the session.writes acknowledged, WholeUndos the
	// undos of them acknowledged and checked; WholeWrong the files found
	// other than an undo, acknowledged or cut off, should have left.
	WholeWrites int64 `json:"whole_file_writes"`
	WholeUndos  int64 `json:"whole_file_undos"`
	WholeWrong  int64 `json:"whole_file_undos_wrong"`
	// Failures describes each problem found, for the test to print.
	Failures []string `json:"failures,omitempty"`
}

// OK reports whether the run found no loss, no torn or wrong target and no
// leftover temp file.
func (r *Report) OK() bool {
	return r.LostBytes == 0 && r.Mismatched == 0 && r.TornTxs == 0 && r.LeftoverTemps == 0 && r.Unrecorded == 0 && r.Overwritten == 0 && r.HalfDone == 0 && r.OpsWrong == 0 && r.WholeWrong == 0 && len(r.Failures) == 0
}

type runner struct {
	cfg    Config
	socket string
	state  string
	root   string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	failures []string
	// finalized are the sessions whose finalize returned, for the check
	// at the end; edited, the text a client wrote over some of their
	// targets afterwards, by session.
	finalized []string
	edited    map[string]string

	sessions, chunks, acked, lost, mismatched, reconnects   atomic.Int64
	pipelined                                               atomic.Int64
	begunLost                                               atomic.Int64
	txs, tornTxs                                            atomic.Int64
	turns, undos, redos, opsInterrupted, halfDone, opsWrong atomic.Int64
	wholeWrites, wholeUndos, wholeWrong                     atomic.Int64
}

// Run performs the crash run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 4
	}
	if cfg.MaxPause <= 0 {
		cfg.MaxPause = 300 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	sockDir, err := paths.SocketTempDir("orc", "oriond.sock")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(sockDir)
	r := &runner{
		cfg:    cfg,
		socket: filepath.Join(sockDir, "oriond.sock"),
		state:  filepath.Join(cfg.Dir, "state"),
		root:   filepath.Join(cfg.Dir, "root"),
		edited: make(map[string]string),
	}
	if err := os.MkdirAll(r.root, 0o700); err != nil {
		return Report{}, err
	}
	if r.root, err = filepath.EvalSymlinks(r.root); err != nil {
		return Report{}, err
	}
	if err := r.start(); err != nil {
		return Report{}, err
	}
	defer r.stop()

	streamCtx, stopStreaming := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(streamCtx, i, rand.New(rand.NewPCG(cfg.Seed, uint64(i))))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.txClient(streamCtx, rand.New(rand.NewPCG(cfg.Seed, 1<<33)))
	}()
	for i := range cfg.TurnWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.turnClient(streamCtx, i, rand.New(rand.NewPCG(cfg.Seed, 1<<34+uint64(i))))
		}()
	}
	for i := range cfg.WholeWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.wholeClient(streamCtx, i, rand.New(rand.NewPCG(cfg.Seed, 1<<35+uint64(i))))
		}()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
	kills := 0
	for kills < cfg.Kills && ctx.Err() == nil {
		time.Sleep(time.Duration(rng.Int64N(int64(cfg.MaxPause))))
		if err := r.kill(); err != nil {
			stopStreaming()
			wg.Wait()
			return r.snapshot(kills), err
		}
		kills++
		if err := r.start(); err != nil {
			stopStreaming()
			wg.Wait()
			return r.snapshot(kills), err
		}
		if kills%50 == 0 {
			cfg.Logf("%d kills, %d sessions finished, %d bytes acknowledged, %d turns undone", kills, r.sessions.Load(), r.acked.Load(), r.undos.Load())
		}
	}
	// Let every client finish the session it is in.
	stopStreaming()
	wg.Wait()
	rep := r.snapshot(kills)
	temps, err := findTemps(r.root)
	if err != nil {
		return rep, err
	}
	rep.LeftoverTemps = len(temps)
	if rep.OpsRecovered, err = countLog(filepath.Join(cfg.Dir, "oriond.log"), recoveredOpLog); err != nil {
		return rep, err
	}
	for _, t := range temps {
		rep.Failures = append(rep.Failures, "leftover temp file "+t)
	}
	if err := r.checkFinalized(ctx, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// checkFinalized asks the daemon, after the last restart, about every
// session whose finalize returned: each must be completed, except one whose
// target a client edited afterwards, which may also be open again and in
// conflict (the kill came before its bookkeeping was durable); and every
// such edit must still be on disk.
func (r *runner) checkFinalized(ctx context.Context, rep *Report) error {
	c, err := client.Dial(ctx, r.socket, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	r.mu.Lock()
	ids := slices.Clone(r.finalized)
	edited := maps.Clone(r.edited)
	r.mu.Unlock()
	for _, id := range ids {
		info, err := c.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("session %s after the kills: %w", id, err)
		}
		edit, wasEdited := edited[id]
		if wasEdited {
			if got, err := os.ReadFile(info.TargetFile); err != nil || string(got) != edit {
				rep.Overwritten++
				rep.Failures = append(rep.Failures, fmt.Sprintf("session %s: the edit after its finalize is gone from %s (%d bytes there, %v)", id, info.TargetFile, len(got), err))
			}
		}
		switch {
		case info.Stage == protocol.StageCompleted:
		case wasEdited && info.Stage.Open() && info.Conflict != "":
			rep.EditsKeptOpen++
		default:
			rep.Unrecorded++
			rep.Failures = append(rep.Failures, fmt.Sprintf("session %s was finalized but is %s (conflict %q) after the kills", id, info.Stage, info.Conflict))
		}
	}
	rep.Edited = int64(len(edited))
	return nil
}

func (r *runner) snapshot(kills int) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Report{
		Kills:          kills,
		Sessions:       r.sessions.Load(),
		Pipelined:      r.pipelined.Load(),
		Chunks:         r.chunks.Load(),
		AckedBytes:     r.acked.Load(),
		LostBytes:      r.lost.Load(),
		Mismatched:     r.mismatched.Load(),
		Reconnects:     r.reconnects.Load(),
		BegunLost:      r.begunLost.Load(),
		Transactions:   r.txs.Load(),
		TornTxs:        r.tornTxs.Load(),
		Turns:          r.turns.Load(),
		Undos:          r.undos.Load(),
		Redos:          r.redos.Load(),
		OpsInterrupted: r.opsInterrupted.Load(),
		HalfDone:       r.halfDone.Load(),
		OpsWrong:       r.opsWrong.Load(),
		WholeWrites:    r.wholeWrites.Load(),
		WholeUndos:     r.wholeUndos.Load(),
		WholeWrong:     r.wholeWrong.Load(),
		Failures:       append([]string(nil), r.failures...),
	}
}

func (r *runner) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 20 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

func (r *runner) start() error {
	// The run asks about every session it finalized at the end, so none
	// may be forgotten for --max-finished-sessions (a thousand kills
	// finish more than its default).
	cmd := exec.Command(r.cfg.Oriond, "run", "--socket", r.socket, "--state-dir", r.state,
		"--allow-root", r.root, "--log-level", "info", "--max-finished-sessions", "1000000")
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_STATE_DIR=", "ORION_ALLOW_ROOTS=", "ORION_CONFIG=/dev/null")
	logPath := filepath.Join(r.cfg.Dir, "oriond.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("unix", r.socket)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("oriond exited at start; see %s", logPath)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("oriond did not open its socket within 30s; see %s", logPath)
}

func (r *runner) kill() error {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	return nil
}

func (r *runner) stop() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// conn is a client connection that redials after the daemon dies.
type conn struct {
	r *runner
	c *client.Client
}

func (k *conn) get(ctx context.Context) (*client.Client, error) {
	for k.c == nil {
		c, err := client.Dial(ctx, k.r.socket, client.Options{})
		if err == nil {
			k.c = c
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return k.c, nil
}

// broken handles a failed call: a transport failure drops the connection
// (to redial) and is retried; a protocol error is returned.
func (k *conn) broken(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	if k.c != nil {
		k.c.Close()
		k.c = nil
		k.r.reconnects.Add(1)
	}
	return nil
}

// client writes one file after another until ctx ends, surviving kills.
func (r *runner) client(ctx context.Context, id int, rng *rand.Rand) {
	k := &conn{r: r}
	defer func() {
		if k.c != nil {
			k.c.Close()
		}
	}()
	// Sessions started before the stop still finish: only the choice to
	// start another one looks at ctx.
	finishCtx := context.WithoutCancel(ctx)
	for n := 0; ctx.Err() == nil; n++ {
		target := filepath.Join(r.root, fmt.Sprintf("c%d-%d.txt", id, n))
		size := 1 + rng.IntN(40_000)
		if rng.IntN(8) == 0 {
			// A file streamed whole, which the daemon also writes
			// into its new file as the chunks arrive.
			size = wholeMin + rng.IntN(1<<20)
		}
		content := randomContent(rng, size)
		if err := r.writeOne(finishCtx, k, rng, target, content); err != nil {
			r.fail("client %d file %d: %v", id, n, err)
			return
		}
		r.sessions.Add(1)
	}
}

func (r *runner) writeOne(ctx context.Context, k *conn, rng *rand.Rand, target, content string) error {
	var begun protocol.BeginResult
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		begun, err = c.Begin(ctx, protocol.BeginParams{Intent: "crash test", TargetFile: target, Operation: protocol.OpCreate})
		if err == nil {
			break
		}
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeTargetExists {
			// A begin whose reply the kill swallowed created nothing on
			// disk, so this cannot happen; say so if it does.
			return fmt.Errorf("begin: %v", err)
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	// Half the sessions keep several chunks in flight, as orionctl write
	// does: a kill then lands while some are queued for the journal and
	// none of them acknowledged yet.
	whole := len(content) >= wholeMin
	pipelined := rng.IntN(2) == 0 || whole
	var chunks []string
	size := 1 + rng.IntN(8192)
	if whole {
		size = wholeChunk
	}
	if pipelined {
		r.pipelined.Add(1)
		chunks = splitFixed(content+begun.EndMarker+"\n", size)
	} else {
		chunks = split(rng, content+begun.EndMarker+"\n")
	}
	var ackedSeq uint64
	for seq := uint64(1); seq <= uint64(len(chunks)); {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if pipelined {
			var n uint64
			n, err = streamFrom(ctx, c, begun.SessionID, chunks, size, seq)
			for _, ch := range chunks[seq-1 : seq-1+n] {
				r.chunks.Add(1)
				r.acked.Add(int64(len(ch)))
			}
			seq += n
			if n > 0 {
				ackedSeq = seq - 1
			}
			if err == nil {
				continue
			}
		} else {
			_, err = c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: seq, Chunk: chunks[seq-1]})
			if err == nil {
				ackedSeq = seq
				r.chunks.Add(1)
				r.acked.Add(int64(len(chunks[seq-1])))
				seq++
				continue
			}
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("append seq %d: %w", seq, err)
		}
		// Reconnected: ask where the session stands and go on from there.
		next, err := r.resume(ctx, k, begun.SessionID)
		if errors.Is(err, errBegunLost) && ackedSeq == 0 {
			// Nothing of it was acknowledged: the client begins again.
			r.begunLost.Add(1)
			return r.writeOne(ctx, k, rng, target, content)
		}
		if err != nil {
			return err
		}

		if next-1 < ackedSeq {
			lost := 0
			for s := next; s <= ackedSeq; s++ {
				lost += len(chunks[s-1])
			}
			r.lost.Add(int64(lost))
			return fmt.Errorf("session %s resumed at seq %d but seq %d was acknowledged: %d bytes lost", begun.SessionID, next, ackedSeq, lost)
		}
		if next > uint64(len(chunks))+1 || (!pipelined && next > seq+1) {
			return fmt.Errorf("session %s resumed at seq %d, beyond the %d chunks ever sent", begun.SessionID, next, seq)
		}
		seq = next
	}
	var res protocol.FinalizeResult
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		res, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID})
		if err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	got, err := os.ReadFile(target)
	if err != nil {
		r.mismatched.Add(1)
		return fmt.Errorf("reading %s after finalize: %w", target, err)
	}
	if string(got) != content || res.Bytes != int64(len(content)) {
		r.mismatched.Add(1)
		return fmt.Errorf("%s holds %d bytes after finalize, want the %d sent (summary says %d)", target, len(got), len(content), res.Bytes)
	}
	r.mu.Lock()
	r.finalized = append(r.finalized, begun.SessionID)
	r.mu.Unlock()
	if rng.IntN(4) == 0 {
		// An editor saves over the file right after the write, which a
		// kill may catch before the finalize's bookkeeping is durable.
		edit := fmt.Sprintf("edited after session %s\n", begun.SessionID)
		if err := os.WriteFile(target, []byte(edit), 0o644); err != nil {
			return err
		}
		r.mu.Lock()
		r.edited[begun.SessionID] = edit
		r.mu.Unlock()
	}
	return nil
}

// errBegunLost is resume's error for a session the daemon does not know
// after a kill: a session begun with nothing appended is not journaled, so
// a kill may take it. The caller checks that nothing of it was
// acknowledged.
var errBegunLost = errors.New("session not found after a kill")

func (r *runner) resume(ctx context.Context, k *conn, id string) (uint64, error) {
	for {
		c, err := k.get(ctx)
		if err != nil {
			return 0, err
		}
		res, err := c.Resume(ctx, id)
		if err == nil {
			return res.NextSeq, nil
		}
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeSessionNotFound {
			return 0, fmt.Errorf("resume: %w: %w", errBegunLost, err)
		}
		if err := k.broken(err); err != nil {
			return 0, fmt.Errorf("resume: %w", err)
		}
	}
}

// A file of wholeMin bytes or more is streamed whole, in chunks of
// wholeChunk as orionctl write sends them: large enough, even cut back to a
// character's start, that the daemon writes the file as it streams.
const (
	wholeMin   = 300 << 10
	wholeChunk = 384 << 10
)

// split cuts s into chunks of 1 byte to 8 KiB on character boundaries.
func split(rng *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(1+rng.IntN(8192), len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// splitFixed cuts s into chunks of size bytes, each cut moved back to a
// character's start, as client.Stream cuts its input: streamed again from
// any of its chunks, the rest is cut the same way.
func splitFixed(s string, size int) []string {
	var out []string
	protocol.SplitChunks(strings.NewReader(s), size, func(c []byte) error {
		out = append(out, string(c))
		return nil
	})
	return out
}

// streamFrom sends chunks, cut by splitFixed at size, from seq on with
// client.Stream, several in flight, and returns how many were
// acknowledged, in order, before the first failure.
func streamFrom(ctx context.Context, c *client.Client, id string, chunks []string, size int, seq uint64) (uint64, error) {
	_, n, err := c.Stream(ctx, id, strings.NewReader(strings.Join(chunks[seq-1:], "")), client.StreamOptions{ChunkSize: size, FirstSeq: seq})
	return n, err
}

func randomContent(rng *rand.Rand, size int) string {
	words := []string{"alpha", "beta", "ünï", "日本", "🚀", "{", "}", "\t", "DONE"}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	// The end marker must stand on a line of its own, as a model writes it.
	b.WriteByte('\n')
	return b.String()
}

// recoveredOpLog is what the daemon logs (at info) for each undo or redo
// it finishes at its start.
const recoveredOpLog = "finishing an interrupted operation"

func countLog(path, msg string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), msg), nil
}

// findTemps lists the temp files left anywhere under root (the turn
// workers' workspaces are directories of it).
func findTemps(root string) ([]string, error) {
	var temps []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), atomicfile.TempPrefix) {
			rel, _ := filepath.Rel(root, path)
			temps = append(temps, rel)
		}
		return nil
	})
	return temps, err
}

// txFiles are the files the transaction client rewrites together.
var txFiles = []string{"tx-a.txt", "tx-b.txt", "tx-c.txt"}

// txClient commits one three-file transaction after another, each file
// starting with the round's generation, and checks after every reconnect
// (a kill, so possibly mid-commit) that the three files share one
// generation: all old or all new, never a mix.
func (r *runner) txClient(ctx context.Context, rng *rand.Rand) {
	k := &conn{r: r}
	defer func() {
		if k.c != nil {
			k.c.Close()
		}
	}()
	finishCtx := context.WithoutCancel(ctx)
	for gen := 1; ctx.Err() == nil; gen++ {
		if err := r.txRound(finishCtx, k, rng, gen); err != nil {
			r.fail("transaction %d: %v", gen, err)
			return
		}
		r.txs.Add(1)
	}
}

func (r *runner) txRound(ctx context.Context, k *conn, rng *rand.Rand, gen int) error {
	contents := make([]string, len(txFiles))
	files := make([]protocol.BeginParams, len(txFiles))
	for i, name := range txFiles {
		contents[i] = fmt.Sprintf("generation %d\n", gen) + randomContent(rng, 1+rng.IntN(6000))
		files[i] = protocol.BeginParams{TargetFile: filepath.Join(r.root, name), Operation: protocol.OpOverwrite}
	}
	var tx protocol.TxBeginResult
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if tx, err = c.TxBegin(ctx, protocol.TxBeginParams{Intent: "crash test transaction", Files: files}); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("tx.begin: %w", err)
		}
		if err := r.checkTxFilesServing(ctx, k, gen-1); err != nil {
			return err
		}
	}
	for i, s := range tx.Sessions {
		for {
			c, err := k.get(ctx)
			if err != nil {
				return err
			}
			_, err = c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: contents[i] + s.EndMarker + "\n"})
			if err == nil {
				break
			}
			if err := k.broken(err); err != nil {
				return fmt.Errorf("append: %w", err)
			}
			if next, err := r.resume(ctx, k, s.SessionID); err != nil {
				return err
			} else if next > 1 {
				break
			}
		}
	}
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		_, err = c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID})
		if err == nil {
			break
		}
		if berr := k.broken(err); berr != nil {
			return fmt.Errorf("tx.commit: %w", berr)
		}
		// A kill, maybe in the middle of the commit: whatever the daemon
		// recovered must be one whole generation.
		if cerr := r.checkTxFilesServing(ctx, k, gen-1, gen); cerr != nil {
			return fmt.Errorf("%v (after tx.commit failed with %v)", cerr, err)
		}
	}
	return r.checkTxFiles(gen)
}

// checkTxFilesServing checks the files once a daemon answers again: it
// recovers before it opens its socket. A connect alone proves nothing: a
// killed daemon's listening socket can outlive its connections for a
// moment, and a connect to it succeeds while the files are exactly as the
// kill left them.
func (r *runner) checkTxFilesServing(ctx context.Context, k *conn, accepted ...int) error {
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if _, err = c.Status(ctx); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("daemon.status: %w", err)
		}
	}
	return r.checkTxFiles(accepted...)
}

// checkTxFiles checks that every transaction file holds one of the
// accepted generations, the same for all (generation 0: none exist yet).
func (r *runner) checkTxFiles(accepted ...int) error {
	var seen []string
	for _, name := range txFiles {
		b, err := os.ReadFile(filepath.Join(r.root, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			seen = append(seen, "generation 0")
		case err != nil:
			return err
		default:
			first, _, _ := strings.Cut(string(b), "\n")
			seen = append(seen, first)
		}
	}
	for _, g := range accepted {
		want := fmt.Sprintf("generation %d", g)
		if seen[0] == want && seen[1] == want && seen[2] == want {
			return nil
		}
	}
	r.tornTxs.Add(1)
	return fmt.Errorf("transaction files hold %v, want one of generations %v for all three", seen, accepted)
}
