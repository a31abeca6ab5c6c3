package main

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/ui"
	"github.com/orion-agent/orion/internal/termsafe"
)

func newUICmd(g *globals) *cobra.Command {
	var (
		listen string
		noOpen bool
	)
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local page to watch, inspect and undo what agents write",
		Long: `Serve a page on loopback that shows oriond's sessions live (streaming, written,
in conflict, ...), each one's trace ladder, its content as it arrives and the diff of
what it wrote, with undo, abort and finalize-anyway. The URL carries a one-time
token: it opens one tab, once (the page's "New tab" makes another link). orionctl ui
opens the page in your browser unless --no-open. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stderr := cmd.ErrOrStderr()
			log := slog.New(termsafe.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			s, err := ui.New(ui.Config{Socket: g.socket, Listen: listen, Logger: log})
			if err != nil {
				return usageError{err}
			}
			// What to do on stderr; the URL alone on stdout's first line,
			// for scripts.
			fmt.Fprintln(stderr, "Open this address in a browser on this machine (it opens one tab, once; the page's New tab makes another):")
			fmt.Fprintln(cmd.OutOrStdout(), s.URL())
			switch why := noBrowser(os.Getenv); {
			case noOpen:
			case why != "":
				fmt.Fprintf(stderr, "No browser opened: %s. Open the address above yourself.\n", why)
			default:
				// The browser gets a link of its own: the printed one
				// stays unused for the person, and each opens one tab.
				remove, err := openBrowser(s.NewLink(), func(err error) {
					fmt.Fprintf(stderr, "The browser did not open (%v). Open the address above yourself.\n", err)
				})
				if err != nil {
					fmt.Fprintf(stderr, "Could not open a browser (%v). Open the address above yourself.\n", err)
				}
				defer remove()
			}
			if err := checkDaemon(cmd.Context(), s.Socket()); err != nil {
				fmt.Fprintf(stderr, "oriond does not answer at %s (%v). If it is not running, start it with `%s`;"+
					" the page says so too, and connects by itself once it answers.\n",
					termsafe.String(s.Socket()), termsafe.String(err.Error()), termsafe.String(client.StartCommand(s.Socket())))
			}
			fmt.Fprintln(stderr, "Serving the page until Ctrl-C.")
			return s.Serve(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "loopback address to serve the page on")
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the URL without opening a browser")
	return cmd
}

// checkDaemon reports whether oriond answers on socket, within a moment.
func checkDaemon(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, socket, client.Options{})
	if err != nil {
		return err
	}
	return c.Close()
}

// noBrowser says why no browser can be opened here, or "": on Linux and
// the BSDs xdg-open needs a graphical session, and without one may start
// a text browser in this very terminal.
func noBrowser(getenv func(string) string) string {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return ""
	}
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return "no graphical session here (DISPLAY and WAYLAND_DISPLAY are unset)"
	}
	return ""
}

// openBrowser starts the person's browser on url and does not wait for it;
// failed is called if the opener exits with an error.
//
// A command line is world-readable (/proc/PID/cmdline, ps), both
// xdg-open's and the browser's, so the URL, which carries the token,
// never goes on one. As Jupyter does, it goes in an HTML file only the
// person can read (0600, in a fresh 0700 directory) that redirects the
// browser to it, and the browser is given the file's path. remove deletes
// the file; call it when the server stops.
func openBrowser(url string, failed func(error)) (remove func(), err error) {
	remove = func() {}
	base := os.Getenv("XDG_RUNTIME_DIR") // per user, 0700, on tmpfs
	if fi, err := os.Stat(base); base == "" || err != nil || !fi.IsDir() {
		base = "" // os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "orion-ui-") // 0700
	if err != nil {
		return remove, err
	}
	remove = func() { os.RemoveAll(dir) }
	page := filepath.Join(dir, "open.html")
	esc := html.EscapeString(url)
	body := `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=` + esc +
		`"><title>orionctl ui</title><p>Opening <a href="` + esc + `">the page of orionctl ui</a>…</p>` + "\n"
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		return remove, err
	}
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	c := exec.CommandContext(context.Background(), name, page)
	if err := c.Start(); err != nil {
		return remove, err
	}
	go func() {
		if err := c.Wait(); err != nil {
			failed(fmt.Errorf("%s: %w", name, err))
		}
	}()
	return remove, nil
}
