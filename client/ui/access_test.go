package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orion-agent/orion/client/ui"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

// openLink uses a one-time link as a browser does: it returns the cookie
// the redirect sets and the page key in the redirect's fragment.
func openLink(t *testing.T, link string) (*http.Cookie, string) {
	t.Helper()
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("the link answered %d with cookies %v: want a redirect setting one HttpOnly SameSite=Strict cookie", resp.StatusCode, resp.Header["Set-Cookie"])
	}
	loc := resp.Header.Get("Location")
	_, key, ok := strings.Cut(loc, "#k=")
	if !ok || key == "" || !strings.HasPrefix(loc, "/") {
		t.Fatalf("the link redirected to %q: want a local path with the page key in its fragment (#k=KEY)", loc)
	}
	return cookies[0], key
}

// newLink asks the page for a fresh one-time link, as its "new tab" does.
func (p *pageClient) newLink() string {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.base+"/api/link", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(p.cookie)
	req.Header.Set(ui.HeaderPageKey, p.key)
	r, err := noRedirect.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer r.Body.Close()
	var v struct{ URL string }
	if err := json.NewDecoder(r.Body).Decode(&v); err != nil || r.StatusCode != http.StatusOK || !strings.HasPrefix(v.URL, p.base+"/t/") {
		p.t.Fatalf("POST /api/link: %d %+v %v", r.StatusCode, v, err)
	}
	return v.URL
}

// tokenOf is the secret of a link http://HOST/t/TOKEN/.
func tokenOf(link string) string {
	_, after, _ := strings.Cut(link, "/t/")
	return strings.TrimSuffix(after, "/")
}

// The printed link opens one tab once: the cookie it gives is not the
// link's token, and the link then opens nothing.
func TestLinkIsOneTime(t *testing.T) {
	d := testdaemon.Start(t)
	link := startInProcess(t, d.Socket)
	cookie, key := openLink(t, link)
	if cookie.Value == tokenOf(link) || key == tokenOf(link) || key == cookie.Value {
		t.Fatalf("the link's token %q, the cookie %q and the page key %q must be three secrets", tokenOf(link), cookie.Value, key)
	}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("the link used a second time answered %d with cookies %v: want 403 and none", resp.StatusCode, resp.Header["Set-Cookie"])
	}
	// A person followed it: a sentence in HTML saying what to do.
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("the refusal is %s, want an HTML page", ct)
	}
	for _, want := range []string{"already used", "Run orionctl ui again", "New tab"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the refusal does not say %q: %s", want, body)
		}
	}
	// A tab of the page mints another link, itself one-time.
	p := &pageClient{t: t, base: strings.TrimSuffix(link, "/t/"+tokenOf(link)+"/"), cookie: cookie, key: key}
	second := p.newLink()
	if _, key2 := openLink(t, second); key2 == key {
		t.Fatal("a second tab got the first one's key")
	}
	if resp, err := noRedirect.Get(second); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a minted link opened twice: %v %v", resp.StatusCode, err)
	}
	// Both tabs keep working.
	var page ui.Page
	if code := p.get("/api/sessions", &page); code != http.StatusOK {
		t.Fatalf("the first tab after the second opened: %d", code)
	}
}

// What the browser sends to any port of 127.0.0.1, the cookie, opens
// nothing on its own: every /api request needs the page key too.
func TestCookieAloneIsRefused(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d.Socket)
	target := filepath.Join(d.Root, "kept.txt")
	os.WriteFile(target, []byte("old\n"), 0o644)
	w, err := c.Write(context.Background(), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite}, Content: "new\n"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPageClient(t, startInProcess(t, d.Socket))
	replay(t, p.base, p.cookie, w.SessionID, target)
	// With the key, the same requests work.
	if code := p.get("/api/sessions", nil); code != http.StatusOK {
		t.Fatalf("cookie and key: %d", code)
	}
	for _, k := range []string{"", p.key + "x", p.cookie.Value} {
		req, _ := http.NewRequest("GET", p.base+"/api/sessions", nil)
		req.AddCookie(p.cookie)
		req.Header.Set(ui.HeaderPageKey, k)
		if r, err := noRedirect.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
			t.Errorf("page key %q: %v %v, want 403", k, r.StatusCode, err)
		}
	}
	req, _ := http.NewRequest("GET", p.base+"/api/sessions", nil)
	req.Header.Set(ui.HeaderPageKey, p.key)
	if r, err := noRedirect.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("the key without the cookie: %v %v, want 403", r.StatusCode, err)
	}
}

// replay sends what another local listener could, holding the cookie: it
// forges Host and Origin as the page's own, as a program can. Each is
// refused, and the undo is not done.
func replay(t *testing.T, base string, cookie *http.Cookie, session, target string) {
	t.Helper()
	before, _ := os.ReadFile(target)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/sessions", ""},
		{"GET", "/api/session?id=" + session, ""},
		{"GET", "/api/session/diff?id=" + session, ""},
		{"GET", "/api/events", ""},
		{"GET", "/api/trace/logs", ""},
		{"POST", "/api/undo", `{"session_id":"` + session + `"}`},
		{"POST", "/api/link", `{}`},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		req.Header.Set("Origin", base)
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.AddCookie(cookie)
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s with the cookie alone answered %d, want 403", c.method, c.path, r.StatusCode)
		}
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Fatalf("a request with the cookie alone changed %s: %q", target, after)
	}
}

// A link's redirect stays on this server, whatever follows the token.
func TestLinkRedirectStaysLocal(t *testing.T) {
	d := testdaemon.Start(t)
	p := newPageClient(t, startInProcess(t, d.Socket))
	for _, rest := range []string{"/evil.example", "//evil.example/x", "%2F%2Fevil.example", "/%5Cevil.example", "%09/evil.example", "..//evil.example", "./../../evil.example"} {
		t.Run(rest, func(t *testing.T) {
			resp, err := noRedirect.Get(p.newLink() + rest)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			u, err := url.Parse(loc)
			if resp.StatusCode != http.StatusSeeOther || err != nil || u.Host != "" || u.Scheme != "" ||
				!strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\\t") {
				t.Fatalf("redirected (%d) to %q: want one local path", resp.StatusCode, loc)
			}
		})
	}
}

// The diff reads the file the session wrote; an agent that puts a FIFO
// (or a link) in its place gets a refusal, not a request hung forever.
func TestDiffOfATargetNoLongerARegularFile(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d.Socket)
	p := newPageClient(t, startInProcess(t, d.Socket))
	// The page's server connects to the daemon on its own; until it has,
	// every request answers 503.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var pg struct{ Connected bool }
		if p.get("/api/sessions", &pg) == http.StatusOK && pg.Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the page's server did not connect to oriond within 20s")
		}
	}
	for _, kind := range []string{"fifo", "symlink"} {
		t.Run(kind, func(t *testing.T) {
			target := filepath.Join(d.Root, kind+".txt")
			os.WriteFile(target, []byte("old\n"), 0o644)
			w, err := c.Write(context.Background(), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite}, Content: "new\n"})
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(target)
			switch kind {
			case "fifo":
				if err := syscall.Mkfifo(target, 0o644); err != nil {
					t.Fatal(err)
				}
			case "symlink":
				secret := filepath.Join(t.TempDir(), "secret")
				os.WriteFile(secret, []byte("not for the page\n"), 0o600)
				os.Symlink(secret, target)
			}
			done := make(chan int, 1)
			var e struct{ Message, Reason string }
			go func() { done <- p.get("/api/session/diff?id="+w.SessionID, &e) }()
			select {
			case code := <-done:
				if code != http.StatusConflict || e.Reason != "target_not_regular" || !strings.Contains(e.Message, target) {
					t.Fatalf("the diff of a %s answered %d %+v, want 409 target_not_regular", kind, code, e)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the diff of a %s did not answer in 20s: it hangs", kind)
			}
		})
	}
}

// startUIOpening runs `orionctl ui` as a person does (it opens the
// browser), with a fake xdg-open that records the command line it is
// given and nothing else. It returns the printed URL, the recorded
// arguments and a stop function.
func startUIOpening(t *testing.T, socket string) (printed string, argv []string, stop func()) {
	t.Helper()
	bin := t.TempDir()
	record := filepath.Join(bin, "argv")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + record + ".tmp && mv " + record + ".tmp " + record + "\n"
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(testdaemon.Orionctl(t), "--socket", socket, "ui")
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_CONFIG=/dev/null", "PATH="+bin+":"+os.Getenv("PATH"), "XDG_RUNTIME_DIR="+t.TempDir(), "DISPLAY=:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }) }
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("orionctl ui printed no URL: %v", err)
	}
	go io.Copy(io.Discard, out)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(record)
		if err == nil {
			return strings.TrimSpace(line), strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), stop
		}
		if time.Now().After(deadline) {
			t.Fatal("orionctl ui never ran xdg-open")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var refresh = regexp.MustCompile(`http-equiv="refresh" content="0;url=([^"]+)"`)

// The browser is opened on a file only the person can read, never on the
// URL: a command line is world-readable. The file leads to a link of its
// own that works (in Chromium too), and goes when the server stops.
func TestOpenBrowserKeepsTheTokenOffTheCommandLine(t *testing.T) {
	d := testdaemon.Start(t)
	printed, argv, stop := startUIOpening(t, d.Socket)
	if len(argv) != 1 {
		t.Fatalf("xdg-open got %q: want one argument", argv)
	}
	if strings.Contains(argv[0], tokenOf(printed)) || strings.Contains(argv[0], "/t/") || strings.Contains(argv[0], "http") {
		t.Fatalf("xdg-open's command line carries a link: %q", argv[0])
	}
	file := strings.TrimPrefix(argv[0], "file://")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("the file is %v in a directory %v: want 0600 in 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	b, _ := os.ReadFile(file)
	m := refresh.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the file does not redirect: %s", b)
	}
	link := string(m[1])
	if link == printed || !strings.HasPrefix(link, strings.TrimSuffix(printed, tokenOf(printed)+"/")) {
		t.Fatalf("the file leads to %q: want a link of its own on the server that printed %q", link, printed)
	}

	// In a real browser: the file leads to the page, which goes live.
	ctx := newBrowser(t)
	run(t, ctx, "open the file", chromedp.Navigate("file://"+file))
	// Two navigations follow (the file's refresh, the link's): poll
	// through them, as a page context may vanish under a poll.
	for deadline := time.Now().Add(25 * time.Second); ; {
		live, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#conn')?.dataset.state === 'live' && document.querySelectorAll('#sessions tbody tr').length === 0 && document.querySelector('#count').textContent !== ''`))
		if live {
			break
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("the file never led to the live page: %.2000s", html)
		}
		time.Sleep(100 * time.Millisecond)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || strings.Contains(loc, "/t/") || strings.Contains(loc, "#k=") {
		t.Fatalf("the page's address keeps a secret: %q %v", loc, err)
	}
	// The printed link is the person's, still unused.
	openLink(t, printed)

	stop()
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file outlived the server: %v", err)
	}
}

// In Chromium: another server on another port of 127.0.0.1, visited by
// the person, receives the page's cookie (cookies are per host, not per
// port); it is not the link's token, and replayed it opens nothing.
func TestCookieLeakedToAnotherPortOpensNothing(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d.Socket)
	target := filepath.Join(d.Root, "kept.txt")
	os.WriteFile(target, []byte("old\n"), 0o644)
	w, err := c.Write(context.Background(), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite}, Content: "new\n"})
	if err != nil {
		t.Fatal(err)
	}
	pageURL := startUI(t, d.Socket)
	u, _ := url.Parse(pageURL)
	var mu sync.Mutex
	var got []*http.Cookie
	other := newLoopbackServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Cookies()...)
		mu.Unlock()
		rw.Header().Set("Content-Type", "text/html")
		// Its script tries the page's storage and API from its origin.
		io.WriteString(rw, `<!doctype html><script>
window.key = sessionStorage.getItem('orion-page-key');
</script>hello`)
	}))
	ctx := newBrowser(t)
	// Its target is outside any workspace: the list once failed to draw
	// when no session had one.
	run(t, ctx, "open the page", chromedp.Navigate(pageURL), visible(row(w.SessionID)))
	run(t, ctx, "visit another loopback server", chromedp.Navigate(other+"/"), waitJS(`window.key !== undefined`))
	key, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.key`))
	if err != nil || key != nil {
		t.Fatalf("the other origin read a page key: %v %v", key, err)
	}
	mu.Lock()
	cookies := got
	mu.Unlock()
	var leaked *http.Cookie
	for _, ck := range cookies {
		if strings.Contains(ck.Value, tokenOf(pageURL)) {
			t.Fatalf("the server on %s received the link's token in cookie %s", other, ck.Name)
		}
		if ck.Name == "orion_ui_"+u.Port() {
			leaked = ck
		}
	}
	if leaked == nil {
		t.Fatalf("the browser sent the other port no page cookie (%v): this test no longer shows the leak it guards against", cookies)
	}
	replay(t, "http://"+u.Host, leaked, w.SessionID, target)
	// The page, back in the same tab, still works with its key.
	run(t, ctx, "back to the page", chromedp.Navigate("http://"+u.Host+"/"),
		waitJS(`document.querySelector('#conn')?.dataset.state === 'live'`), visible(row(w.SessionID)))
}

// newLoopbackServer serves h on 127.0.0.1 (the page's host: another port).
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
