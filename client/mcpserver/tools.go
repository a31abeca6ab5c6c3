package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// beginOut is write_begin's result.
type beginOut struct {
	SessionID     string `json:"session_id"`
	NextSeq       uint64 `json:"next_seq"`
	MaxChunkBytes int64  `json:"max_chunk_bytes"`
	Instructions  string `json:"instructions"`
	// SHA256 is the target's content at begin; empty when it is absent.
	SHA256 string `json:"sha256,omitempty"`
}

func (s *Server) writeBegin(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		TargetFile    string             `json:"target_file"`
		Operation     protocol.Operation `json:"operation"`
		Intent        string             `json:"intent"`
		ExpectedBytes int64              `json:"expected_bytes"`
		ExpectedLines int64              `json:"expected_lines"`
		PatchSpec     protocol.PatchSpec `json:"patch_spec"`
		ExpectedSHA   string             `json:"expected_sha256"`
	}
	if err := s.decodeArgs(ToolWriteBegin, req, &a); err != nil {
		return toolResult{}, err
	}
	if a.Operation == "" {
		return toolResult{}, argErrorf("write_begin needs operation: one of create, overwrite, append, patch, edit")
	}
	if string(a.PatchSpec) == "null" {
		a.PatchSpec = nil
	}
	p, pl, err := s.beginParams(ctx, req, a.TargetFile, a.Operation, a.Intent)
	if err != nil {
		return toolResult{}, err
	}
	p.ExpectedBytes, p.ExpectedLines, p.PatchSpec, p.ExpectedSHA256 = a.ExpectedBytes, a.ExpectedLines, a.PatchSpec, a.ExpectedSHA
	br, err := s.begin(ctx, p, pl)
	if err != nil {
		return toolResult{}, err
	}
	limit := s.maxChunkBytes(ctx)
	what := protocol.PromptMCPWhatFile
	switch a.Operation {
	case protocol.OpAppend:
		what = protocol.PromptMCPWhatAppend
	case protocol.OpPatch:
		what = protocol.PromptMCPWhatPatch
	case protocol.OpEdit:
		what = protocol.PromptMCPWhatEdit
	}
	instr := protocol.Fill(protocol.PromptMCPBegun, "id", br.SessionID, "target", displayPath(br.TargetFile, pl.root),
		"op", string(a.Operation), "what", what, "lines", fmt.Sprint(ChunkAdviceLines), "limit", textfmt.Size(limit))
	out := beginOut{SessionID: br.SessionID, NextSeq: 1, MaxChunkBytes: limit, Instructions: instr, SHA256: br.SHA256}
	return toolResult{text: instr, structured: out}, nil
}

// beginParams places target in the workspace and fills in what every
// session of this server asks of the daemon.
func (s *Server) beginParams(ctx context.Context, req *mcp.CallToolRequest, target string, op protocol.Operation, intent string) (protocol.BeginParams, placement, error) {
	pl, err := place(callRoots(ctx), target)
	if err != nil {
		return protocol.BeginParams{}, placement{}, err
	}
	s.mu.Lock()
	supersedes := s.refused[pl.target]
	s.mu.Unlock()
	return protocol.BeginParams{
		Intent:           intent,
		TargetFile:       pl.target,
		WorkspaceRoot:    pl.root,
		Operation:        op,
		IdleMS:           sessionTimeoutMS,
		AutoFinalizeMS:   sessionTimeoutMS,
		TruncationPolicy: protocol.TruncationKeep,
		Supersedes:       supersedes,
		Agent:            hostName(req),
	}, pl, nil
}

// hostName is the MCP host's own name (its clientInfo: "claude-code",
// "gemini-cli-mcp-client", "codex-mcp-client"), which listings show after
// orionctl's so a person can tell which agent wrote what; the daemon keeps
// only a short run of plain characters of it.
func hostName(req *mcp.CallToolRequest) string {
	if req == nil || req.Session == nil {
		return ""
	}
	if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
		return p.ClientInfo.Name
	}
	return ""
}

// begin calls session.begin. A write of a target whose last content a
// check refused is a corrected attempt of that session; if the daemon no
// longer holds it as such, the write begins afresh.
func (s *Server) begin(ctx context.Context, p protocol.BeginParams, pl placement) (protocol.BeginResult, error) {
	var br protocol.BeginResult
	call := func() error {
		return s.daemon.do(ctx, func(c *client.Client) (err error) {
			br, err = c.Begin(ctx, p)
			return err
		})
	}
	err := call()
	if p.Supersedes != "" && (isReason(err, protocol.ReasonNotNeedsCorrections) || isReason(err, protocol.ReasonSessionNotFound)) {
		s.forgetRefused(pl.target, p.Supersedes)
		p.Supersedes = ""
		err = call()
	}
	if err != nil {
		return br, err
	}
	if p.Supersedes != "" {
		s.forgetRefused(pl.target, p.Supersedes)
	}
	s.remember(br.SessionID, pl)
	return br, nil
}

func (s *Server) forgetRefused(target, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused[target] == id {
		delete(s.refused, target)
	}
}

func isReason(err error, reason string) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Data.Reason == reason
}

// appendOut is write_append's result.
type appendOut struct {
	NextSeq uint64 `json:"next_seq"`
	Bytes   int64  `json:"bytes"`
	Lines   int64  `json:"lines"`
}

func (s *Server) writeAppend(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		SessionID string  `json:"session_id"`
		Seq       uint64  `json:"seq"`
		Chunk     *string `json:"chunk"`
	}
	if err := s.decodeArgs(ToolWriteAppend, req, &a); err != nil {
		return toolResult{}, err
	}
	switch {
	case a.SessionID == "":
		return toolResult{}, argErrorf("write_append needs session_id: the one write_begin returned")
	case a.Seq == 0:
		return toolResult{}, argErrorf("write_append needs seq: 1 for the first chunk, one more for each next one")
	case a.Chunk == nil:
		return toolResult{}, argErrorf("write_append needs chunk: the next piece of the file's text (seq %d)", a.Seq)
	}
	if err := s.ownSession(ctx, a.SessionID); err != nil {
		return toolResult{}, err
	}
	var ack protocol.AppendResult
	next := uint64(0)
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		ack, err = c.Append(ctx, protocol.AppendParams{SessionID: a.SessionID, Seq: a.Seq, Chunk: *a.Chunk})
		if err != nil || !ack.Duplicate {
			return err
		}
		// A chunk sent again may be older than the last one: the next
		// seq is the session's, not this chunk's.
		info, err := c.Get(ctx, a.SessionID)
		if err == nil {
			next, ack.Bytes, ack.Lines = info.LastSeq+1, info.Bytes, info.Lines
		}
		return err
	})
	if err != nil {
		return toolResult{}, err
	}
	if next == 0 {
		next = ack.Seq + 1
	}
	out := appendOut{NextSeq: next, Bytes: ack.Bytes, Lines: ack.Lines}
	so := fmt.Sprintf("%s, %s so far", textfmt.CountGrouped(ack.Lines, "line", "lines"), textfmt.CountGrouped(ack.Bytes, "byte", "bytes"))
	tmpl := protocol.PromptMCPStored
	if ack.Duplicate {
		tmpl = protocol.PromptMCPStoredAgain
	}
	text := protocol.Fill(tmpl, "seq", fmt.Sprint(a.Seq), "so_far", so, "next", fmt.Sprint(next))
	return toolResult{text: text, structured: out}, nil
}

// finalizeOut is the summary of a completed write: write_finalize's,
// write_file's and edit_file's result.
type finalizeOut struct {
	SessionID  string             `json:"session_id"`
	TargetFile string             `json:"target_file"`
	Operation  protocol.Operation `json:"operation"`
	Bytes      int64              `json:"bytes"`
	Lines      int64              `json:"lines"`
	SHA256     string             `json:"sha256"`
	// FileSHA256 is the whole file's after the write (it differs from
	// SHA256 for append), the expected_sha256 of a next change.
	FileSHA256 string `json:"file_sha256,omitempty"`
	// Merged: the file had changed since the write began, and the write
	// was merged with that change; MergedHunks say where the other
	// change is.
	Merged      bool                 `json:"merged,omitempty"`
	MergedHunks []protocol.MergeHunk `json:"merged_hunks,omitempty"`
	// CreatedDirs are the directories made for the file.
	CreatedDirs []string `json:"created_dirs,omitempty"`
	// Findings are what validation found that did not block the write.
	Findings []string `json:"findings,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Repairs  []string `json:"repairs,omitempty"`
	// Files lists every file a multi-file edit changed.
	Files []string `json:"files,omitempty"`
	// NothingWritten: the edit was already applied.
	NothingWritten bool   `json:"nothing_written,omitempty"`
	DryRun         bool   `json:"dry_run,omitempty"`
	Diff           string `json:"diff,omitempty"`
}

func (s *Server) writeFinalize(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		SessionID string `json:"session_id"`
		DryRun    bool   `json:"dry_run"`
	}
	if err := s.decodeArgs(ToolWriteFinalize, req, &a); err != nil {
		return toolResult{}, err
	}
	if a.SessionID == "" {
		return toolResult{}, argErrorf("write_finalize needs session_id: the one write_begin returned")
	}
	if err := s.ownSession(ctx, a.SessionID); err != nil {
		return toolResult{}, err
	}
	fr, err := s.finalize(ctx, a.SessionID, a.DryRun)
	if err != nil {
		return toolResult{}, err
	}
	return s.summary(fr), nil
}

// finalize calls session.finalize on content that is all there (no end
// marker: the model's chunks are the content). When the connection broke
// under a first attempt that completed, the retry finds the session
// closed: its summary is then the session's result.
func (s *Server) finalize(ctx context.Context, id string, dryRun bool) (protocol.FinalizeResult, error) {
	var fr protocol.FinalizeResult
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		fr, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: id, EndOfInput: true, DryRun: dryRun})
		if isReason(err, protocol.ReasonSessionClosed) && !dryRun {
			if info, gerr := c.Get(ctx, id); gerr == nil && info.Stage == protocol.StageCompleted && info.Result != nil {
				fr, err = *info.Result, nil
			}
		}
		return err
	})
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeValidationFailed && pe.Data.SessionID != "" {
			s.mu.Lock()
			if pl, ok := s.sessions[id]; ok {
				s.refused[pl.target] = id
			}
			s.mu.Unlock()
		}
		return fr, err
	}
	if !fr.DryRun {
		s.mu.Lock()
		s.lastWrite = id
		s.mu.Unlock()
	}
	return fr, nil
}

// summary is the model's view of a finalize result.
func (s *Server) summary(fr protocol.FinalizeResult) toolResult {
	out := finalizeOut{
		SessionID: fr.SessionID, TargetFile: s.shown(fr.SessionID, fr.TargetFile), Operation: fr.Operation,
		Bytes: fr.Bytes, Lines: fr.Lines, SHA256: fr.SHA256, FileSHA256: fr.FileSHA256, CreatedDirs: fr.CreatedDirs,
		Merged: fr.Merged, MergedHunks: fr.MergedHunks,
		NothingWritten: fr.NothingWritten, DryRun: fr.DryRun, Diff: fr.Diff,
	}
	if v := fr.Validation; v != nil {
		for _, f := range v.Findings {
			if !f.Preexisting {
				out.Findings = append(out.Findings, findingText(f))
			}
		}
	}
	for _, w := range fr.Warnings {
		out.Warnings = append(out.Warnings, w.Message)
	}
	for _, r := range fr.Repairs {
		out.Repairs = append(out.Repairs, r.Message)
	}
	for _, f := range fr.Files {
		out.Files = append(out.Files, s.shown(fr.SessionID, f.TargetFile))
	}
	var b strings.Builder
	switch {
	case fr.DryRun:
		fmt.Fprintf(&b, "Dry run of %s: nothing written. It would write %s, %s.", out.TargetFile, textfmt.CountGrouped(fr.Lines, "line", "lines"), textfmt.CountGrouped(fr.Bytes, "byte", "bytes"))
	case fr.NothingWritten:
		fmt.Fprintf(&b, "%s already holds this edit: nothing written.", out.TargetFile)
	default:
		sha := fr.SHA256
		if len(sha) > 12 {
			sha = sha[:12]
		}
		fmt.Fprintf(&b, "Wrote %s (%s): %s, %s, sha256 %s.", out.TargetFile, fr.Operation, textfmt.CountGrouped(fr.Lines, "line", "lines"), textfmt.CountGrouped(fr.Bytes, "byte", "bytes"), sha)
	}
	if fr.Merged {
		fmt.Fprintf(&b, " The file had changed since the write began: merged with that change (%s), which the file keeps.", mergedLines(fr.MergedHunks))
	}
	if len(out.Files) > 1 {
		fmt.Fprintf(&b, " Files: %s.", strings.Join(out.Files, ", "))
	}
	if len(out.CreatedDirs) > 0 {
		fmt.Fprintf(&b, " Created directories: %s.", strings.Join(out.CreatedDirs, ", "))
	}
	for _, list := range []struct {
		name  string
		items []string
	}{{"Repaired", out.Repairs}, {"Warnings", out.Warnings}, {"Findings", out.Findings}} {
		if len(list.items) > 0 {
			fmt.Fprintf(&b, " %s: %s.", list.name, strings.Join(capList(list.items), "; "))
		}
	}
	if !fr.DryRun && !fr.NothingWritten {
		fmt.Fprintf(&b, " To revert: undo with session_id %s.", fr.SessionID)
	}
	if fr.DryRun && fr.Diff != "" {
		b.WriteString("\n" + fr.Diff)
	}
	return toolResult{text: b.String(), structured: out}
}

// capList keeps a list in a result short.
func capList(items []string) []string {
	const most = 5
	if len(items) <= most {
		return items
	}
	return append(slices.Clone(items[:most]), fmt.Sprintf("and %d more", len(items)-most))
}

func findingText(f protocol.Finding) string {
	if f.Line > 0 {
		return fmt.Sprintf("line %d: %s", f.Line, f.Message)
	}
	return f.Message
}

// abortOut is write_abort's result.
type abortOut struct {
	SessionID string         `json:"session_id"`
	Stage     protocol.Stage `json:"stage"`
}

func (s *Server) writeAbort(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		SessionID string `json:"session_id"`
	}
	if err := s.decodeArgs(ToolWriteAbort, req, &a); err != nil {
		return toolResult{}, err
	}
	if a.SessionID == "" {
		return toolResult{}, argErrorf("write_abort needs session_id")
	}
	if err := s.ownSession(ctx, a.SessionID); err != nil {
		return toolResult{}, err
	}
	var ar protocol.AbortResult
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		ar, err = c.Abort(ctx, a.SessionID)
		return err
	})
	if err != nil {
		return toolResult{}, err
	}
	return toolResult{text: fmt.Sprintf("Session %s aborted: nothing was written.", ar.SessionID),
		structured: abortOut{SessionID: ar.SessionID, Stage: ar.Stage}}, nil
}

func (s *Server) writeFile(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		TargetFile string             `json:"target_file"`
		Operation  protocol.Operation `json:"operation"`
		Intent     string             `json:"intent"`
		Content    *string            `json:"content"`
		Expected   string             `json:"expected_sha256"`
	}
	if err := s.decodeArgs(ToolWriteFile, req, &a); err != nil {
		return toolResult{}, err
	}
	switch a.Operation {
	case protocol.OpCreate, protocol.OpOverwrite, protocol.OpAppend:
	case "":
		return toolResult{}, argErrorf("write_file needs operation: create, overwrite or append")
	default:
		return toolResult{}, argErrorf("write_file takes operation create, overwrite or append, not %q; use edit_file to change part of a file", a.Operation)
	}
	if a.Content == nil {
		return toolResult{}, argErrorf("write_file needs content: the whole file")
	}
	if len(*a.Content) > WriteFileMaxBytes {
		return toolResult{}, argErrorf("%s", protocol.Fill(protocol.PromptMCPTooLarge, "limit", textfmt.Size(WriteFileMaxBytes),
			"size", textfmt.Size(int64(len(*a.Content))), "lines", fmt.Sprint(ChunkAdviceLines)))
	}
	p, pl, err := s.beginParams(ctx, req, a.TargetFile, a.Operation, a.Intent)
	if err != nil {
		return toolResult{}, err
	}
	p.ExpectedSHA256 = a.Expected
	fr, err := s.whole(ctx, p, pl, *a.Content, false)
	if err != nil {
		return toolResult{}, err
	}
	return s.summary(fr), nil
}

// whole writes content that is all there: with one session.write when it
// fits, else begin, the content, finalize (on a failure before the
// finalize the session is aborted).
func (s *Server) whole(ctx context.Context, p protocol.BeginParams, pl placement, content string, dryRun bool) (protocol.FinalizeResult, error) {
	if !dryRun && int64(len(content)) <= s.maxChunkBytes(ctx) && !s.noWrite.Load() {
		fr, err := s.writeOnce(ctx, p, pl, content)
		if !isReason(err, protocol.ReasonUnknownMethod) {
			return fr, err
		}
		// A daemon from before session.write.
		s.noWrite.Store(true)
	}
	br, err := s.begin(ctx, p, pl)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	chunk := int(s.maxChunkBytes(ctx))
	err = s.daemon.do(ctx, func(c *client.Client) error {
		// A retry after a restart sends every chunk again: those already
		// journaled are acknowledged as duplicates.
		_, _, err := c.Stream(ctx, br.SessionID, strings.NewReader(content), client.StreamOptions{ChunkSize: chunk})
		return err
	})
	if err != nil {
		s.abandon(br.SessionID)
		return protocol.FinalizeResult{}, err
	}
	fr, err := s.finalize(ctx, br.SessionID, dryRun)
	if dryRun || err != nil && !isReason(err, protocol.ReasonValidationFailed) {
		// Nothing is kept of a dry run, nor of a write that failed for
		// another reason than a check (which keeps it for the corrected
		// attempt).
		s.abandon(br.SessionID)
	}
	return fr, err
}

// abandon aborts a session this server began and cannot finish, so it
// does not wait for its timeout.
func (s *Server) abandon(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.daemon.do(ctx, func(c *client.Client) error {
		_, err := c.Abort(ctx, id)
		return err
	})
}

func (s *Server) editFile(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		TargetFile string  `json:"target_file"`
		DryRun     bool    `json:"dry_run"`
		Edit       *string `json:"edit"`
		Expected   string  `json:"expected_sha256"`
	}
	if err := s.decodeArgs(ToolEditFile, req, &a); err != nil {
		return toolResult{}, err
	}
	if a.Edit == nil || strings.TrimSpace(*a.Edit) == "" {
		return toolResult{}, argErrorf("edit_file needs edit: search/replace blocks, a unified diff or a *** Begin Patch envelope")
	}
	target := a.TargetFile
	if target == "" {
		if target = editTarget(*a.Edit); target == "" {
			return toolResult{}, argErrorf("edit_file needs target_file: this edit names no file")
		}
	}
	if int64(len(*a.Edit)) > protocol.MaxPatchSpecBytes*64 {
		return toolResult{}, argErrorf("the edit is %s; send edits under 1 MiB, or write the file with write_begin", textfmt.Size(int64(len(*a.Edit))))
	}
	p, pl, err := s.beginParams(ctx, req, target, protocol.OpEdit, "")
	if err != nil {
		return toolResult{}, err
	}
	p.ExpectedSHA256 = a.Expected
	fr, err := s.whole(ctx, p, pl, *a.Edit, a.DryRun)
	if err != nil {
		return toolResult{}, err
	}
	return s.summary(fr), nil
}

// undoOut is undo's result.
type undoOut struct {
	SessionID     string   `json:"session_id"`
	TargetFile    string   `json:"target_file"`
	Removed       bool     `json:"removed,omitempty"`
	RestoredBytes int64    `json:"restored_bytes"`
	RemovedDirs   []string `json:"removed_dirs,omitempty"`
	// SHA256 is the file's content after the undo.
	SHA256 string `json:"sha256,omitempty"`
	// Merged: the file had changed since the write; only the write's own
	// change was reverted, and MergedHunks (the later change) kept.
	Merged      bool                 `json:"merged,omitempty"`
	MergedHunks []protocol.MergeHunk `json:"merged_hunks,omitempty"`
	// Unchanged: the file was already as the undo would leave it, and
	// nothing was written.
	Unchanged bool `json:"unchanged,omitempty"`
}

func (s *Server) undo(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		SessionID string `json:"session_id"`
		Last      bool   `json:"last"`
	}
	if err := s.decodeArgs(ToolUndo, req, &a); err != nil {
		return toolResult{}, err
	}
	id := a.SessionID
	if id == "" {
		if !a.Last {
			return toolResult{}, argErrorf("undo needs session_id (the write to undo) or last: true")
		}
		s.mu.Lock()
		id = s.lastWrite
		s.mu.Unlock()
		if id == "" {
			return toolResult{}, argErrorf("this server has completed no write yet; give the session_id to undo (list_sessions shows them)")
		}
	}
	if err := s.ownSession(ctx, id); err != nil {
		return toolResult{}, err
	}
	var ur protocol.UndoResult
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		ur, err = c.Undo(ctx, id)
		return err
	})
	if err != nil {
		return toolResult{}, err
	}
	out := undoOut{SessionID: ur.SessionID, TargetFile: s.shown(ur.SessionID, ur.TargetFile), Removed: ur.Removed,
		RestoredBytes: ur.RestoredBytes, RemovedDirs: ur.RemovedDirs, SHA256: ur.SHA256, Merged: ur.Merged, MergedHunks: ur.MergedHunks,
		Unchanged: ur.Unchanged}
	text := fmt.Sprintf("Undone: %s is back as it was before session %s (%s).", out.TargetFile, ur.SessionID, textfmt.CountGrouped(ur.RestoredBytes, "byte", "bytes"))
	if ur.Merged {
		text = fmt.Sprintf("Undone: session %s's change to %s was reverted; the file had changed since, and those later changes were kept (%s).",
			ur.SessionID, out.TargetFile, strings.Replace(mergedLines(ur.MergedHunks), "when the write began", "as the session wrote it", 1))
	}
	if ur.Removed {
		text = fmt.Sprintf("Undone: session %s had created %s, so it was removed.", ur.SessionID, out.TargetFile)
	}
	if ur.Unchanged {
		text = fmt.Sprintf("Undone: %s was already as before session %s (deleted or put back since), so nothing was written.", out.TargetFile, ur.SessionID)
	}
	if len(ur.RemovedDirs) > 0 {
		text += fmt.Sprintf(" Removed the directories it had made: %s.", strings.Join(ur.RemovedDirs, ", "))
	}
	return toolResult{text: text, structured: out}, nil
}

// sessionOut is one session in list_sessions' result.
type sessionOut struct {
	SessionID  string             `json:"session_id"`
	TargetFile string             `json:"target_file"`
	Operation  protocol.Operation `json:"operation"`
	Stage      protocol.Stage     `json:"stage"`
	// NextSeq is the seq of the next chunk, while the session is open.
	NextSeq   uint64    `json:"next_seq,omitempty"`
	Bytes     int64     `json:"bytes"`
	Lines     int64     `json:"lines"`
	UpdatedAt time.Time `json:"updated_at"`
}

type listOut struct {
	Sessions []sessionOut `json:"sessions"`
}

// Bounds of list_sessions' limit.
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

func (s *Server) listSessions(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error) {
	var a struct {
		Limit int            `json:"limit"`
		Stage protocol.Stage `json:"stage"`
	}
	if err := s.decodeArgs(ToolListSessions, req, &a); err != nil {
		return toolResult{}, err
	}
	limit := a.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	if a.Stage != "" && !slices.Contains(protocol.Stages, a.Stage) {
		names := make([]string, len(protocol.Stages))
		for i, st := range protocol.Stages {
			names[i] = string(st)
		}
		return toolResult{}, argErrorf("list_sessions: stage %.40q is not a stage; give one of %s, or none for all", a.Stage, strings.Join(names, ", "))
	}
	// Only the sessions of this workspace: the daemon serves every
	// workspace of the user.
	all, err := s.visibleSessions(ctx, callRoots(ctx), a.Stage, limit)
	if err != nil {
		return toolResult{}, err
	}
	out := listOut{Sessions: []sessionOut{}}
	var b strings.Builder
	for _, si := range all {
		so := sessionOut{SessionID: si.SessionID, TargetFile: s.shown(si.SessionID, si.TargetFile), Operation: si.Operation,
			Stage: si.Stage, Bytes: si.Bytes, Lines: si.Lines, UpdatedAt: si.UpdatedAt}
		if si.Stage.Open() {
			so.NextSeq = si.LastSeq + 1
		}
		out.Sessions = append(out.Sessions, so)
		fmt.Fprintf(&b, "%s %s %s %s: %s, %s", so.SessionID, so.Stage, so.Operation, so.TargetFile, textfmt.CountGrouped(so.Lines, "line", "lines"), textfmt.CountGrouped(so.Bytes, "byte", "bytes"))
		if so.NextSeq > 0 {
			fmt.Fprintf(&b, ", next seq %d", so.NextSeq)
		}
		b.WriteString("\n")
	}
	text := strings.TrimSuffix(b.String(), "\n")
	if text == "" {
		text = "No sessions."
		if a.Stage != "" {
			text = fmt.Sprintf("No sessions in stage %s.", a.Stage)
		}
	}
	return toolResult{text: text, structured: out}, nil
}

// writeOnce writes content with session.write. When the connection broke
// under the request, the write may have landed (the daemon journals it
// before writing, and recovery finishes it): before sending it again, the
// daemon's sessions are searched for it, so that a create is not refused
// as target_exists by its own first attempt.
func (s *Server) writeOnce(ctx context.Context, p protocol.BeginParams, pl placement, content string) (protocol.FinalizeResult, error) {
	var (
		fr      protocol.FinalizeResult
		attempt int
	)
	start := time.Now()
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		attempt++
		if attempt > 1 {
			if res, ok := landedWrite(ctx, c, p, content, start); ok {
				fr = res
				return nil
			}
		}
		fr, err = c.Write(ctx, protocol.WriteParams{BeginParams: p, Content: content})
		return err
	})
	var pe *protocol.Error
	switch {
	case err == nil:
		s.remember(fr.SessionID, pl)
		s.mu.Lock()
		s.lastWrite = fr.SessionID
		s.mu.Unlock()
		if p.Supersedes != "" {
			s.forgetRefused(pl.target, p.Supersedes)
		}
	case p.Supersedes != "" && (isReason(err, protocol.ReasonNotNeedsCorrections) || isReason(err, protocol.ReasonSessionNotFound)):
		// The refused attempt this corrects is gone: a fresh write.
		s.forgetRefused(pl.target, p.Supersedes)
		p.Supersedes = ""
		return s.writeOnce(ctx, p, pl, content)
	case errors.As(err, &pe) && pe.Code == protocol.CodeValidationFailed && pe.Data.SessionID != "":
		s.remember(pe.Data.SessionID, pl)
		s.mu.Lock()
		s.refused[pl.target] = pe.Data.SessionID
		s.mu.Unlock()
	}
	return fr, err
}

// landedWrite finds a session.write of content to p's target that
// completed since start.
func landedWrite(ctx context.Context, c *client.Client, p protocol.BeginParams, content string, start time.Time) (protocol.FinalizeResult, bool) {
	all, err := c.List(ctx, true)
	if err != nil {
		return protocol.FinalizeResult{}, false
	}
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])
	targets := []string{p.TargetFile}
	if real, err := filepath.EvalSymlinks(p.TargetFile); err == nil {
		targets = append(targets, real)
	}
	for _, si := range all {
		r := si.Result
		if r == nil || si.Stage != protocol.StageCompleted || si.Operation != p.Operation || r.SHA256 != want ||
			si.CreatedAt.Before(start.Add(-time.Second)) || !slices.Contains(targets, si.TargetFile) {
			continue
		}
		return *r, true
	}
	return protocol.FinalizeResult{}, false
}

// mergedLines says where the other writer's hunks are, briefly.
func mergedLines(hs []protocol.MergeHunk) string {
	if len(hs) == 0 {
		return "no line of it overlapped yours"
	}
	parts := make([]string, 0, len(hs))
	for _, h := range capHunks(hs) {
		switch {
		case h.EndLine < h.StartLine:
			parts = append(parts, fmt.Sprintf("inserted before line %d", h.StartLine))
		case h.EndLine == h.StartLine:
			parts = append(parts, fmt.Sprintf("line %d", h.StartLine))
		default:
			parts = append(parts, fmt.Sprintf("lines %d-%d", h.StartLine, h.EndLine))
		}
	}
	if len(hs) > 5 {
		parts = append(parts, fmt.Sprintf("and %d more", len(hs)-5))
	}
	return "its changes at " + strings.Join(parts, ", ") + " of the file as it was when the write began"
}

func capHunks(hs []protocol.MergeHunk) []protocol.MergeHunk {
	if len(hs) > 5 {
		return hs[:5]
	}
	return hs
}
