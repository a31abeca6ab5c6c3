// Command oriond is the Orion write-session daemon: it journals content that
// LLM agents stream to it and writes files atomically.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(os.Getenv)
	if err := root.ExecuteContext(ctx); err != nil {
		if strings.HasPrefix(err.Error(), "unknown command ") {
			// cobra's own error, with its "did you mean" lines.
			err = usageError{err}
		}
		fmt.Fprintln(os.Stderr, "oriond:", err)
		var ue usageError
		var sue service.UsageError
		var ee service.ExitError
		switch {
		case errors.As(err, &ue), errors.As(err, &sue):
			os.Exit(2)
		case errors.As(err, &ee):
			os.Exit(ee.Code)
		}
		os.Exit(1)
	}
}

// usageError marks errors in how oriond was invoked, for exit code 2.
type usageError struct{ error }

func newRootCmd(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "oriond",
		Short: "The Orion write-session daemon",
		Long: `oriond lets an LLM agent write large files reliably. The model makes one small
WritePlanTool_begin call, streams the content as plain text and ends it with a
session-specific marker line; a client forwards the text to oriond over a Unix
socket, oriond journals every chunk durably before acknowledging it and, on the
marker, writes the file atomically.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addConfigFlag(root, getenv)
	root.AddCommand(newRunCmd(getenv), newServiceCmd(getenv), newConfigCmd(getenv))
	return root
}
