package ui_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// findBrowser returns a Chromium to drive: $CHROME_BIN, or one on PATH.
// Without one the browser tests skip, saying why, unless
// ORION_REQUIRE_BROWSER is set (as in CI), where they fail.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROME_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ORION_REQUIRE_BROWSER") != "" {
		t.Fatal("ORION_REQUIRE_BROWSER is set but no browser was found: set CHROME_BIN or install Debian's chromium")
	}
	t.Skip("no Chromium found (set CHROME_BIN, or apt-get install chromium); ORION_REQUIRE_BROWSER makes this a failure")
	return ""
}

// startUI runs `orionctl ui --no-open` against socket and returns the URL
// it printed.
func startUI(t *testing.T, socket string) string {
	t.Helper()
	cmd := exec.Command(testdaemon.Orionctl(t), "--socket", socket, "ui", "--no-open")
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_CONFIG=/dev/null")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &syncWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("orionctl ui said:\n%s", logs.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("orionctl ui printed no URL: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// newBrowser starts a headless Chromium with a fresh profile. Web security
// stays on: the tests are about what a page may not do.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	// Chromium's profile lock is a Unix socket in its profile and its temp
	// files go to $TMPDIR: in a long TMPDIR (macOS's) the socket path is
	// longer than a socket address allows and Chromium aborts. So its own
	// short private directory, removed after the browser (cleanups run in
	// reverse order).
	tmp, err := os.MkdirTemp("/tmp", "orion-ui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	profile := filepath.Join(tmp, "p")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findBrowser(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR="+tmp, "XDG_RUNTIME_DIR="+tmp),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting the browser: %v", err)
	}
	return ctx
}

// run runs browser actions with a deadline.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		hctx, c := context.WithTimeout(ctx, 2*time.Second)
		defer c()
		// What a person would see: the visible text, not the markup.
		text, _ := chromedp.Run(hctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\nthe page shows: %.4000s", what, err, text)
	}
}

// waitText waits until the element sel's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want))
}

// waitJS waits until expr is true in the page.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	p := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := p(ctx, t)
		return chromedp.Void{}, err
	}
}

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

// screenshot writes docs/images/NAME.png when ORION_UPDATE_SCREENSHOTS is
// set, so that ordinary runs leave the tree clean.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("ORION_UPDATE_SCREENSHOTS") == "" {
		return
	}
	run(t, ctx, "settle", chromedp.Sleep(300*time.Millisecond))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "images", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func dial(t *testing.T, socket string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func row(id string) string { return fmt.Sprintf(`#sessions tr[data-id=%q]`, id) }

// TestPageInABrowser drives the real page in a real Chromium against the
// real daemon and the real `orionctl ui`.
func TestPageInABrowser(t *testing.T) {
	ctx := newBrowser(t)
	d := testdaemon.Start(t)
	url := startUI(t, d.Socket)
	c := dial(t, d.Socket)
	bg := context.Background()
	target := filepath.Join(d.Root, "notes.txt")
	const before = "one\ntwo\nthree\nfour\n"
	if err := os.WriteFile(target, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}

	b, err := c.Begin(bg, protocol.BeginParams{TargetFile: "notes.txt", WorkspaceRoot: d.Root, Operation: protocol.OpOverwrite, Intent: "capitalise"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(bg, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "ONE\ntwo\n"}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the page", chromedp.Navigate(url), visible(row(b.SessionID)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "/t/") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}

	t.Run("StreamingFileAppearsAndGrows", func(t *testing.T) {
		run(t, ctx, "select the streaming session", click(row(b.SessionID)), waitText("#d-body", "ONE\ntwo"))
		if _, err := c.Append(bg, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "THREE\nfour\n"}); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "the content grows", waitText("#d-body", "THREE\nfour"),
			waitText(row(b.SessionID)+" td.bytes", "19 bytes"))
		// A model's pace is bytes a second: whole bytes, in the column.
		run(t, ctx, "the rate reads as a person reads it", waitJS(fmt.Sprintf(`(() => {
			const td = document.querySelector(%q);
			return !!td && /^[0-9]+ B\/s$/.test(td.textContent) && td.scrollWidth <= td.clientWidth;
		})()`, row(b.SessionID)+" td.rate")))
		// The daemon names the process that opened the session: this test.
		run(t, ctx, "the client shows", waitText(row(b.SessionID)+" td.client", "ui.test"))
		screenshot(t, ctx, "ui-streaming")
	})

	t.Run("LadderAndDiffOfAWrite", func(t *testing.T) {
		if _, err := c.Append(bg, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: b.EndMarker + "\n"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Finalize(bg, protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "the session completes", waitJS(`document.querySelector('#detail').dataset.state === 'completed'`))
		// Each step in order: begin, the appends folded, the finalize
		// that wrote the file and completed the session.
		run(t, ctx, "the ladder's steps", waitJS(`(() => {
			const t = [...document.querySelectorAll('#d-ladder li')].map(li => li.dataset.title);
			const i = t.indexOf('BEGIN'), j = t.findIndex(x => x.startsWith('APPEND')), k = t.indexOf('FINALIZE');
			return i === 0 && j > i && k > j;
		})()`),
			waitJS(`[...document.querySelectorAll('#d-ladder li')].some(li => li.dataset.title === 'FINALIZE' && li.textContent.includes('Wrote:') && li.dataset.stages.includes('completed'))`))
		run(t, ctx, "the diff shows the changed lines",
			waitText("#d-body .del", "one"), waitText("#d-body .add", "ONE"),
			waitJS(`[...document.querySelectorAll('#d-body .del')].some(e => e.textContent.includes('three'))`),
			waitJS(`[...document.querySelectorAll('#d-body .add')].some(e => e.textContent.includes('THREE'))`))
		screenshot(t, ctx, "ui-diff")
	})

	t.Run("UndoPutsTheOldFileBack", func(t *testing.T) {
		// Undo asks first, naming the file; Cancel leaves it.
		run(t, ctx, "undo asks", click(`#d-actions button[data-action="undo"]`), visible("#d-ask"), waitText("#d-ask-text", target))
		run(t, ctx, "cancel", click("#d-ask-no"), waitJS(`document.querySelector('#d-ask').hidden`))
		if got, _ := os.ReadFile(target); string(got) == before {
			t.Fatal("Cancel undid the write")
		}
		run(t, ctx, "undo", click(`#d-actions button[data-action="undo"]`), visible("#d-ask"), click("#d-ask-yes"), waitText("#d-message", "restored"))
		got, _ := os.ReadFile(target)
		if string(got) != before {
			t.Fatalf("after undo from the page the file holds %q, want %q", got, before)
		}
		run(t, ctx, "the list says undone", waitJS(fmt.Sprintf(`document.querySelector(%q)?.dataset.state === 'undone'`, row(b.SessionID))))
	})

	t.Run("Abort", func(t *testing.T) {
		a, err := c.Begin(bg, protocol.BeginParams{TargetFile: "abort.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
		if err != nil {
			t.Fatal(err)
		}
		c.Append(bg, protocol.AppendParams{SessionID: a.SessionID, Seq: 1, Chunk: "half a file"})
		run(t, ctx, "abort from the page", visible(row(a.SessionID)), click(row(a.SessionID)),
			visible(`#d-actions button[data-action="abort"]`), click(`#d-actions button[data-action="abort"]`),
			waitText("#d-message", "aborted"))
		if info, err := c.Get(bg, a.SessionID); err != nil || info.Stage != protocol.StageAborted {
			t.Fatalf("after abort from the page: %v, %v", info.Stage, err)
		}
	})

	t.Run("DryRunIsListedAsOne", func(t *testing.T) {
		s, err := c.Begin(bg, protocol.BeginParams{TargetFile: "dry.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
		if err != nil {
			t.Fatal(err)
		}
		c.Append(bg, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "a look only\n" + s.EndMarker + "\n"})
		// As orionctl write --dry-run does: look, then abort.
		if _, err := c.Finalize(bg, protocol.FinalizeParams{SessionID: s.SessionID, DryRun: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Abort(bg, s.SessionID); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "listed as a dry run", visible(row(s.SessionID)),
			waitJS(fmt.Sprintf(`document.querySelector(%q)?.dataset.state === 'dry_run'`, row(s.SessionID))),
			waitText(row(s.SessionID)+" .state", "dry run"))
	})

	t.Run("UsedLinkSaysWhatToDo", func(t *testing.T) {
		u, _ := neturl.Parse(url)
		run(t, ctx, "the used link", chromedp.Navigate(url), waitText("body", "already used"), waitText("body", "Run orionctl ui again"))
		run(t, ctx, "back to the page", chromedp.Navigate("http://"+u.Host+"/"), visible(row(b.SessionID)))
	})

	t.Run("FinalizeAnywayAfterAConflict", func(t *testing.T) {
		conflicted := filepath.Join(d.Root, "conflict.txt")
		os.WriteFile(conflicted, []byte("base\n"), 0o644)
		s, err := c.Begin(bg, protocol.BeginParams{TargetFile: "conflict.txt", WorkspaceRoot: d.Root, Operation: protocol.OpOverwrite})
		if err != nil {
			t.Fatal(err)
		}
		c.Append(bg, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "from the agent\n" + s.EndMarker + "\n"})
		os.WriteFile(conflicted, []byte("edited by hand\n"), 0o644)
		run(t, ctx, "the conflict shows", visible(row(s.SessionID)),
			waitJS(fmt.Sprintf(`document.querySelector(%q)?.dataset.state === 'conflict'`, row(s.SessionID))),
			click(row(s.SessionID)),
			visible(`#d-actions button[data-action="finalize-anyway"]`),
			click(`#d-actions button[data-action="finalize-anyway"]`),
			visible(`#d-confirm`), waitText("#d-confirm-diff", "edited by hand"))
		if got, _ := os.ReadFile(conflicted); string(got) != "edited by hand\n" {
			t.Fatalf("the confirmation already wrote: %q", got)
		}
		screenshot(t, ctx, "ui-conflict")
		run(t, ctx, "confirm", click(`#d-confirm-yes`), waitText("#d-message", "wrote"))
		if got, _ := os.ReadFile(conflicted); string(got) != "from the agent\n" {
			t.Fatalf("finalize anyway left %q", got)
		}
	})

	t.Run("NeedsCorrectionsShowsItsFindings", func(t *testing.T) {
		s, err := c.Begin(bg, protocol.BeginParams{TargetFile: "data.json", WorkspaceRoot: d.Root, Operation: protocol.OpCreate,
			Validation: &protocol.ValidationPolicy{All: "strict"}})
		if err != nil {
			t.Fatal(err)
		}
		c.Append(bg, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "{\"a\": [1, 2\n" + s.EndMarker + "\n"})
		if _, err := c.Finalize(bg, protocol.FinalizeParams{SessionID: s.SessionID}); err == nil {
			t.Fatal("broken JSON was written under a strict policy")
		}
		run(t, ctx, "the findings show", visible(row(s.SessionID)), click(row(s.SessionID)),
			waitJS(`document.querySelector('#detail').dataset.state === 'needs_corrections'`),
			visible("#d-findings"), waitText("#d-findings", "line"),
			// The refused finalize is a failed step of the ladder.
			waitJS(`[...document.querySelectorAll('#d-ladder li.failed')].some(li => li.dataset.title === 'FINALIZE')`))
		screenshot(t, ctx, "ui-findings")
	})

	t.Run("AnotherPageCanNeitherReadNorAct", func(t *testing.T) {
		victim := filepath.Join(d.Root, "victim.txt")
		os.WriteFile(victim, []byte("mine\n"), 0o644)
		w, err := c.Write(bg, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: victim, Operation: protocol.OpOverwrite}, Content: "agent's\n"})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := neturl.Parse(url)
		// Another origin of the same site (127.0.0.1, another port): the
		// browser even sends the SameSite=Strict cookie along.
		evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(rw, `<!doctype html><body><form id="f" method="POST" action="http://%[1]s/api/undo" enctype="text/plain" target="sink">
<input name='{"session_id":"%[2]s","x":"' value='"}'></form><iframe name="sink"></iframe><script>
(async () => {
  const r = {};
  try { const x = await fetch("http://%[1]s/api/sessions", {credentials: "include"}); r.read = await x.text(); } catch (e) { r.readError = String(e); }
  try { await fetch("http://%[1]s/api/undo", {method: "POST", credentials: "include", mode: "no-cors",
        headers: {"Content-Type": "text/plain"}, body: JSON.stringify({session_id: "%[2]s"})}); } catch (e) {}
  try { await fetch("http://%[1]s/api/undo", {method: "POST", credentials: "include",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify({session_id: "%[2]s"})}); r.preflightPassed = true; } catch (e) {}
  document.getElementById("f").submit();
  setTimeout(() => { window.result = r; }, 500);
})();
</script></body>`, u.Host, w.SessionID)
		}))
		defer evil.Close()
		run(t, ctx, "the other page runs", chromedp.Navigate(evil.URL), waitJS(`window.result !== undefined`))
		res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`window.result`))
		if err != nil {
			t.Fatal(err)
		}
		if _, read := res["read"]; read || res["preflightPassed"] == true {
			t.Errorf("another page read the list or passed a preflight: %v", res)
		}
		if got, _ := os.ReadFile(victim); string(got) != "agent's\n" {
			t.Fatalf("another page changed the file: %q", got)
		}
		if info, _ := c.Get(bg, w.SessionID); info.Undone {
			t.Fatal("another page undid a session")
		}
		// The link was used; the tab keeps its key in sessionStorage.
		run(t, ctx, "back to the page", chromedp.Navigate("http://"+u.Host+"/"), visible(row(b.SessionID)))
	})

	t.Run("ReconnectsAfterADaemonRestart", func(t *testing.T) {
		d.Kill()
		run(t, ctx, "says reconnecting", waitText("#conn", "reconnecting"))
		// Where it looks for the daemon, and what starts it there.
		run(t, ctx, "says what to run", visible("#down"), waitText("#down", d.Socket), waitText("#down", client.StartCommand(d.Socket)))
		screenshot(t, ctx, "ui-reconnecting")
		d.Restart()
		run(t, ctx, "live again", waitJS(`document.querySelector('#conn').dataset.state === 'live'`),
			visible(row(b.SessionID)), waitJS(`document.querySelector('#down').hidden`))
		c2 := dial(t, d.Socket)
		n, err := c2.Begin(bg, protocol.BeginParams{TargetFile: "after.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
		if err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "a new session shows", visible(row(n.SessionID)))
	})

	t.Run("Traces", func(t *testing.T) {
		// More events than a page (each request is one): the newest
		// first, then the older ones.
		c3 := dial(t, d.Socket)
		for range 150 {
			if _, err := c3.Get(bg, b.SessionID); err != nil {
				t.Fatal(err)
			}
		}
		times := `[...document.querySelectorAll('#traces tbody td.time')].map(td => Date.parse(td.dataset.time))`
		run(t, ctx, "the newest page", click("#tab-traces"), waitText("#t-message", "events 1–100, newest first"),
			waitJS(`!document.querySelector('#t-older').disabled`),
			waitJS(`(() => { const t = `+times+`; return t.length === 100 && t.every((x, i) => i === 0 || t[i-1] >= x); })()`))
		first, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.min(...`+times+`)`))
		if err != nil {
			t.Fatal(err)
		}
		// Types on one line; fields as names and values, not JSON.
		run(t, ctx, "readable cells", waitJS(`[...document.querySelectorAll('#traces td.type')].every(td => getComputedStyle(td).whiteSpace === 'nowrap')`),
			waitJS(`[...document.querySelectorAll('#traces td.fields')].every(td => !td.textContent.trim().startsWith('{'))`),
			waitJS(`[...document.querySelectorAll('#traces .field[data-field="duration_ms"]')].some(f => / ms$/.test(f.textContent))`))
		run(t, ctx, "the next, older page", click("#t-older"), waitText("#t-message", "events 101–"),
			waitJS(fmt.Sprintf(`(() => { const t = %s; return t.length > 0 && Math.max(...t) <= %f; })()`, times, first)),
			waitJS(`!document.querySelector('#t-newest').disabled`))
		run(t, ctx, "back to the newest", click("#t-newest"), waitText("#t-message", "events 1–100"),
			waitJS(`document.querySelector('#t-newest').disabled`))
		run(t, ctx, "filtered", chromedp.SetValue(chromedp.CSS("#t-session"), b.SessionID), chromedp.SetValue(chromedp.CSS("#t-type"), "session.write"),
			click(`#t-filters button[type="submit"]`), waitText("#t-message", "events 1–1,"),
			waitJS(`[...document.querySelectorAll('#traces tbody tr')].every(tr => tr.dataset.type === 'session.write')`))
		screenshot(t, ctx, "ui-traces")
		run(t, ctx, "back", click("#tab-sessions"))
	})
}
