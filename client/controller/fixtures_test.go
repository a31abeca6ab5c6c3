package controller_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

var update = flag.Bool("update", false, "rewrite the expected outputs in ../testdata/streams")

// harnessOptions are the settings both suites run the fixtures with
// (testdata/streams/README.md): short daemon timers so the idle and
// truncation fixtures take a few seconds (never so short that a loaded machine truncates a fixture by accident), small chunks so a dropped
// connection falls between appends, and no time-based flush so chunking
// does not depend on the machine's speed.
func harnessOptions(d *testdaemon.Daemon) controller.Options {
	return controller.Options{
		Socket:         d.Socket,
		WorkspaceRoot:  d.Root,
		IdleMS:         1500,
		AutoFinalizeMS: 6000,
		ChunkBytes:     256,
		FlushAfter:     time.Hour,
		Replay:         true,
	}
}

// fixtureRun is what one fixture produced, before normalization.
type fixtureRun struct {
	events []controller.Event
	dials  int
}

// runFixture feeds a recorded stream to a controller on a fresh daemon,
// acting on the harness directives in its comments:
//
//	: orion-test drop-connection   close the daemon connection
//	: orion-test restart-daemon    kill the daemon (SIGKILL) and start it again
//	: orion-test wait-truncated    wait until the daemon truncated a session
func runFixture(t *testing.T, d *testdaemon.Daemon, stream []byte) fixtureRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		cur  *client.Client
		run  fixtureRun
		opts = harnessOptions(d)
	)
	opts.Dial = func(ctx context.Context, co client.Options) (*client.Client, error) {
		c, err := client.Dial(ctx, d.Socket, co)
		if err == nil {
			mu.Lock()
			cur, run.dials = c, run.dials+1
			mu.Unlock()
		}
		return c, err
	}
	opts.OnEvent = func(e controller.Event) { run.events = append(run.events, e) }
	opts.OnComment = func(ctx context.Context, text string) {
		switch text {
		case "orion-test drop-connection":
			mu.Lock()
			cur.Close()
			mu.Unlock()
		case "orion-test restart-daemon":
			d.Kill()
			d.Restart()
		case "orion-test wait-truncated":
			waitTruncated(t, ctx, d)
		}
	}
	ctl, err := controller.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := ctl.Run(ctx, bytes.NewReader(stream)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := ctl.Finish(ctx); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return run
}

// waitTruncated polls until a session ended truncated and was not
// continued yet.
func waitTruncated(t *testing.T, ctx context.Context, d *testdaemon.Daemon) {
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		list, err := c.List(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Stage == protocol.StageTruncated && s.ContinuedBy == "" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no session was truncated")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var (
	uuidRE   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	markerRE = regexp.MustCompile(`__END_WRITE_([0-9a-f]{12})__`)
	sha256RE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
)

// normalize makes a run comparable across runs and languages: session ids
// become {{session:N}} and their markers {{marker:N}} (N in order of first
// appearance in the events' canonical JSON, keys sorted), the daemon's root
// {{root}}, in the events and in the files' contents; tool results, which
// are JSON text, are compared as JSON. SHA-256 sums become {{sha256}}: a
// file that quotes its own marker hashes differently in every run, so
// checkSums ties each summary to the file on disk instead. The Node suite
// implements the same steps.
func normalize(t *testing.T, events []controller.Event, files map[string]string, root string) expected {
	t.Helper()
	raw, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	var generic []any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, e := range generic {
		msg, _ := e.(map[string]any)["message"].(map[string]any)
		if content, ok := msg["content"].(string); ok {
			var parsed map[string]any
			if json.Unmarshal([]byte(content), &parsed) == nil {
				msg["content"] = parsed
			}
		}
	}
	canonical, err := json.Marshal(generic) // maps marshal with sorted keys
	if err != nil {
		t.Fatal(err)
	}
	text := string(canonical)
	n := map[string]int{}
	var order []string
	for _, id := range uuidRE.FindAllString(text, -1) {
		if _, ok := n[id]; !ok {
			n[id] = len(order) + 1
			order = append(order, id)
		}
	}
	replace := func(text string) string {
		text = markerRE.ReplaceAllStringFunc(text, func(m string) string {
			hex := markerRE.FindStringSubmatch(m)[1]
			for _, id := range order {
				if strings.HasPrefix(strings.ReplaceAll(id, "-", ""), hex) {
					return "{{marker:" + strconv.Itoa(n[id]) + "}}"
				}
			}
			return "{{marker:?}}"
		})
		text = uuidRE.ReplaceAllStringFunc(text, func(id string) string { return "{{session:" + strconv.Itoa(n[id]) + "}}" })
		text = sha256RE.ReplaceAllString(text, "{{sha256}}")
		return strings.ReplaceAll(text, root, "{{root}}")
	}
	out := expected{Files: map[string]string{}}
	if err := json.Unmarshal([]byte(replace(text)), &out.Events); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		out.Files[name] = replace(content)
	}
	return out
}

// filesUnder maps every file under root, by slash path, to its content.
func filesUnder(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// expected is a fixture's .want.json: the normalized events and the files
// the daemon's root holds afterwards.
type expected struct {
	Events any               `json:"events"`
	Files  map[string]string `json:"files"`
}

// TestFixtures runs every shared recorded stream against the real oriond
// and compares events and files with the expected outputs the Node suite
// checks too.
func TestFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(streamsDir, "*.sse"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in %s: %v", streamsDir, err)
	}
	sort.Strings(paths)
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".sse")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stream, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := testdaemon.Start(t)
			run := runFixture(t, d, stream)
			checkSums(t, run.events)
			got := normalize(t, run.events, filesUnder(t, d.Root), d.Root)
			wantPath := strings.TrimSuffix(path, ".sse") + ".want.json"
			if *update {
				writeJSON(t, wantPath, got)
			}
			var want expected
			b, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if want.Files == nil {
				want.Files = map[string]string{}
			}
			if !reflect.DeepEqual(roundTrip(t, got), roundTrip(t, want)) {
				var gb bytes.Buffer
				enc := json.NewEncoder(&gb)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				enc.Encode(got)
				t.Fatalf("%s differs from %s; got:\n%s", name, wantPath, gb.String())
			}
			if name == "dropped_connection" && run.dials < 3 {
				t.Fatalf("%d dials: the connection was not dropped and re-dialled twice", run.dials)
			}
			if name == "daemon_restart" && run.dials < 2 {
				t.Fatalf("%d dials: the controller did not reconnect after the restart", run.dials)
			}
		})
	}
}

// checkSums verifies that each file's last finalize summary describes the
// file on disk (an earlier one described the file before a later edit).
func checkSums(t *testing.T, events []controller.Event) {
	t.Helper()
	last := map[string]controller.Event{}
	var order []string
	for _, e := range events {
		if e.Type != controller.EventFinalized {
			continue
		}
		if _, ok := last[e.Result.TargetFile]; !ok {
			order = append(order, e.Result.TargetFile)
		}
		last[e.Result.TargetFile] = e
	}
	for _, target := range order {
		e := last[target]
		b, err := os.ReadFile(e.Result.TargetFile)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.Result.FileSHA256 || int64(len(b)) != e.Result.FileBytes {
			t.Fatalf("%s: summary says %d bytes, sha256 %s; the file has %d bytes, sha256 %x",
				e.Result.TargetFile, e.Result.FileBytes, e.Result.FileSHA256, len(b), sum)
		}
	}
}

// roundTrip decodes v's JSON generically, so values compare by content.
func roundTrip(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

func writeJSON(t *testing.T, path string, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
