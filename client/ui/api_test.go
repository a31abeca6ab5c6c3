package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/ui"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func TestListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0", "127.0.0.1"} {
		if s, err := ui.New(ui.Config{Listen: addr}); err == nil {
			t.Errorf("--listen %s was accepted (%s)", addr, s.URL())
		}
	}
	s, err := ui.New(ui.Config{Listen: "[::1]:0"})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	if !strings.HasPrefix(s.URL(), "http://[::1]:") || !strings.Contains(s.URL(), "/t/") {
		t.Errorf("URL %s", s.URL())
	}
}

// startInProcess serves the page from this test's process (so the race
// detector sees the server and its hub) and returns its URL.
func startInProcess(t *testing.T, socket string) string {
	t.Helper()
	s, err := ui.New(ui.Config{Socket: socket})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s.URL()
}

// pageClient is an HTTP client of the page holding its cookie and page
// key, as a tab of the page does.
type pageClient struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	key    string
}

func newPageClient(t *testing.T, pageURL string) *pageClient {
	u, _ := url.Parse(pageURL)
	cookie, key := openLink(t, pageURL)
	return &pageClient{t: t, base: "http://" + u.Host, cookie: cookie, key: key}
}

func (p *pageClient) get(path string, v any) int {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.base+path, nil)
	req.AddCookie(p.cookie)
	req.Header.Set(ui.HeaderPageKey, p.key)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			p.t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	return r.StatusCode
}

// GET /api/trace/logs filters by workspace, type, source, session and
// since, as docs/ui.md documents.
func TestTraceLogsAPI(t *testing.T) {
	d := testdaemon.Start(t)
	p := newPageClient(t, startInProcess(t, d.Socket))
	c := dial(t, d.Socket)
	bg := context.Background()
	other := filepath.Join(d.Root, "other")
	os.Mkdir(other, 0o755)
	w, err := c.Write(bg, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "a.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}, Content: "a\n"})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := c.Write(bg, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "b.txt", WorkspaceRoot: other, Operation: protocol.OpCreate}, Content: "b\n"})
	if err != nil {
		t.Fatal(err)
	}
	// The page learns of sessions from their trace events, once a second.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page ui.Page
		p.get("/api/sessions", &page)
		if page.Total == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	type logs struct {
		Events []protocol.TraceEvent `json:"events"`
		More   bool                  `json:"more"`
		Next   string                `json:"next"`
	}
	query := func(q string) logs {
		t.Helper()
		var l logs
		if code := p.get("/api/trace/logs?"+q, &l); code != http.StatusOK {
			t.Fatalf("GET /api/trace/logs?%s: %d", q, code)
		}
		return l
	}
	t.Run("Type", func(t *testing.T) {
		l := query("type=session.write")
		if len(l.Events) != 2 {
			t.Fatalf("%d session.write events, want 2", len(l.Events))
		}
	})
	t.Run("Workspace", func(t *testing.T) {
		l := query("type=session.write&workspace=" + url.QueryEscape(other))
		if len(l.Events) != 1 || l.Events[0].SessionID != w2.SessionID {
			t.Fatalf("workspace filter: %+v", l.Events)
		}
	})
	t.Run("Session", func(t *testing.T) {
		for _, ev := range query("session=" + w.SessionID).Events {
			if ev.SessionID != w.SessionID {
				t.Fatalf("an event of another session: %+v", ev)
			}
		}
	})
	t.Run("Source", func(t *testing.T) {
		daemon, client := query("source=daemon&session="+w.SessionID), query("source=client&session="+w.SessionID)
		if len(daemon.Events) == 0 || len(client.Events) == 0 {
			t.Fatalf("daemon %d, client %d events", len(daemon.Events), len(client.Events))
		}
		for _, ev := range daemon.Events {
			if ev.Type == protocol.TraceRequest {
				t.Errorf("a request among the daemon's own events: %+v", ev)
			}
		}
		for _, ev := range client.Events {
			if ev.Type != protocol.TraceRequest {
				t.Errorf("a %s event among the clients' requests", ev.Type)
			}
		}
	})
	t.Run("SinceAndPaging", func(t *testing.T) {
		if l := query("since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(l.Events) != 0 {
			t.Fatalf("%d events from the future", len(l.Events))
		}
		all := query("since=10m")
		first := query("since=10m&limit=1")
		if len(all.Events) < 2 || len(first.Events) != 1 || !first.More || first.Next == "" {
			t.Fatalf("paging: %d events; first page %+v", len(all.Events), first)
		}
		second := query("since=10m&limit=1&after=" + first.Next)
		if len(second.Events) != 1 || second.Events[0].ID != all.Events[1].ID {
			t.Fatalf("the second page %+v, want %s", second.Events, all.Events[1].ID)
		}
	})
	t.Run("BadParameters", func(t *testing.T) {
		for _, q := range []string{"since=yesterday", "source=model", "limit=0", "limit=100000"} {
			var e struct{ Message, Reason string }
			if code := p.get("/api/trace/logs?"+q, &e); code != http.StatusBadRequest || e.Message == "" {
				t.Errorf("%s: %d %+v, want 400 with a message", q, code, e)
			}
		}
	})
}

// A daemon that does not trace still has its sessions listed: the page
// reads the list every few seconds instead of following events.
func TestListWithoutTracing(t *testing.T) {
	d := testdaemon.Start(t, "--trace=false")
	p := newPageClient(t, startInProcess(t, d.Socket))
	c := dial(t, d.Socket)
	w, err := c.Write(context.Background(), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "a.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}, Content: "a\n"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page ui.Page
		p.get("/api/sessions", &page)
		if page.Connected && page.Total == 1 && page.Sessions[0].SessionID == w.SessionID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never listed the session: %+v", page)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
