package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client/ui"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A request with a foreign Host, a foreign Origin or no token is refused,
// and changes nothing: the undo it asked for is not done.
func TestForeignRequestsAreRefused(t *testing.T) {
	d := testdaemon.Start(t)
	pageURL := startUI(t, d.Socket)
	c := dial(t, d.Socket)
	bg := context.Background()
	target := filepath.Join(d.Root, "kept.txt")
	os.WriteFile(target, []byte("old\n"), 0o644)
	w, err := c.Write(bg, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite}, Content: "new\n"})
	if err != nil {
		t.Fatal(err)
	}

	u, _ := url.Parse(pageURL)
	base := "http://" + u.Host
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookie, key := openLink(t, pageURL)
	undoBody := `{"session_id":"` + w.SessionID + `"}`

	send := func(method, path, host, origin, body string, withCookie bool) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if withCookie {
			req.AddCookie(cookie)
			req.Header.Set(ui.HeaderPageKey, key)
		}
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s answered with a CORS header", method, path)
		}
		return r.StatusCode
	}
	for _, c := range []struct {
		name, method, path, host, origin, body string
		cookie                                 bool
	}{
		{"NoToken", "POST", "/api/undo", "", "", undoBody, false},
		{"NoTokenRead", "GET", "/api/sessions", "", "", "", false},
		{"WrongTokenInPath", "GET", "/t/" + strings.Repeat("x", 32) + "/", "", "", "", false},
		{"ForeignHost", "POST", "/api/undo", "evil.example:" + u.Port(), "", undoBody, true},
		{"ForeignHostRead", "GET", "/api/session/diff?id=" + w.SessionID, "evil.example:" + u.Port(), "", "", true},
		{"ForeignOrigin", "POST", "/api/undo", "", "http://evil.example", undoBody, true},
		{"OtherLocalOrigin", "POST", "/api/undo", "", "http://127.0.0.1:1", undoBody, true},
		{"NullOrigin", "POST", "/api/undo", "", "null", undoBody, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := send(c.method, c.path, c.host, c.origin, c.body, c.cookie); got != http.StatusForbidden {
				t.Errorf("answered %d, want 403", got)
			}
		})
	}
	t.Run("FormPostIsNotJSON", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/api/undo", strings.NewReader("session_id="+w.SessionID))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		req.Header.Set(ui.HeaderPageKey, key)
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("a form post answered %d, want 415", r.StatusCode)
		}
	})
	t.Run("UndoByGetIsNotAnAction", func(t *testing.T) {
		if got := send("GET", "/api/undo?session_id="+w.SessionID, "", "", "", true); got != http.StatusMethodNotAllowed {
			t.Errorf("GET /api/undo answered %d, want 405", got)
		}
	})
	if got, _ := os.ReadFile(target); string(got) != "new\n" {
		t.Fatalf("a refused request changed the file: %q", got)
	}
	if info, _ := c.Get(bg, w.SessionID); info.Undone {
		t.Fatal("a refused request undid the session")
	}
	// The same request from the page's own origin, with its cookie and
	// key, works.
	if got := send("POST", "/api/undo", "", base, undoBody, true); got != http.StatusOK {
		t.Fatalf("the page's own undo answered %d", got)
	}
	if got, _ := os.ReadFile(target); string(got) != "old\n" {
		t.Fatalf("the page's own undo left %q", got)
	}
}
