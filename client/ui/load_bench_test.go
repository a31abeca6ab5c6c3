package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/ui"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestPageLoad10000Sessions measures the page with 10,000 sessions in the
// store and logs the figures (no assertion on time): the time from
// navigating to the first page of rows drawn in Chromium, and the bytes
// of the page and of its first list answer. It takes a while, so it runs
// only when asked:
//
//	ORION_UI_LOAD=1 go test ./client/ui -run PageLoad10000 -v
func TestPageLoad10000Sessions(t *testing.T) {
	if os.Getenv("ORION_UI_LOAD") == "" {
		t.Skip("a measurement: set ORION_UI_LOAD=1 to run it")
	}
	ctx := newBrowser(t)
	d := testdaemon.Start(t)
	const sessions, workers = 10_000, 16
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(context.Background(), d.Socket, client.Options{})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := w; i < sessions; i += workers {
				_, err := c.Write(context.Background(), protocol.WriteParams{
					BeginParams: protocol.BeginParams{TargetFile: fmt.Sprintf("f%05d.txt", i), WorkspaceRoot: d.Root, Operation: protocol.OpCreate},
					Content:     "line\n"})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("wrote %d sessions in %v", sessions, time.Since(start).Round(time.Millisecond))

	pageURL := startUI(t, d.Socket)
	u, _ := url.Parse(pageURL)
	base := "http://" + u.Host
	p := newPageClient(t, pageURL)
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(p.cookie)
		req.Header.Set(ui.HeaderPageKey, p.key)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return b
	}
	static := len(get("/")) + len(get("/static/app.js")) + len(get("/static/style.css"))
	// The hub lists every session once it connects.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(string(get("/api/sessions?limit=1")), fmt.Sprintf(`"total":%d`, sessions)) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	list := len(get("/api/sessions"))
	t.Logf("page: %d bytes of HTML, JS and CSS; first list answer (100 of %d sessions): %d bytes", static, sessions, list)

	last := fmt.Sprintf(`document.querySelectorAll('#sessions tbody tr').length === 100 && document.querySelector('#count').textContent.includes('of %d')`, sessions)
	for i := range 3 {
		began := time.Now()
		// Each link opens one tab, once.
		run(t, ctx, "load", chromedp.Navigate(p.newLink()), waitJS(last))
		t.Logf("load %d: first 100 of %d rows drawn %v after navigating", i+1, sessions, time.Since(began).Round(time.Millisecond))
	}
	began := time.Now()
	run(t, ctx, "filter", chromedp.SetValue(chromedp.CSS("#f-text"), "f09999"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#f-text').dispatchEvent(new Event('input'))`),
		waitJS(`document.querySelectorAll('#sessions tbody tr').length === 1`))
	t.Logf("text filter over %d sessions: %v", sessions, time.Since(began).Round(time.Millisecond))
}
