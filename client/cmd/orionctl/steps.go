package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// The step-by-step commands expose each protocol call, for scripts and for
// seeing what an agent's client does.

func newBeginCmd(g *globals) *cobra.Command {
	var op, intent, workspace, spec, supersedes string
	var mustExist, quiet bool
	cmd := &cobra.Command{
		Use:   "begin TARGET",
		Short: "Open a write session and print its id and end marker",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			operation, err := parseOp(op)
			if err != nil {
				return err
			}
			if workspace, err = g.workspaceFor(args[0], workspace); err != nil {
				return err
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			if supersedes, err = resolveSession(cmd.Context(), c, supersedes); err != nil {
				return err
			}
			res, err := c.Begin(cmd.Context(), protocol.BeginParams{
				Intent: intent, TargetFile: args[0], Operation: operation, WorkspaceRoot: workspace,
				PatchSpec: patchSpec(spec), MustExist: mustExist, Supersedes: supersedes,
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, res)
			}
			if quiet {
				fmt.Fprintln(out, termsafe.String(res.SessionID))
				return nil
			}
			fmt.Fprintf(out, "session:     %s\ntarget:      %s (%s)\nend marker:  %s\n\n%s\n",
				termsafe.String(res.SessionID), termsafe.String(res.TargetFile), termsafe.String(string(res.Operation)),
				termsafe.String(res.EndMarker), termsafe.Text(res.Instructions))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&op, "op", string(protocol.OpCreate), "operation: create, overwrite, append, patch or edit")
	f.StringVar(&intent, "intent", "orionctl begin", "what this write is for")
	f.StringVar(&workspace, "workspace-root", "", "directory a relative TARGET resolves against (default: current directory)")
	f.StringVar(&spec, "patch-spec", "", `for --op patch: where the text goes, as JSON, e.g. '{"type":"insert_after_line","line":12}'`)
	f.BoolVar(&mustExist, "must-exist", false, "refuse unless TARGET exists")
	f.StringVar(&supersedes, "supersedes", "", "the session (needs_corrections) this one corrects")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the session id, for scripts")
	return cmd
}

func newAppendCmd(g *globals) *cobra.Command {
	var seq uint64
	var chunkSize int
	cmd := &cobra.Command{
		Use:   "append SESSION",
		Short: "Append stdin to a session, continuing after its last acknowledged chunk",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			id, err := resolveSession(ctx, c, args[0])
			if err != nil {
				return err
			}
			if seq == 0 {
				info, err := c.Get(ctx, id)
				if err != nil {
					return err
				}
				seq = info.LastSeq + 1
			}
			last, n, err := c.Stream(ctx, id, cmd.InOrStdin(), client.StreamOptions{ChunkSize: chunkSize, FirstSeq: seq})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, last)
			}
			marker := "not seen yet"
			if last.EndMarkerSeen {
				marker = "seen"
			}
			fmt.Fprintf(out, "appended %s; session %s now %s, %s; end marker %s\n",
				textfmt.Count(int64(n), "chunk", "chunks"), termsafe.String(shortID(id)), textfmt.Count(last.Bytes, "byte", "bytes"), textfmt.Count(last.Lines, "line", "lines"), marker)
			return nil
		},
	}
	cmd.Flags().Uint64Var(&seq, "seq", 0, "seq of the first chunk (default: one after the last acknowledged)")
	cmd.Flags().IntVar(&chunkSize, "chunk-size", client.DefaultChunkSize, "bytes per chunk")
	return cmd
}

func newFinalizeCmd(g *globals) *cobra.Command {
	var endOfInput, dryRun, force bool
	cmd := &cobra.Command{
		Use:   "finalize SESSION",
		Short: "Write a session's content to its target",
		Long: `Write a session's content to its target atomically. The content must have
ended with the session's end marker, unless --end-of-input says the input
simply ended (a file or a pipe, not a model's stream).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveSession(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			res, err := c.Finalize(cmd.Context(), protocol.FinalizeParams{SessionID: id, EndOfInput: endOfInput, DryRun: dryRun, Force: force})
			if err != nil {
				return finalizeRefusal(cmd, c, id, err)
			}
			if err := printSummary(cmd, g, res); err != nil {
				return err
			}
			if dryRun {
				return dryRunRefusal(res, nextDryRun)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&endOfInput, "end-of-input", false, "the content is complete without an end marker")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "repair and validate, print the diff, write nothing")
	cmd.Flags().BoolVar(&force, "force", false, "write even if the target changed since the session began")
	return cmd
}

func newAbortCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "abort SESSION",
		Short: "Discard a session and its content",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveSession(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			res, err := c.Abort(cmd.Context(), id)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "session %s %s\n", termsafe.String(res.SessionID), termsafe.String(string(res.Stage)))
			return nil
		},
	}
}

func newUndoCmd(g *globals) *cobra.Command {
	var last, anywhere bool
	var turn turnUndoFlags
	cmd := &cobra.Command{
		Use:   "undo SESSION | TX | --last [--any] | --turn TURN|last",
		Short: "Restore what a completed session or transaction replaced",
		Long: `Put back the content a completed session replaced (kept in the store as a
backup), or remove the file if the session created it. Refused if the file
changed since the session wrote it. A transaction is undone as a unit: give
its id (or the id of any of its sessions), and every file it wrote is put
back, all or none.

--last undoes the newest write in the current directory's workspace: the
innermost of the allowed roots and the project (the nearest directory with a
.git) that hold the current directory. It names the file before it acts, and
undoes the rest of a transaction with it (one with a file outside the
workspace is left to "orionctl undo TX"). --any undoes the newest write
anywhere.`,
		Example: `  orionctl undo 1b4e28ba
  orionctl undo --last
  orionctl undo --last --any`,
		Args: func(cmd *cobra.Command, args []string) error {
			if turn.id != "" || turn.workspace != "" || turn.dryRun || turn.allOrNothing {
				return turn.check(last || anywhere, args)
			}
			if anywhere {
				last = true
			}
			if last && len(args) != 0 || !last && len(args) != 1 {
				return usageError{fmt.Errorf("give a SESSION, a TX or --last, not both")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if turn.id != "" {
				return runTurnUndo(cmd, g, turn.id, turn.workspace, turn.dryRun, turn.allOrNothing)
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			var id string
			if last {
				if id, err = announceLast(cmd, g, c, anywhere); err != nil {
					return err
				}
			} else {
				id, err = resolveUndo(cmd.Context(), c, args[0])
			}
			if err != nil {
				return err
			}
			res, err := c.Undo(cmd.Context(), id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, res)
			}
			if res.TxID == "" {
				printUndone(out, "", res)
				return nil
			}
			fmt.Fprintf(out, "undid transaction %s: %s\n", termsafe.String(res.TxID), textfmt.Count(len(res.Files), "file", "files"))
			for _, f := range res.Files {
				printUndone(out, "  ", f)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&last, "last", false, "undo the newest write in the current directory's workspace (with its whole transaction)")
	cmd.Flags().BoolVar(&anywhere, "any", false, "with --last: the newest write anywhere, not only in the current directory's workspace")
	turn.add(cmd)
	return cmd
}

// announceLast finds the write undo --last undoes and names it before
// anything changes.
func announceLast(cmd *cobra.Command, g *globals, c *client.Client, anywhere bool) (string, error) {
	ctx := cmd.Context()
	ws := ""
	if !anywhere {
		st, err := c.Status(ctx)
		if err != nil {
			return "", err
		}
		if ws, err = undoWorkspace(st.AllowedRoots); err != nil {
			return "", err
		}
	}
	s, err := newestWrite(ctx, c, ws)
	if err != nil {
		return "", err
	}
	if !g.json {
		what := shown(s.TargetFile)
		if s.TxID != "" {
			what += " and the rest of transaction " + termsafe.String(shortID(s.TxID))
		}
		where := "the newest write anywhere"
		if ws != "" {
			where = "the newest write in " + termsafe.String(ws)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "undoing %s (session %s), %s\n", what, termsafe.String(shortID(s.SessionID)), where)
	}
	return s.SessionID, nil
}

// printUndone says what undoing one session's file did.
func printUndone(out io.Writer, indent string, res protocol.UndoResult) {
	if res.Removed {
		fmt.Fprintf(out, "%sremoved %s, which session %s had created\n", indent, shown(res.TargetFile), termsafe.String(res.SessionID))
		return
	}
	if res.Unchanged {
		fmt.Fprintf(out, "%sleft %s as it is: it was already as before session %s (deleted since, or put back)\n", indent, shown(res.TargetFile), termsafe.String(res.SessionID))
		return
	}
	fmt.Fprintf(out, "%srestored %s: %s, sha256 %s\n", indent, shown(res.TargetFile),
		textfmt.Count(res.RestoredBytes, "byte", "bytes"), termsafe.String(res.SHA256))
	printMerged(out, indent+"the file changed after the write; reverted only the write's change and kept", res.Merged, res.MergedHunks)
}

// finalizeRefusal tells a refused finalize in orionctl's words: the session
// is kept (needs_corrections), and a corrected attempt is a new session
// that supersedes it.
func finalizeRefusal(cmd *cobra.Command, c *client.Client, id string, err error) error {
	name := ""
	if info, gerr := c.Get(cmd.Context(), id); gerr == nil {
		name = displayName(info.TargetFile)
	}
	return refusal(err, name, fmt.Sprintf(nextReplaced, shortID(id)))
}
