package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

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
what it wrote, with undo, abort and finalize-anyway. The URL carries a random token;
open it in your browser (orionctl ui opens it unless --no-open). Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(termsafe.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			s, err := ui.New(ui.Config{Socket: g.socket, Listen: listen, Logger: log})
			if err != nil {
				return usageError{err}
			}
			// The URL alone on stdout, for scripts and tests.
			fmt.Fprintln(cmd.OutOrStdout(), s.URL())
			if !noOpen {
				if err := openBrowser(s.URL()); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "orionctl ui: could not open a browser (%v); open the URL above\n", err)
				}
			}
			return s.Serve(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "loopback address to serve the page on")
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the URL without opening a browser")
	return cmd
}

// openBrowser starts the person's browser on url and does not wait for it.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	c := exec.CommandContext(context.Background(), name, url)
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait()
	return nil
}
