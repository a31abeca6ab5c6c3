package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

func newTxCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tx",
		Short: "Write several files all or none (transactions)",
		Long: `A transaction writes several files all or none: every file is checked first,
and a failure while writing (or a crash of oriond) puts every file back as it
was. "tx write" does it all from local files; begin/commit over the socket is
what an agent's client does with tx.begin, session.append and tx.commit.`,
	}
	cmd.AddCommand(newTxWriteCmd(g), newTxShowCmd(g), newTxCommitCmd(g), newTxAbortCmd(g))
	return cmd
}

func newTxWriteCmd(g *globals) *cobra.Command {
	var op, intent, workspace string
	var dryRun, force bool
	cmd := &cobra.Command{
		Use:   "write TARGET=SOURCE...",
		Short: "Write each TARGET with the content of its SOURCE file, all or none",
		Example: `  orionctl tx write src/a.go=/tmp/a.go src/b.go=/tmp/b.go
  orionctl tx write --op edit main.go=fix1.diff util.go=fix2.diff --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("give at least one TARGET=SOURCE")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			operation, err := parseOp(op)
			if err != nil {
				return err
			}
			var files []protocol.BeginParams
			var sources []string
			for _, a := range args {
				target, source, ok := strings.Cut(a, "=")
				if !ok || target == "" || source == "" {
					return usageError{fmt.Errorf("%q: want TARGET=SOURCE", a)}
				}
				root, err := g.workspaceFor(target, workspace)
				if err != nil {
					return err
				}
				files = append(files, protocol.BeginParams{TargetFile: target, Operation: operation, WorkspaceRoot: root})
				sources = append(sources, source)
			}
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			tx, err := c.TxBegin(ctx, protocol.TxBeginParams{Intent: intent, Files: files})
			if err != nil {
				return err
			}
			abort := func(cause error) error {
				if _, err := c.TxAbort(ctx, tx.TxID); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "orionctl: aborting transaction %s: %s\n", termsafe.String(tx.TxID), termsafe.String(err.Error()))
				}
				return refusal(cause, "", nextTxAbort)
			}
			for i, s := range tx.Sessions {
				f, err := os.Open(sources[i])
				if err != nil {
					return abort(err)
				}
				_, _, err = c.Stream(ctx, s.SessionID, f, client.StreamOptions{})
				f.Close()
				if err != nil {
					return abort(err)
				}
			}
			res, err := c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID, EndOfInput: true, DryRun: dryRun, Force: force})
			if err != nil {
				return abort(err)
			}
			if dryRun {
				if _, err := c.TxAbort(ctx, tx.TxID); err != nil {
					return err
				}
			}
			if err := printTx(cmd, g, res); err != nil {
				return err
			}
			return txDryRunRefusal(res, nextTxAbort)
		},
	}
	f := cmd.Flags()
	f.StringVar(&op, "op", string(protocol.OpOverwrite), "operation for every file: create, overwrite, append or edit")
	f.StringVar(&intent, "intent", "orionctl tx write", "what this transaction is for")
	f.StringVar(&workspace, "workspace-root", "", "directory relative TARGETs resolve against (default: current directory)")
	f.BoolVar(&dryRun, "dry-run", false, "check every file and print the diffs, write nothing")
	f.BoolVar(&force, "force", false, "write even over targets that changed since the transaction began")
	return cmd
}

func newTxShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show TX",
		Short: "Show a transaction's stage, sessions and, once committed, its files",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveTx(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			info, err := c.TxGet(cmd.Context(), id)
			if err != nil {
				return err
			}
			return printTxInfo(cmd, g, info)
		},
	}
}

func newTxCommitCmd(g *globals) *cobra.Command {
	var dryRun, force, endOfInput bool
	cmd := &cobra.Command{
		Use:   "commit TX",
		Short: "Check every file of a transaction, then write all of them or none",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveTx(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			res, err := c.TxCommit(cmd.Context(), protocol.TxCommitParams{TxID: id, DryRun: dryRun, Force: force, EndOfInput: endOfInput})
			if err != nil {
				return err
			}
			if err := printTx(cmd, g, res); err != nil {
				return err
			}
			if dryRun {
				return txDryRunRefusal(res, "Nothing was written (dry run).")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "check every file and print the diffs, write nothing")
	f.BoolVar(&force, "force", false, "write even over targets that changed since the transaction began")
	f.BoolVar(&endOfInput, "end-of-input", false, "the content is complete without end markers")
	return cmd
}

func newTxAbortCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "abort TX",
		Short: "Discard a transaction that is not committed, and its sessions",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := resolveTx(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			info, err := c.TxAbort(cmd.Context(), id)
			if err != nil {
				return err
			}
			return printTxInfo(cmd, g, info)
		},
	}
}

func printTx(cmd *cobra.Command, g *globals, res protocol.TxCommitResult) error {
	if g.json {
		return printJSON(cmd.OutOrStdout(), res)
	}
	out := cmd.OutOrStdout()
	if res.DryRun {
		fmt.Fprintf(out, "dry run of transaction %s, nothing written:\n", termsafe.String(res.TxID))
	} else {
		fmt.Fprintf(out, "transaction %s %s: %s\n", termsafe.String(res.TxID), termsafe.String(string(res.Stage)), textfmt.Count(len(res.Files), "file", "files"))
	}
	for _, f := range res.Files {
		name, op := shown(f.TargetFile), termsafe.String(txOpLabel(f, res.DryRun))
		switch {
		case res.DryRun && contentRefusal(name, f.Validation, editWarning(f)) != "":
			fmt.Fprintf(out, "  %s (%s): would be refused\n", name, op)
		case res.DryRun:
			// A dry run describes the content it checked; the file is not
			// written, so it has no bytes of its own yet.
			fmt.Fprintf(out, "  %s (%s): would get %s, %s, sha256 %s\n", name, op,
				textfmt.Count(f.Bytes, "byte", "bytes"), textfmt.Count(f.Lines, "line", "lines"), termsafe.String(f.SHA256))
		default:
			fmt.Fprintf(out, "  %s (%s): %s, %s, sha256 %s\n", name, op,
				textfmt.Count(f.FileBytes, "byte", "bytes"), textfmt.Count(f.Lines, "line", "lines"), termsafe.String(f.FileSHA256))
		}
		printChecks(out, f)
		if res.DryRun {
			fmt.Fprint(out, termsafe.Text(diffForPerson(f.Diff)))
		}
	}
	return nil
}

// txOpLabel is the operation a file of a transaction went through as the
// person sees it: an overwrite or an append of a file that did not exist
// created it. A commit keeps a backup exactly of the files that existed;
// a dry run wrote nothing, so the file is looked at.
func txOpLabel(f protocol.FinalizeResult, dryRun bool) string {
	op := f.Operation
	if op != protocol.OpOverwrite && op != protocol.OpAppend {
		return string(op)
	}
	created := f.BackupID == ""
	if dryRun {
		_, err := os.Lstat(f.TargetFile)
		created = errors.Is(err, fs.ErrNotExist)
	}
	if created {
		return "new file"
	}
	return string(op)
}

func printTxInfo(cmd *cobra.Command, g *globals, info protocol.TxInfo) error {
	if g.json {
		return printJSON(cmd.OutOrStdout(), info)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "transaction %s: %s\nsessions:    %s\n", termsafe.String(info.TxID), termsafe.String(string(info.Stage)),
		strings.Join(termsafe.Strings(info.Sessions), " "))
	if info.Error != "" {
		fmt.Fprintf(out, "last error:  %s\n", termsafe.String(info.Error))
	}
	for _, f := range info.Files {
		fmt.Fprintf(out, "  %s: %s, sha256 %s\n", shown(f.TargetFile), textfmt.Count(f.FileBytes, "byte", "bytes"), termsafe.String(f.FileSHA256))
	}
	return nil
}

// txDryRunRefusal is the error of a transaction's dry run that found what
// the commit would refuse, in the words of the commit's refusal; nil when
// every file would be written.
func txDryRunRefusal(res protocol.TxCommitResult, next string) error {
	var parts []string
	var files []protocol.FileError
	for _, f := range res.Files {
		part := contentRefusal(displayName(f.TargetFile), f.Validation, editWarning(f))
		if part == "" {
			continue
		}
		parts = append(parts, part)
		fe := protocol.FileError{SessionID: f.SessionID, TargetFile: f.TargetFile, Code: protocol.CodeValidationFailed,
			Reason: protocol.ReasonValidationFailed, Message: part, Validation: f.Validation, Edit: f.Edit}
		if editWarning(f) != "" {
			fe.Code, fe.Reason = protocol.CodeEditFailed, protocol.ReasonEditFailed
		}
		files = append(files, fe)
	}
	if len(parts) == 0 {
		return nil
	}
	text := fmt.Sprintf("transaction %s: %s failed the check:\n%s",
		res.TxID, textfmt.Count(len(parts), "file", "files"), strings.Join(parts, "\n"))
	pe := &protocol.Error{Code: protocol.CodeTxFailed, Message: text,
		Data: protocol.ErrorData{Reason: protocol.ReasonTxRefused, TxID: res.TxID, Files: files}}
	return &refusedError{text: text + "\n" + next, pe: pe}
}
