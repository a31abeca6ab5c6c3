package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/protocol"
)

func newToolsCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Print the WritePlanTool_begin function definition for an agent",
		Long: `Print the function definition an agent gives its model, in the tool schema
of the model's vendor: openai (chat completions "tools", also DeepSeek and
other compatible APIs) or anthropic (Messages API "tools"). It carries
metadata only: the content travels as plain text, never in tool-call JSON.
Works without a running daemon.`,
		Example: `  orionctl tools
  orionctl tools --format anthropic`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "openai":
				return printJSON(cmd.OutOrStdout(), []protocol.ToolDefinition{protocol.WritePlanToolBegin()})
			case "anthropic":
				return printJSON(cmd.OutOrStdout(), []protocol.AnthropicTool{protocol.WritePlanToolBeginAnthropic()})
			default:
				return usageError{fmt.Errorf("--format %q: use openai or anthropic", format)}
			}
		},
	}
	cmd.Flags().StringVar(&format, "format", "openai", "tool schema: openai or anthropic")
	return cmd
}
