package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/protocol"
)

func newStreamCmd(g *globals) *cobra.Command {
	var (
		workspace string
		idleMS    int64
		autoMS    int64
		policy    string
		idleWait  time.Duration
		truncWait time.Duration
		replay    bool
	)
	cmd := &cobra.Command{
		Use:   "stream [FILE]",
		Short: "Drive write sessions from a model's chat-completions stream",
		Long: `Read an OpenAI-compatible chat-completions stream (server-sent events: one or
more responses, each ending with "data: [DONE]") from FILE or stdin, and do
what an agent's backend does with it: a WritePlanTool_begin call opens a
write session, the assistant text that follows is streamed into it, the end
marker finalizes it. Text outside a session passes through.

Prints one JSON event per line: text, tool_call (another tool, for the
agent), tool_result (the message answering WritePlanTool_begin), finalized
(the summary), continue (the response was cut off; the message continues
the file), idle (the model stopped without the marker), truncated, continued,
conflict, error, response_end. At the end of the input, a session still open
is waited for until the daemon's auto-finalize ends it as truncated.`,
		Example: `  orionctl stream recorded.sse
  curl -sN https://api.example.com/v1/chat/completions -d @req.json | orionctl stream
  orionctl stream --replay client/testdata/streams/args_fragments.sse`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("stream takes at most one FILE, got %d arguments (usage: %s)", len(args), cmd.UseLine())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch protocol.TruncationPolicy(policy) {
			case "", protocol.TruncationKeep, protocol.TruncationIncompleteFile, protocol.TruncationWriteWithNote:
			default:
				return usageError{fmt.Errorf("--truncation-policy %q: use keep, incomplete_file or write_with_note", policy)}
			}
			in := cmd.InOrStdin()
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			if !replay {
				in = &placeholderGuard{r: in}
			}
			if workspace == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				workspace = wd
			}
			return runStream(cmd, in, controller.Options{
				Socket:           g.socket,
				WorkspaceRoot:    workspace,
				IdleMS:           idleMS,
				AutoFinalizeMS:   autoMS,
				TruncationPolicy: protocol.TruncationPolicy(policy),
				IdleWait:         idleWait,
				TruncateWait:     truncWait,
				Replay:           replay,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace-root", "", "directory the model's relative target files resolve against (default: current directory)")
	f.Int64Var(&idleMS, "idle-ms", 0, "idle period before session.idle (default: the daemon's)")
	f.Int64Var(&autoMS, "auto-finalize-ms", 0, "time without content before a session without its marker ends truncated (default: the daemon's)")
	f.StringVar(&policy, "truncation-policy", "", "content without its marker: keep, incomplete_file or write_with_note (default: the daemon's)")
	f.DurationVar(&idleWait, "idle-wait", 0, "how long to wait for the daemon's idle prompt (default: idle period + 2s)")
	f.DurationVar(&truncWait, "truncate-wait", 0, "how long to wait for the auto-finalize at the end (default: its period + 2s)")
	f.BoolVar(&replay, "replay", false, "replace {{marker}} placeholders of a recorded stream with the live session's end marker")
	return cmd
}

// placeholder is how recorded streams (client/testdata/streams) stand for
// the end marker, which only the live session knows: "{{marker}}" or
// "{{marker:N}}".
const placeholder = "{{marker"

// errPlaceholder stops a recorded stream run without --replay: its
// placeholders would never match the live marker, and the session would
// wait for the auto-finalize to end it truncated.
var errPlaceholder = errors.New("the stream holds {{marker}} placeholders, as recorded streams do: " +
	"run it with --replay, which puts the live session's end marker in their place")

// placeholderGuard fails a read that brings a placeholder, even one split
// across reads.
type placeholderGuard struct {
	r    io.Reader
	tail []byte
}

func (g *placeholderGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	buf := append(g.tail, p[:n]...)
	if bytes.Contains(buf, []byte(placeholder)) {
		return 0, errPlaceholder
	}
	keep := min(len(buf), len(placeholder)-1)
	g.tail = append(g.tail[:0], buf[len(buf)-keep:]...)
	return n, err
}

// runStream runs the controller over in and prints its events as JSON
// lines. Output stops at the first failed write, and that error is
// returned.
func runStream(cmd *cobra.Command, in io.Reader, opts controller.Options) error {
	ctx := cmd.Context()
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetEscapeHTML(false)
	var outErr error
	opts.OnEvent = func(e controller.Event) {
		if outErr == nil {
			outErr = enc.Encode(e)
		}
	}
	ctl, err := controller.New(ctx, opts)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if err := ctl.Run(ctx, in); err != nil {
		return err
	}
	if err := ctl.Finish(ctx); err != nil {
		return err
	}
	return outErr
}
