// Command orionctl talks to oriond: it writes files through write sessions,
// inspects sessions and prints the tool definition agents give their model.
//
// Exit codes: 0 success, 1 the daemon refused or an I/O error, 2 usage
// error, 3 the daemon is not reachable.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/protocol"
)

// Exit codes scripts can rely on.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one orionctl invocation with swappable streams, so tests
// drive the real command tree.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce childExit
	if errors.As(err, &ce) {
		// orionctl exec: the command's own status, its own messages.
		return ce.code
	}
	code := exitCode(err)
	// A flag error stops parsing before --json is read.
	if g.json || slices.Contains(args, "--json") {
		printErrorJSON(stderr, err, code)
	} else {
		// An error may quote a target, an intent or a daemon's message:
		// each line is shown inert.
		fmt.Fprintln(stderr, "orionctl:", termsafe.Text(err.Error()))
	}
	return code
}

// exitCode maps an error to the exit code scripts rely on.
func exitCode(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, client.ErrDaemonUnreachable):
		return exitUnreachable
	default:
		return exitFailure
	}
}

type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// globals are the flags every command shares.
type globals struct {
	socket string
	json   bool
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "orionctl",
		Short: "Control oriond, the Orion write-session daemon",
		Long: `orionctl writes files through oriond's durable write sessions and inspects them.

  orionctl write notes.md < draft.md         write a file from stdin
  orionctl sessions list                     what is open
  orionctl tools                             the WritePlanTool_begin definition for agents`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", client.DefaultSocket(), "oriond's Unix socket [ORION_SOCKET]")
	pf.BoolVar(&g.json, "json", false, "print machine-readable JSON instead of text")
	root.AddCommand(
		newStatusCmd(g),
		newWriteCmd(g),
		newBeginCmd(g),
		newAppendCmd(g),
		newFinalizeCmd(g),
		newAbortCmd(g),
		newUndoCmd(g),
		newTxCmd(g),
		newSessionsCmd(g),
		newToolsCmd(g),
		newUICmd(g),
		newStreamCmd(g),
		newTraceCmd(g),
		newProxyCmd(g),
		newExecCmd(g),
		newMCPCmd(g),
		newTurnsCmd(g),
		newTurnCmd(g),
		newRedoCmd(g),
		newCheckpointCmd(g),
	)
	return root
}

// dial connects with the command's context and socket.
func (g *globals) dial(cmd *cobra.Command) (*client.Client, error) {
	return client.Dial(cmd.Context(), g.socket, client.Options{})
}

// printJSON writes v as indented JSON, the --json output of every command,
// with <, > and & as they are (a person reads it too).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exactArgs is cobra.ExactArgs with a usage error, for exit code 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func parseOp(op string) (protocol.Operation, error) {
	for _, known := range protocol.Operations {
		if protocol.Operation(op) == known {
			return known, nil
		}
	}
	return "", usageError{fmt.Errorf("--op %q: use one of %v", op, protocol.Operations)}
}

// workspaceFor is the workspace root sent with a relative TARGET: the one
// given, else the current directory. An absolute TARGET needs none.
func workspaceFor(target, given string) (string, error) {
	if given != "" || filepath.IsAbs(target) {
		return given, nil
	}
	return os.Getwd()
}
