package ui_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A turn whose files a shell changed (no Orion session), on the page: its
// files and diff are listed, the undo's confirmation names every file and
// what happens to it, the undo puts them back, and Redo brings the turn
// back.
func TestPageUndoesATurn(t *testing.T) {
	d := testdaemon.Start(t)
	ws := filepath.Join(d.Root, "proj")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "one\n")
	write("b.txt", "bee\n")
	c := dial(t, d.Socket)
	ctx := context.Background()
	tb, err := c.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "test-agent"})
	if err != nil {
		t.Fatal(err)
	}
	write("a.txt", "one\ntwo\n")
	write("c.txt", "new\n")
	if err := os.Remove(filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TurnEnd(ctx, tb.TurnID); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		for name, content := range want {
			got, err := os.ReadFile(filepath.Join(ws, name))
			switch {
			case content == "" && err == nil:
				t.Errorf("%s: %s exists, want it gone", when, name)
			case content != "" && string(got) != content:
				t.Errorf("%s: %s is %q (%v), want %q", when, name, got, err, content)
			}
		}
	}

	url := startUI(t, d.Socket)
	bctx := newBrowser(t)
	run(t, bctx, "open the turns", chromedp.Navigate(url), visible("#tab-turns"), click("#tab-turns"),
		chromedp.SetValue(chromedp.CSS("#tn-workspace"), ws), click("#tn-filters button[type=submit]"),
		waitText("#turns tbody", "test-agent"))
	run(t, bctx, "the turn's files and diff", click("#turns tbody tr"),
		waitText("#tn-files", "a.txt — modified"), waitText("#tn-files", "+two"),
		waitText("#tn-files", "b.txt — deleted"), waitText("#tn-files", "c.txt — created"))
	screenshot(t, bctx, "ui-turns")
	run(t, bctx, "the confirmation names the files", click("#tn-undo"),
		waitText("#tn-ask-files", "c.txt: removed (the turn created it)"),
		waitText("#tn-ask-files", "b.txt: put back (the turn deleted it)"),
		waitText("#tn-ask-files", "a.txt: its content before the turn put back"))
	check("before confirming", map[string]string{"a.txt": "one\ntwo\n", "c.txt": "new\n", "b.txt": ""})
	run(t, bctx, "undo", click("#tn-ask-yes"), waitText("#tn-result", "undid the turn: 3 reverted"))
	check("after the undo", map[string]string{"a.txt": "one\n", "b.txt": "bee\n", "c.txt": ""})
	run(t, bctx, "redo", visible("#tn-redo"), click("#tn-redo"), visible("#tn-ask-yes"), click("#tn-ask-yes"),
		waitText("#tn-result", "redid the turn: 3 reverted"))
	check("after the redo", map[string]string{"a.txt": "one\ntwo\n", "c.txt": "new\n", "b.txt": ""})
}
