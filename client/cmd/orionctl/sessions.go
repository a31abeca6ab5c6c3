package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List and inspect write sessions",
	}
	cmd.AddCommand(newSessionsListCmd(g), newSessionsShowCmd(g), newSessionsRecoverCmd(g), newSessionsCleanCmd(g))
	return cmd
}

func newSessionsListCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List open sessions (--all: finished ones too)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			sessions, err := c.List(cmd.Context(), all)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				if sessions == nil {
					// A script reads an empty list, not null.
					sessions = []protocol.SessionInfo{}
				}
				return printJSON(out, protocol.ListResult{Sessions: sessions})
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTAGE\tAGE\tBYTES\tLINES\tOP\tTARGET")
			for _, s := range sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", termsafe.String(s.SessionID), stageOf(s),
					time.Since(s.CreatedAt).Round(time.Second), s.Bytes, s.Lines, termsafe.String(string(s.Operation)), termsafe.String(s.TargetFile))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include completed and aborted sessions")
	return cmd
}

func newSessionsShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show SESSION",
		Short: "Show one session",
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
			s, err := c.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, s)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "session:\t%s\n", termsafe.String(s.SessionID))
			fmt.Fprintf(tw, "stage:\t%s\n", stageOf(s))
			fmt.Fprintf(tw, "target:\t%s (%s)\n", termsafe.String(s.TargetFile), termsafe.String(string(s.Operation)))
			if s.TxID != "" {
				fmt.Fprintf(tw, "transaction:\t%s\n", termsafe.String(s.TxID))
			}
			if s.Intent != "" {
				fmt.Fprintf(tw, "intent:\t%s\n", termsafe.String(s.Intent))
			}
			fmt.Fprintf(tw, "end marker:\t%s (seen: %v)\n", termsafe.String(s.EndMarker), s.EndMarkerSeen)
			fmt.Fprintf(tw, "received:\t%s, %s, %s\n", textfmt.Count(int64(s.LastSeq), "chunk", "chunks"), textfmt.Count(s.Bytes, "byte", "bytes"), textfmt.Count(s.Lines, "line", "lines"))
			fmt.Fprintf(tw, "created:\t%s\n", s.CreatedAt.Local().Format(time.RFC3339))
			fmt.Fprintf(tw, "updated:\t%s\n", s.UpdatedAt.Local().Format(time.RFC3339))
			if s.Result != nil {
				fmt.Fprintf(tw, "written:\t%s, sha256 %s\n", textfmt.Count(s.Result.Bytes, "byte", "bytes"), termsafe.String(s.Result.SHA256))
			}
			return tw.Flush()
		},
	}
}

func newSessionsRecoverCmd(g *globals) *cobra.Command {
	var finalize, force bool
	cmd := &cobra.Command{
		Use:   "recover SESSION",
		Short: "Finish a session a crash or a lost client left behind",
		Long: `Recover a session: a session whose end marker arrived (or whose finalize a
crash interrupted) is finalized. One still missing its marker, or truncated,
is described (where its content stops, the last lines, the sentence that makes
a model continue it) unless --finalize writes what arrived as it is.`,
		Args: exactArgs(1),
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
			res, err := c.Resume(ctx, id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case res.Stage == protocol.StageCompleted:
				info, err := c.Get(ctx, id)
				if err != nil {
					return err
				}
				if info.Result == nil {
					return fmt.Errorf("session %s is completed but has no summary", id)
				}
				return printSummary(cmd, g, *info.Result)
			case res.EndMarkerSeen || res.Stage == protocol.StageFinalizing || finalize:
				fin, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: id, EndOfInput: finalize, Force: force})
				if err != nil {
					return finalizeRefusal(cmd, c, id, err)
				}
				return printSummary(cmd, g, fin)
			}
			if g.json {
				return printJSON(out, res)
			}
			fmt.Fprintf(out, "session %s (%s) stops at %s, %s; next seq %d\n",
				termsafe.String(res.SessionID), termsafe.String(string(res.Stage)), textfmt.Count(res.Lines, "line", "lines"), textfmt.Count(res.Bytes, "byte", "bytes"), res.NextSeq)
			fmt.Fprintf(out, "target: %s (%s)\n\nlast lines:\n%s\n", termsafe.String(res.TargetFile), termsafe.String(string(res.Operation)), termsafe.Text(res.Tail))
			fmt.Fprintf(out, "to continue, tell the model:\n%s\n\n", termsafe.Text(res.ContinuePrompt))
			fmt.Fprintf(out, "or write what arrived as it is: orionctl sessions recover --finalize %s\n", termsafe.String(res.SessionID))
			return nil
		},
	}
	cmd.Flags().BoolVar(&finalize, "finalize", false, "write the content that arrived even without its end marker")
	cmd.Flags().BoolVar(&force, "force", false, "write even if the target changed since the session began")
	return cmd
}

func newSessionsCleanCmd(g *globals) *cobra.Command {
	var olderThan, finishedOlderThan time.Duration
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Expire abandoned sessions and prune finished ones now",
		Long: `Expire unfinished sessions untouched for --older-than (their content is
dropped) and forget finished ones older than --finished-older-than. Without
flags, the daemon's retention periods apply, as in its periodic sweep.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Clean(cmd.Context(), protocol.CleanParams{
				OlderThanMS: olderThan.Milliseconds(), FinishedOlderThanMS: finishedOlderThan.Milliseconds(),
			})
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "expired %s, pruned %d\n", textfmt.Count(len(res.Expired), "session", "sessions"), len(res.Pruned))
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "expire unfinished sessions untouched this long (default: the daemon's retention)")
	cmd.Flags().DurationVar(&finishedOlderThan, "finished-older-than", 0, "prune finished sessions older than this (default: the daemon's summary retention)")
	return cmd
}

// stageOf is the stage a person reads: a completed session whose write was
// undone shows "undone", one that ended after a dry run "dry run" (the
// daemon's stage says completed and aborted; --json keeps the stage and
// says undone or dry_run beside it).
func stageOf(s protocol.SessionInfo) string {
	switch {
	case s.Undone:
		return "undone"
	case s.DryRun && s.Stage == protocol.StageAborted:
		return "dry run"
	}
	return termsafe.String(string(s.Stage))
}
