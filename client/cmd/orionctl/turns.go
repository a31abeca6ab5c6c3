package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// workspaceFlag is the workspace a turn command is about: --workspace,
// else the project holding the current directory (the nearest directory
// with a .git), else the current directory.
func workspaceFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "workspace", "", "the workspace directory (default: the project holding the current directory, else the current directory)")
}

func workspaceOf(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	if p := projectOf(wd); p != wd || hasGit(wd) {
		return p, nil
	}
	return wd, nil
}

func newTurnsCmd(g *globals) *cobra.Command {
	var ws string
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "turns",
		Short: "List the turns of agents in a workspace, newest first",
		Long: `List the turns recorded in a workspace, newest first: who worked, when, and
how many files changed, whoever wrote them (the agent's own tools, a shell, Orion).
"orionctl turn show ID" shows one with its files; "orionctl undo --turn ID" undoes it.`,
		Example: `  orionctl turns
  orionctl turns --workspace ~/src/app --limit 5`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := workspaceOf(ws)
			if err != nil {
				return err
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.TurnList(cmd.Context(), protocol.TurnListParams{WorkspaceRoot: root, Limit: limit, Cursor: cursor})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, res)
			}
			if len(res.Turns) == 0 {
				fmt.Fprintf(out, "no turns in %s\n", shown(root))
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TURN\tSTARTED\tAGENT\tSTATE\tFILES")
			for _, t := range res.Turns {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", shortID(t.TurnID), t.StartedAt.Local().Format(time.DateTime),
					termsafe.String(cmpOr(t.Agent, "-")), t.State, len(t.Files))
			}
			tw.Flush()
			if res.NextCursor != "" {
				fmt.Fprintf(out, "older turns: orionctl turns --cursor %s\n", res.NextCursor)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &ws)
	cmd.Flags().IntVar(&limit, "limit", 0, "turns per page (default 20, at most 200)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after a previous page")
	return cmd
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func newTurnCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turn",
		Short: "Inspect one turn",
	}
	var ws string
	var diffs bool
	show := &cobra.Command{
		Use:   "show TURN",
		Short: "Show a turn's files (and with --diff their changes)",
		Example: `  orionctl turn show 01938a7c
  orionctl turn show 01938a7c --diff`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveTurn(cmd, c, ws, args[0])
			if err != nil {
				return err
			}
			t, err := c.TurnGet(cmd.Context(), protocol.TurnGetParams{TurnID: id, Diffs: diffs})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, t)
			}
			printTurn(out, t)
			return nil
		},
	}
	workspaceFlag(show, &ws)
	show.Flags().BoolVar(&diffs, "diff", false, "show each file's unified diff")
	cmd.AddCommand(show)
	return cmd
}

func printTurn(out io.Writer, t protocol.TurnInfo) {
	fmt.Fprintf(out, "turn %s in %s\n", termsafe.String(t.TurnID), shown(t.WorkspaceRoot))
	fmt.Fprintf(out, "  agent %s, %s, started %s", termsafe.String(cmpOr(t.Agent, "-")), t.State, t.StartedAt.Local().Format(time.DateTime))
	if t.EndedAt != nil {
		fmt.Fprintf(out, ", ended %s", t.EndedAt.Local().Format(time.DateTime))
	}
	fmt.Fprintln(out)
	if t.Warning != "" {
		fmt.Fprintf(out, "  warning: %s\n", termsafe.String(t.Warning))
	}
	for _, f := range t.Files {
		name := termsafe.String(f.Path)
		if f.From != "" {
			name = termsafe.String(f.From) + " -> " + name
		}
		writer := "outside"
		if f.Writer != protocol.WriterOutside {
			writer = "session " + shortID(f.Writer)
		}
		fmt.Fprintf(out, "  %-8s %s (%s, by %s)", f.Kind, name, sizes(f), writer)
		if !f.Restorable {
			fmt.Fprintf(out, " not restorable: %s", termsafe.String(f.Note))
		}
		fmt.Fprintln(out)
		if f.Diff != "" {
			fmt.Fprint(out, termsafe.Text(f.Diff))
			if f.DiffTruncated {
				fmt.Fprintln(out, "  (diff cut)")
			}
		}
	}
}

func sizes(f protocol.TurnFile) string {
	switch {
	case f.BytesBefore < 0:
		return textfmt.Count(f.BytesAfter, "byte", "bytes")
	case f.BytesAfter < 0:
		return "was " + textfmt.Count(f.BytesBefore, "byte", "bytes")
	case f.Kind == protocol.ChangeMode:
		return f.ModeBefore + " -> " + f.ModeAfter
	}
	return fmt.Sprintf("%d -> %s", f.BytesBefore, textfmt.Count(f.BytesAfter, "byte", "bytes"))
}

// resolveTurn takes a turn id or a unique prefix of one among the
// workspace's newest turns, or "last".
func resolveTurn(cmd *cobra.Command, c *client.Client, wsFlag, arg string) (string, error) {
	if len(arg) == 36 {
		return arg, nil
	}
	root, err := workspaceOf(wsFlag)
	if err != nil {
		return "", err
	}
	res, err := c.TurnList(cmd.Context(), protocol.TurnListParams{WorkspaceRoot: root, Limit: protocol.MaxTurnListLimit})
	if err != nil {
		return "", err
	}
	var found []string
	for _, t := range res.Turns {
		if strings.HasPrefix(t.TurnID, arg) {
			found = append(found, t.TurnID)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no turn of %s starts with %q: orionctl turns lists them", root, arg)
	}
	return "", usageError{fmt.Errorf("%q names %d turns: give more of the id", arg, len(found))}
}

// turnUndoFlags are orionctl undo's flags for a turn: --turn and what
// goes with it.
type turnUndoFlags struct {
	id, workspace        string
	dryRun, allOrNothing bool
}

func (f *turnUndoFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.id, "turn", "", "undo a turn of an agent (an id, a prefix of one, or last): every file it changed, whoever wrote it, never over a later change")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "with --turn: the workspace directory (default: the current directory)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "with --turn: say what would be written, write nothing")
	cmd.Flags().BoolVar(&f.allOrNothing, "all-or-nothing", false, "with --turn: write nothing if any file would be left as it is")
}

func (f *turnUndoFlags) check(last bool, args []string) error {
	if f.id == "" {
		return usageError{errors.New("--workspace, --dry-run and --all-or-nothing go with --turn")}
	}
	if last || len(args) != 0 {
		return usageError{errors.New("--turn undoes a turn: give no SESSION, TX or --last with it")}
	}
	return nil
}

// runTurnUndo is orionctl undo --turn ID|last.
func runTurnUndo(cmd *cobra.Command, g *globals, turn, ws string, dryRun, allOrNothing bool) error {
	c, err := g.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	p := protocol.TurnUndoParams{DryRun: dryRun, AllOrNothing: allOrNothing}
	if turn == "last" {
		if p.WorkspaceRoot, err = workspaceOf(ws); err != nil {
			return err
		}
		p.Last = true
	} else if p.TurnID, err = resolveTurn(cmd, c, ws, turn); err != nil {
		return err
	}
	res, err := c.TurnUndo(cmd.Context(), p)
	if err != nil {
		return err
	}
	return printOperation(cmd, g, "undo", res)
}

func newRedoCmd(g *globals) *cobra.Command {
	var ws string
	var dryRun, allOrNothing bool
	cmd := &cobra.Command{
		Use:   "redo [OPERATION]",
		Short: "Take back an undo of a turn (the last one by default)",
		Long: `Take back an undo of a turn, under the same rules as the undo: a file
changed since the undo keeps that change (merged), or is left as it is and
reported where the changes overlap. Without OPERATION, the workspace's last
undo not redone yet.`,
		Example: `  orionctl redo
  orionctl redo 01938a7f-...`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("give at most one OPERATION")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			p := protocol.TurnRedoParams{DryRun: dryRun, AllOrNothing: allOrNothing}
			if len(args) == 1 {
				p.OperationID = args[0]
			} else {
				p.Last = true
				if p.WorkspaceRoot, err = workspaceOf(ws); err != nil {
					return err
				}
			}
			res, err := c.TurnRedo(cmd.Context(), p)
			if err != nil {
				return err
			}
			return printOperation(cmd, g, "redo", res)
		},
	}
	workspaceFlag(cmd, &ws)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be written, write nothing")
	cmd.Flags().BoolVar(&allOrNothing, "all-or-nothing", false, "write nothing if any file would be left as it is")
	return cmd
}

// errRefused is an all-or-nothing undo that wrote nothing: exit 1.
var errRefused = errors.New("nothing was written: some files would be left as they are (listed above); run without --all-or-nothing to undo the rest")

func printOperation(cmd *cobra.Command, g *globals, what string, res protocol.TurnUndoResult) error {
	out := cmd.OutOrStdout()
	if g.json {
		if err := printJSON(out, res); err != nil {
			return err
		}
		if res.Refused {
			return errRefused
		}
		return nil
	}
	switch {
	case res.DryRun:
		fmt.Fprintf(out, "%s of turn %s (dry run, nothing written):\n", what, shortID(res.TurnID))
	default:
		fmt.Fprintf(out, "%s of turn %s, operation %s:\n", what, shortID(res.TurnID), termsafe.String(res.OperationID))
	}
	left := 0
	for _, f := range res.Files {
		fmt.Fprintf(out, "  %-14s %s", f.Outcome, termsafe.String(f.Path))
		if f.Reason != "" {
			fmt.Fprintf(out, ": %s", termsafe.String(f.Reason))
		}
		fmt.Fprintln(out)
		for _, h := range f.Hunks {
			fmt.Fprintf(out, "    lines %d-%d: the turn's\n%s    now\n%s", h.BaseStart, h.BaseEnd, indent(h.Base), indent(h.Ours))
		}
		if f.Outcome == protocol.UndoLeft || f.Outcome == protocol.UndoNotRestorable {
			left++
		}
	}
	if res.Refused {
		return errRefused
	}
	if left > 0 && !res.DryRun {
		fmt.Fprintf(out, "%s left as they are; nothing of the person's later work was overwritten\n", textfmt.Count(left, "file", "files"))
	}
	if what == "undo" && !res.DryRun && res.OperationID != "" {
		fmt.Fprintf(out, "take it back: orionctl redo %s\n", termsafe.String(res.OperationID))
	}
	return nil
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("      " + termsafe.String(strings.TrimSuffix(l, "\n")) + "\n")
	}
	return b.String()
}

func newCheckpointCmd(g *globals) *cobra.Command {
	var ws, label string
	var pin bool
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Record the workspace now: a checkpoint of your own",
		Long: `Record the state of the workspace's files now. Turns of agents take their
own checkpoints; take one yourself before something you may want to compare
with or keep (--pin keeps it past --checkpoint-retention).`,
		Example: `  orionctl checkpoint --label "before the refactor" --pin`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := workspaceOf(ws)
			if err != nil {
				return err
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.CheckpointCreate(cmd.Context(), protocol.CheckpointCreateParams{WorkspaceRoot: root, Label: label, Pin: pin})
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "checkpoint %s of %s: %s, %s changed, %s stored\n", termsafe.String(res.CheckpointID),
				shown(res.WorkspaceRoot), textfmt.Count(res.Files, "file", "files"), textfmt.Count(res.Changed, "file", "files"),
				textfmt.Count(res.StoredBytes, "byte", "bytes"))
			return nil
		},
	}
	workspaceFlag(cmd, &ws)
	cmd.Flags().StringVar(&label, "label", "", "a name for the checkpoint")
	cmd.Flags().BoolVar(&pin, "pin", false, "keep it past --checkpoint-retention and --store-max-bytes")
	return cmd
}
