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
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	g.socketFlag = root.PersistentFlags().Changed("socket")
	if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own error, with its "did you mean" lines: a usage error.
		if !strings.Contains(err.Error(), "Did you mean") {
			err = fmt.Errorf("%w; `orionctl --help` lists the commands", err)
		}
		err = usageError{err}
	}
	err = forPerson(ctx, g, err)
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
	// socketFlag is true when --socket was given.
	socketFlag bool
	// implicit is the current directory a command sent as the workspace
	// root of a relative TARGET.
	implicit implicitWorkspace
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
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{suggestFlag(cmd, err)} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", client.DefaultSocket(), "oriond's Unix socket [ORION_SOCKET]")
	pf.BoolVar(&g.json, "json", false, "print machine-readable JSON instead of text")
	root.AddCommand(
		newStatusCmd(g),
		newAllowCmd(g),
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

// exactArgs is cobra.ExactArgs with a usage error (exit code 2) that
// names the arguments as the command's usage line does.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		names := strings.Fields(cmd.Use)[1:]
		for len(names) < n {
			names = append(names, "ARG")
		}
		usage := "usage: " + cmd.UseLine()
		what := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		switch {
		case n == 0:
			return usageError{fmt.Errorf("%s takes no arguments, got %q (%s)", what, args, usage)}
		case len(args) < n:
			return usageError{fmt.Errorf("%s is missing %s (%s)", what, strings.Join(names[len(args):n], " "), usage)}
		default:
			return usageError{fmt.Errorf("%s takes %s, got %d arguments: %q (%s)", what, strings.Join(names[:n], " "), len(args), args, usage)}
		}
	}
}

// suggestFlag adds "did you mean" to an unknown flag error, with the
// flag of cmd whose name is closest.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(name, f.Name)
		if strings.HasPrefix(name, f.Name) || strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
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
func (g *globals) workspaceFor(target, given string) (string, error) {
	if given != "" || filepath.IsAbs(target) {
		return given, nil
	}
	wd, err := os.Getwd()
	if err == nil {
		g.implicit = implicitWorkspace{target: target, dir: wd}
	}
	return wd, err
}
