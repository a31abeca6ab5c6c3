package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/protocol"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List and inspect write sessions",
	}
	cmd.AddCommand(newSessionsListCmd(g), newSessionsShowCmd(g))
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
				return printJSON(out, protocol.ListResult{Sessions: sessions})
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTAGE\tAGE\tBYTES\tLINES\tOP\tTARGET")
			for _, s := range sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.SessionID, s.Stage,
					time.Since(s.CreatedAt).Round(time.Second), s.Bytes, s.Lines, s.Operation, s.TargetFile)
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
			s, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, s)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "session:\t%s\n", s.SessionID)
			fmt.Fprintf(tw, "stage:\t%s\n", s.Stage)
			fmt.Fprintf(tw, "target:\t%s (%s)\n", s.TargetFile, s.Operation)
			if s.Intent != "" {
				fmt.Fprintf(tw, "intent:\t%s\n", s.Intent)
			}
			fmt.Fprintf(tw, "end marker:\t%s (seen: %v)\n", s.EndMarker, s.EndMarkerSeen)
			fmt.Fprintf(tw, "received:\t%d chunks, %d bytes, %d lines\n", s.LastSeq, s.Bytes, s.Lines)
			fmt.Fprintf(tw, "created:\t%s\n", s.CreatedAt.Local().Format(time.RFC3339))
			fmt.Fprintf(tw, "updated:\t%s\n", s.UpdatedAt.Local().Format(time.RFC3339))
			if s.Result != nil {
				fmt.Fprintf(tw, "written:\t%d bytes, sha256 %s\n", s.Result.Bytes, s.Result.SHA256)
			}
			return tw.Flush()
		},
	}
}
