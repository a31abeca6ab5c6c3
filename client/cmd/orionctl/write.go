package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// progressThreshold is the input size from which write shows progress: below
// it the write is over before a bar would be readable.
const progressThreshold = 4 << 20

func newWriteCmd(g *globals) *cobra.Command {
	var (
		op         string
		intent     string
		workspace  string
		chunkSize  int
		dryRun     bool
		spec       string
		mustExist  bool
		supersedes string
	)
	cmd := &cobra.Command{
		Use:   "write TARGET",
		Short: "Write TARGET from stdin through a durable write session",
		Long: `Write TARGET with the content read from stdin: begin a session, stream the
content in chunks (each journaled by oriond before it is acknowledged), then
finalize, which writes TARGET atomically. A relative TARGET is relative to the
current directory. Prints a summary: bytes, lines, sha256.

With --op edit, stdin is an edit of TARGET: search/replace blocks, a unified
diff, or a *** Begin Patch envelope (the format is detected). An envelope
names its own files, relative to --workspace-root (default: the current
directory), and may add, update, delete and move several: they are written
all or none. With --op patch, stdin is the text --patch-spec places.`,
		Example: `  orionctl write docs/guide.md < guide.md
  generate-config | orionctl write --op overwrite config.yaml
  orionctl write --op edit --dry-run main.go < fix.diff`,
		Args: exactArgs(1),
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
			ctx := cmd.Context()
			if supersedes, err = resolveSession(ctx, c, supersedes); err != nil {
				return err
			}
			params := protocol.BeginParams{
				Intent: intent, TargetFile: args[0], Operation: operation, WorkspaceRoot: workspace,
				PatchSpec: patchSpec(spec), MustExist: mustExist, Supersedes: supersedes,
			}
			in := cmd.InOrStdin()
			// The daemon's largest chunk, asked once (daemon.status).
			maxChunk := 0
			largest := func() int {
				if maxChunk == 0 {
					maxChunk = c.WholeFileChunkSize(ctx)
				}
				return maxChunk
			}
			if !dryRun && chunkSize <= 0 {
				// Input that fits one chunk is written in one request.
				head, all, rest, err := wholeInput(in, largest())
				if err != nil {
					return err
				}
				if all {
					if ok, err := writeWhole(cmd, g, c, params, head); ok {
						return err
					}
					rest = bytes.NewReader(head)
				}
				in = rest
			}
			begun, err := c.Begin(ctx, params)
			if err != nil {
				return err
			}
			name := displayName(begun.TargetFile)
			bar := newProgress(cmd, in)
			opts := client.StreamOptions{ChunkSize: chunkSize}
			if chunkSize <= 0 && isRegularFile(in) {
				// A file is all there: large chunks are fewer commits.
				// A pipe may trickle, and a chunk is sent only once
				// full, so it keeps the default.
				opts.ChunkSize = largest()
			} else if chunkSize <= 0 {
				// A daemon may take less than the default.
				opts.ChunkSize = min(client.DefaultChunkSize, largest())
			}
			if bar != nil {
				opts.Progress = bar.Set
			}
			_, _, err = c.Stream(ctx, begun.SessionID, in, opts)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return abandon(cmd, c, begun.SessionID, name, err)
			}
			res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true, DryRun: dryRun})
			if err != nil {
				return abandon(cmd, c, begun.SessionID, name, err)
			}
			if dryRun {
				// Nothing is kept of a dry run.
				if _, err := c.Abort(ctx, begun.SessionID); err != nil {
					return err
				}
			}
			if err := printSummary(cmd, g, res); err != nil {
				return err
			}
			if dryRun {
				return dryRunRefusal(res, nextAborted)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&op, "op", string(protocol.OpCreate), "operation: create (fails if TARGET exists), overwrite, append, patch or edit")
	f.StringVar(&intent, "intent", "orionctl write", "what this write is for, kept with the session")
	f.StringVar(&workspace, "workspace-root", "", "directory a relative TARGET resolves against (default: current directory)")
	f.StringVar(&spec, "patch-spec", "", `for --op patch: where the text goes, as JSON, e.g. '{"type":"insert_after_line","line":12}'`)
	f.BoolVar(&mustExist, "must-exist", false, "refuse unless TARGET exists")
	f.StringVar(&supersedes, "supersedes", "", "the session (needs_corrections) this write corrects")
	f.IntVar(&chunkSize, "chunk-size", 0, "bytes per chunk (default: from a file, the daemon's largest chunk, at most 1 MiB; from a pipe, 64 KiB)")
	f.BoolVar(&dryRun, "dry-run", false, "repair and validate, print the diff against the current file, write nothing")
	return cmd
}

// abandon aborts a session the daemon refused, so it does not linger, and
// says so in the error, which tells what to do next with orionctl; a
// session cut off by a lost connection is kept, since its journaled content
// can still be resumed, and the message says where to find it.
func abandon(cmd *cobra.Command, c *client.Client, id, name string, cause error) error {
	var pe *protocol.Error
	if !errors.As(cause, &pe) {
		return fmt.Errorf("session %s interrupted (its acknowledged content is kept; see `orionctl sessions show %s`): %w", id, shortID(id), cause)
	}
	if _, err := c.Abort(cmd.Context(), id); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "orionctl: aborting session %s: %s\n", termsafe.String(id), termsafe.String(err.Error()))
	}
	return refusal(cause, name, nextAborted)
}

// newProgress returns a progress line on stderr when stderr is a terminal
// and the input is large or of unknown size; otherwise nil.
func newProgress(cmd *cobra.Command, in io.Reader) *progress {
	errOut, ok := cmd.ErrOrStderr().(*os.File)
	if !ok || !term.IsTerminal(int(errOut.Fd())) {
		return nil
	}
	size := int64(-1)
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size >= 0 && size < progressThreshold {
		return nil
	}
	return newProgressLine(errOut, size, time.Now)
}

func printSummary(cmd *cobra.Command, g *globals, res protocol.FinalizeResult) error {
	out := cmd.OutOrStdout()
	if g.json {
		return printJSON(out, res)
	}
	name := shown(res.TargetFile)
	op := termsafe.String(string(res.Operation))
	if res.DryRun {
		if contentRefusal(name, res.Validation, editWarning(res)) != "" {
			fmt.Fprintf(out, "dry run, nothing written: %s (%s) would be refused\n", name, op)
		} else {
			fmt.Fprintf(out, "dry run, nothing written: %s (%s) would get %s, %s\n", name, op,
				textfmt.Count(res.Bytes, "byte", "bytes"), textfmt.Count(res.Lines, "line", "lines"))
		}
		printChecks(out, res)
		fmt.Fprint(out, termsafe.Text(diffForPerson(res.Diff)))
		return nil
	}
	if alreadyApplied(res) {
		fmt.Fprintf(out, "%s (%s): already applied, nothing written\n", name, op)
		printChecks(out, res)
		fmt.Fprintf(out, "session %s\n", termsafe.String(res.SessionID))
		return nil
	}
	if len(res.Files) > 0 {
		fmt.Fprintf(out, "applied the edit to %s, all or none:\n", textfmt.Count(len(res.Files), "file", "files"))
		for _, f := range res.Files {
			to := ""
			if f.MovedTo != "" {
				to = " -> " + shown(f.MovedTo)
			}
			fmt.Fprintf(out, "  %-6s %s%s\n", termsafe.String(f.Kind), shown(f.TargetFile), to)
		}
		printChecks(out, res)
		printSession(out, res)
		return nil
	}
	fmt.Fprintf(out, "wrote %s (%s): %s, %s, mode %s\nsha256 %s\n",
		name, op, textfmt.Count(res.Bytes, "byte", "bytes"), textfmt.Count(res.Lines, "line", "lines"), termsafe.String(res.Mode), termsafe.String(res.SHA256))
	printChecks(out, res)
	if res.Operation == protocol.OpAppend {
		fmt.Fprintf(out, "file now %s, sha256 %s\n", textfmt.Count(res.FileBytes, "byte", "bytes"), termsafe.String(res.FileSHA256))
	}
	if res.TrailingBytes > 0 {
		fmt.Fprintf(out, "ignored %s after the end marker: %q\n", textfmt.Count(res.TrailingBytes, "byte", "bytes"), res.TrailingPreview)
	}
	printMerged(out, "the file changed while it was written; kept", res.Merged, res.MergedHunks)
	printSession(out, res)
	return nil
}

// printMerged says which changes made by someone else a merge kept.
func printMerged(out io.Writer, what string, merged bool, hunks []protocol.MergeHunk) {
	if !merged {
		return
	}
	if len(hunks) == 0 {
		fmt.Fprintf(out, "%s the other change\n", what)
		return
	}
	var at []string
	for _, h := range hunks {
		switch {
		case h.EndLine < h.StartLine:
			at = append(at, fmt.Sprintf("before line %d", h.StartLine))
		case h.EndLine == h.StartLine:
			at = append(at, fmt.Sprintf("line %d", h.StartLine))
		default:
			at = append(at, fmt.Sprintf("lines %d-%d", h.StartLine, h.EndLine))
		}
	}
	fmt.Fprintf(out, "%s %s made meanwhile (%s)\n", what, textfmt.Count(len(hunks), "change", "changes"), strings.Join(at, ", "))
}

// printSession names the session that wrote, and how to undo it.
func printSession(out io.Writer, res protocol.FinalizeResult) {
	if res.SessionID == "" {
		return
	}
	id := termsafe.String(res.SessionID)
	fmt.Fprintf(out, "session %s (undo: orionctl undo %s)\n", id, termsafe.String(shortID(res.SessionID)))
}

// alreadyApplied reports an edit or patch whose every part was already in
// the file: the daemon wrote nothing.
func alreadyApplied(res protocol.FinalizeResult) bool {
	if res.Edit == nil || len(res.Edit.Blocks) == 0 {
		return false
	}
	for _, b := range res.Edit.Blocks {
		if b.Status != "already_applied" {
			return false
		}
	}
	return true
}

// shown is displayName made safe to print: a path a model chose may hold
// escape sequences or bidi controls.
func shown(path string) string { return termsafe.String(displayName(path)) }

// displayName shows a path relative to the current directory when it lies
// inside it.
func displayName(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return path
}

// printChecks lists the repairs, validation findings and warnings of a
// finalize.
func printChecks(out io.Writer, res protocol.FinalizeResult) {
	for _, d := range res.CreatedDirs {
		fmt.Fprintf(out, "made directory %s\n", shown(d))
	}
	for _, r := range res.Repairs {
		fmt.Fprintf(out, "repaired: %s\n", termsafe.String(r.Message))
	}
	if v := res.Validation; v != nil {
		if v.Skipped != "" {
			fmt.Fprintf(out, "not validated: %s\n", termsafe.String(v.Skipped))
		}
		for _, f := range v.Findings {
			pre := ""
			if f.Preexisting {
				pre = " (already in the file)"
			}
			fmt.Fprintf(out, "%s: line %d col %d: %s [%s]%s\n", termsafe.String(f.Severity), f.Line, f.Column,
				termsafe.String(f.Message), termsafe.String(f.Code), pre)
		}
	}
	for _, w := range res.Warnings {
		if res.DryRun && w.Code == protocol.ReasonEditFailed {
			continue // the dry run's error says it, as the real run would
		}
		fmt.Fprintf(out, "warning: %s [%s]\n", termsafe.String(w.Message), termsafe.String(w.Code))
	}
}

// patchSpec passes --patch-spec through as JSON, or nothing when unset.
func patchSpec(s string) protocol.PatchSpec {
	if s == "" {
		return nil
	}
	return protocol.PatchSpec(s)
}

// isRegularFile reports whether r is a regular file (stdin redirected from
// one), as opposed to a pipe or a terminal.
func isRegularFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}
