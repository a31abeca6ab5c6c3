package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show whether oriond runs, and how it is configured",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := c.Status(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return printJSON(out, st)
			}
			fmt.Fprintf(out, "oriond %s (protocol %d), pid %d, up %s\n", termsafe.String(st.Version), st.ProtocolVersion, st.PID,
				time.Since(st.StartedAt).Round(time.Second))
			fmt.Fprintf(out, "socket:         %s\n", termsafe.String(st.Socket))
			fmt.Fprintf(out, "state dir:      %s\n", termsafe.String(st.StateDir))
			fmt.Fprintf(out, "allowed roots:  %s\n", strings.Join(termsafe.Strings(st.AllowedRoots), ", "))
			fmt.Fprintf(out, "open sessions:  %d\n", st.OpenSessions)
			fmt.Fprintf(out, "limits:         %s per chunk, %d per session\n", textfmt.Count(st.MaxChunkBytes, "byte", "bytes"), st.MaxSessionBytes)
			if tr := st.Trace; tr != nil {
				capped := "no cap"
				if tr.MaxBytes > 0 {
					capped = fmt.Sprintf("of %d", tr.MaxBytes)
				}
				fmt.Fprintf(out, "trace:          %d bytes stored (%s), kept %s; %d evicted, %d rejected requests only counted\n",
					tr.Bytes, capped, time.Duration(tr.RetentionMS)*time.Millisecond, tr.Evicted, tr.Suppressed)
			}
			if len(st.Features) > 0 {
				fmt.Fprintf(out, "features:       %s\n", strings.Join(termsafe.Strings(st.Features), ", "))
			}
			if st.MaxConnections > 0 {
				fmt.Fprintf(out, "connections:    %d of %d (fd limit %d); %d requests awaiting replies and %d-byte messages per connection\n",
					st.Connections, st.MaxConnections, st.FDLimit, st.MaxInflight, st.MaxMessageBytes)
			}
			return nil
		},
	}
}
