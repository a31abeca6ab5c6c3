package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/charset"
	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/internal/newfile"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/protocol"
)

// Defaults for validation.
const (
	// DefaultValidateMaxBytes bounds the content held in memory to repair
	// and parse it; larger content is streamed to disk unchecked, and the
	// summary says so.
	DefaultValidateMaxBytes = 8 << 20
	// DefaultMaxAttempts is how many corrected attempts a refused write
	// gets before the daemon says to stop.
	DefaultMaxAttempts = 3
)

// checked is content after repair and validation, ready to write.
type checked struct {
	// content is the repaired content, or nil when it was too large to
	// check and is streamed from the journal instead.
	content     []byte
	original    []byte
	hasOriginal bool
	repairs     []protocol.Repair
	// elisionsMerged counts the left-out regions filled from the file.
	elisionsMerged int
	validation     *protocol.Validation
	// edit is what a patch or edit session's edit did.
	edit *protocol.EditResult
	// input is a patch or edit session's streamed text (the edit), for a
	// merge that applies it again to another content.
	input []byte
	// asSent is set when content is the session's content byte for byte
	// (nothing repaired, merged, styled or encoded): a running sum of its
	// appends, if any, stands for its hash (see pendingSum), and a file
	// written as it streamed is the file (see stageStreamed).
	asSent bool
	// merged is set when content is a merge with a change made to the
	// target since begin; mergedHunks are that change's hunks.
	merged      bool
	mergedHunks []merge.Hunk
	// sampled is set when original is only a sample of a file over the
	// validation limit (see readTargetBounded): its conventions were
	// followed, but it has no hash, diff or merge to give.
	sampled bool
}

// checkedTarget is the file a check compares its content with: for a
// session.write, as its begin read it (see baseRead); for a whole-file
// write, at most the validation limit of it (see readTargetBounded). A
// patch or an edit is applied to the whole file, which is read whole.
func (m *Manager) checkedTarget(r *record, partial bool) (data []byte, ok, sampled bool, err error) {
	if r.base != nil || partial {
		data, ok, err = m.currentTarget(r)
		return data, ok, false, err
	}
	return m.readTargetBounded(m.fsOf(r), r.Target, m.cfg.ValidateMaxBytes)
}

// policies merges the session's validation policy over the daemon's.
func (m *Manager) policies(r *record) validate.Policies {
	if r.Validation == nil {
		return m.cfg.Validation
	}
	return toPolicies(r.Validation).Over(m.cfg.Validation)
}

func toPolicies(p *protocol.ValidationPolicy) validate.Policies {
	out := validate.Policies{All: validate.Policy(p.All)}
	if len(p.Categories) > 0 {
		out.Categories = make(map[validate.Category]validate.Policy, len(p.Categories))
		for c, v := range p.Categories {
			out.Categories[validate.Category(c)] = validate.Policy(v)
		}
	}
	return out
}

// check reads the session's content (when small enough), repairs it and
// validates it against the file it replaces.
func (m *Manager) check(r *record) (checked, error) {
	size := r.contentBytes()
	partial := r.Operation == protocol.OpPatch || r.Operation == protocol.OpEdit
	if size > m.cfg.ValidateMaxBytes && partial {
		pe := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonSessionTooLarge,
			"a %s of %d bytes is over the %d-byte limit for edits, which are applied in memory; write the whole file instead", r.Operation, size, m.cfg.ValidateMaxBytes)
		pe.Data.Limit = m.cfg.ValidateMaxBytes
		return checked{}, pe
	}
	if size > m.cfg.ValidateMaxBytes {
		return checked{validation: &protocol.Validation{
			FileType: string(validate.Detect(r.Target, nil)),
			SyntaxOK: true,
			Skipped:  fmt.Sprintf("content of %d bytes is over the %d-byte validation limit; written unchecked", size, m.cfg.ValidateMaxBytes),
		}}, nil
	}
	// A session.write not journaled yet has its content at hand, and only
	// a whole file's (a patch or an edit is journaled before it is
	// checked): Repair reads it where it is, and returns it as it is when
	// it changes nothing, so the content, still to be journaled as sent,
	// is not copied. Nothing from here on writes to what the check
	// returns, which may be that very view of the request.
	content := r.inline
	if content == nil {
		var buf bytes.Buffer
		buf.Grow(int(size))
		for _, s := range r.segments() {
			if s.Bytes == 0 {
				// Nothing journaled: a session finalized before its
				// first chunk may have no journal to read.
				continue
			}
			if _, err := m.cfg.Store.CopyRange(s.ID, &buf, 0, s.Bytes); err != nil {
				return checked{}, ioError(r.ID, "reading the journal", err)
			}
		}
		content = buf.Bytes()
	}
	original, hasOriginal, sampled, err := m.checkedTarget(r, partial)
	if err != nil {
		return checked{}, confinedError(r.ID, "reading the current target", err)
	}
	if sampled && r.Operation == protocol.OpAppend {
		// Appended text is checked as part of the file it extends, which
		// is over the limit: written unchecked, as larger content is.
		return checked{validation: &protocol.Validation{
			FileType: string(validate.Detect(r.Target, nil)),
			SyntaxOK: true,
			Skipped:  fmt.Sprintf("the file appended to is over the %d-byte validation limit; written unchecked", m.cfg.ValidateMaxBytes),
		}}, nil
	}
	if partial && !hasOriginal {
		pe := protocol.Errorf(protocol.CodeInvalidTarget, protocol.ReasonTargetMissing,
			"%s does not exist, and a %s changes an existing file; use create, or a *** Begin Patch envelope with *** Add File", r.Target, r.Operation)
		pe.Data.SessionID, pe.Data.Path = r.ID, r.Target
		return checked{}, pe
	}
	if partial {
		return m.checkEdit(r, content, original)
	}
	// A file in another encoding is repaired, merged and validated as the
	// UTF-8 text a model reads, and the result written back in its
	// encoding; raw keeps its bytes for the backup, the diff and merges.
	raw := original
	var codec *charset.Codec
	if hasOriginal {
		cs := m.charsetOf(r, r.Target)
		if codec, original, err = charset.DecodeFile(original, cs.Name, cs.From); err != nil {
			return checked{}, encodingError(r, err)
		}
	}
	repaired, fixes, err := validate.Repair(r.Target, content, original, hasOriginal, validate.RepairOptions{
		EndMarker:       r.Scanner.Marker,
		AllowLegacyDone: r.AllowLegacyDone,
	})
	var utf8Err *validate.UTF8Error
	if errors.As(err, &utf8Err) {
		pe := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8, "%v", err)
		pe.Data.SessionID = r.ID
		return checked{}, pe
	}
	if err != nil {
		return checked{}, ioError(r.ID, "repairing the content", err)
	}
	whole := repaired
	if r.Operation == protocol.OpAppend {
		// Appended text is checked as part of the file it extends; a BOM
		// belongs at the start of that file, never in its middle.
		repaired = bytes.TrimPrefix(repaired, []byte("\ufeff"))
		whole = append(append([]byte(nil), original...), repaired...)
	}
	// A whole-file text that left out unchanged code is merged into the
	// file where every left-out region is placed unambiguously; anywhere
	// else the placeholders stay, and validation refuses them naming the
	// candidate places.
	var elideErr error
	merged := 0
	if hasOriginal && !sampled && r.Operation != protocol.OpAppend {
		if el := validate.NewPlaceholderLines(r.Target, repaired, original); len(el) > 0 {
			out, n, err := elide.Merge(original, repaired, el)
			if err == nil {
				repaired, whole, merged = out, out, n
			} else {
				elideErr = err
			}
		}
	}
	c := checked{content: repaired, original: raw, hasOriginal: hasOriginal, sampled: sampled, elisionsMerged: merged}
	c.repairs = repairsOf(fixes)
	if codec != nil {
		enc := *codec
		if r.Operation == protocol.OpAppend {
			// The file's byte order mark is at its start already.
			enc.BOM = nil
		}
		if c.content, err = enc.Encode(repaired); err != nil {
			return checked{}, encodingError(r, err)
		}
		c.repairs = append(c.repairs, protocol.Repair{Kind: "charset_matched",
			Message: "written as " + codec.Name + " (" + codec.Source() + "), the encoding of the file it replaces"})
	}
	if !hasOriginal && r.Operation != protocol.OpAppend {
		// A new file takes the form the project names; validation reads
		// the text as the model wrote it.
		styled, changes, serr := newfile.Apply(repaired, m.newFileStyle(r))
		if serr != nil {
			return checked{}, encodingError(r, serr)
		}
		c.content = styled
		for _, ch := range changes {
			c.repairs = append(c.repairs, protocol.Repair{Kind: ch.Kind, Message: ch.Message})
		}
	}
	c.asSent = bytes.Equal(c.content, content)
	verr := m.validateText(&c, r, whole, original, hasOriginal)
	if elideErr != nil && c.validation != nil {
		for i := range c.validation.Findings {
			if c.validation.Findings[i].Code == string(validate.CodeLazyPlaceholder) {
				c.validation.Findings[i].Message += "; merging it into the file failed: " + elideErr.Error()
			}
		}
	}
	return c, verr
}

// checkEdit applies a patch or edit session's content to the file and
// validates the result against the file as it was.
func (m *Manager) checkEdit(r *record, content, original []byte) (checked, error) {
	cs := m.charsetOf(r, r.Target)
	r.charset = cs
	after, res, err := applyEdit(r, original, content)
	if err != nil {
		return checked{edit: res}, err
	}
	c := checked{content: after, original: original, hasOriginal: true, edit: res, input: content}
	for _, b := range res.Blocks {
		c.elisionsMerged += b.ElisionsMerged
	}
	// Validation reads the text, not the bytes of its encoding (a UTF-16
	// JSON file is JSON); the edit decoded the file the same way.
	textAfter, textOriginal := after, original
	if codec, o, err := charset.DecodeFile(original, cs.Name, cs.From); err == nil && codec != nil {
		if a, err := codec.Decode(after); err == nil {
			textAfter, textOriginal = a, o
		}
		c.repairs = append(c.repairs, protocol.Repair{Kind: "charset_matched",
			Message: "edited as " + codec.Name + " text (" + codec.Source() + ") and written back in " + codec.Name})
	}
	verr := m.validateText(&c, r, textAfter, textOriginal, true)
	// A placeholder left in a block's REPLACE part that could not be
	// merged is refused as any other; the finding says why it was not.
	if c.validation != nil {
		var why []string
		for _, b := range res.Blocks {
			if strings.Contains(b.Message, edit.UnmergedPlaceholder) {
				why = append(why, fmt.Sprintf("block %d: %s", b.Index, b.Message))
			}
		}
		for i := range c.validation.Findings {
			if len(why) > 0 && c.validation.Findings[i].Code == string(validate.CodeLazyPlaceholder) {
				c.validation.Findings[i].Message += "; " + strings.Join(why, "; ")
			}
		}
	}
	return c, verr
}

// encodingError is unsupported_encoding for r's target: its bytes do not
// survive decoding, or the text has a character its encoding lacks.
func encodingError(r *record, err error) *protocol.Error {
	pe := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonUnsupportedEncoding, "%s: %v", r.Target, err)
	pe.Data.SessionID, pe.Data.Path = r.ID, r.Target
	return pe
}

// validateInto checks whole (the file as it would be, in the bytes it
// is written in) against original and records the result and the
// policy's decision in c. A file in another encoding is checked as the
// text it holds.
func (m *Manager) validateInto(c *checked, r *record, whole, original []byte, hasOriginal bool) error {
	if hasOriginal {
		whole, original = m.textOf(r, r.Target, whole, original)
	}
	return m.validateText(c, r, whole, original, hasOriginal)
}

// validateText is validateInto for text decoded already.
func (m *Manager) validateText(c *checked, r *record, whole, original []byte, hasOriginal bool) error {
	opts := validate.CheckOptions{EndMarkerSeen: true}
	if c.sampled {
		// A sample's findings are not the file's: none is excused by it.
		original, hasOriginal, opts.OriginalUnread = nil, false, true
	}
	v, err := m.validateWith(r, r.Target, whole, original, hasOriginal, opts)
	c.validation = v
	return err
}

// validateFile checks the file path would become, under r's policy.
func (m *Manager) validateFile(r *record, path string, whole, original []byte, hasOriginal bool) (*protocol.Validation, error) {
	return m.validateWith(r, path, whole, original, hasOriginal, validate.CheckOptions{EndMarkerSeen: true})
}

// validateWith is validateFile with the check's options.
func (m *Manager) validateWith(r *record, path string, whole, original []byte, hasOriginal bool, opts validate.CheckOptions) (*protocol.Validation, error) {
	report := validate.Check(path, whole, original, hasOriginal, opts)
	decision := validate.Decide(report, m.policies(r))
	v := validationOf(report)
	v.Blocked, v.Summary = decision.Blocked, decision.Summary
	if v.Findings == nil {
		v.Findings = []protocol.Finding{}
	}
	return v, nil
}

// repairsOf is fixes as the wire has them: what convert makes of them,
// without encoding them to JSON and back.
func repairsOf(fixes []validate.Fix) []protocol.Repair {
	if fixes == nil {
		return nil
	}
	out := make([]protocol.Repair, len(fixes))
	for i, f := range fixes {
		out[i] = protocol.Repair{Kind: wireString(string(f.Kind)), Message: wireString(f.Message), Line: f.Line, Count: f.Count}
	}
	return out
}

// validationOf is report as the wire has it, as repairsOf.
func validationOf(report validate.Report) *protocol.Validation {
	v := &protocol.Validation{FileType: wireString(string(report.FileType)), Checker: wireString(report.Checker),
		SyntaxOK: report.SyntaxOK, Truncated: report.Truncated}
	if report.Findings != nil {
		v.Findings = make([]protocol.Finding, len(report.Findings))
		for i, f := range report.Findings {
			v.Findings[i] = protocol.Finding{Code: wireString(string(f.Code)), Category: wireString(string(f.Category)),
				Severity: wireString(string(f.Severity)), Line: f.Line, Column: f.Column, Message: wireString(f.Message),
				Snippet: wireString(f.Snippet), Preexisting: f.Preexisting}
		}
	}
	return v
}

// wireString is s as encoding/json carries it: each byte that is not
// valid UTF-8 replaced with U+FFFD.
func wireString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// convert copies between the engine's and the wire's types, which share
// their JSON form.
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// refuse keeps a session whose content a strict policy refused, with the
// findings, for a corrected attempt.
func (m *Manager) refuse(e *entry, v *protocol.Validation) error {
	r := &e.rec
	r.Stage = protocol.StageNeedsCorrections
	r.LastValidation = v
	r.UpdatedAt = m.cfg.Clock.Now()
	if err := m.put(r); err != nil {
		return err
	}
	m.stopTimers(e)
	m.traceStage(r, trace.Any("validation", v))
	left := m.cfg.MaxAttempts - r.attempt()
	next := fmt.Sprintf("Fix them and write the whole file again in a new session with supersedes=%s (%s left).", r.ID, textfmt.Count(left, "attempt", "attempts"))
	if left <= 0 {
		next = fmt.Sprintf("This was the last of %d attempts; stop and ask the user.", m.cfg.MaxAttempts)
	}
	pe := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonValidationFailed, "%s %s", v.Summary, next)
	pe.Data.SessionID, pe.Data.Next = r.ID, next
	pe.Data.Validation = v
	pe.Data.Attempt = r.attempt()
	pe.Data.MaxAttempts = m.cfg.MaxAttempts
	return pe
}

// supersede checks that a corrected attempt may replace the session it
// names, and returns the new attempt's number.
func (m *Manager) supersede(id, target string) (int, error) {
	e, err := m.lookup(id)
	if err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if r.Stage != protocol.StageNeedsCorrections {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNotNeedsCorrections,
			"session %s is %s; supersedes names a session whose write was refused (needs_corrections)", id, r.Stage)
		pe.Data.SessionID = id
		return 0, pe
	}
	if r.Target != target {
		pe := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"session %s wrote %s, not %s; a corrected attempt writes the same file", id, r.Target, target)
		pe.Data.Field = "supersedes"
		return 0, pe
	}
	attempt := r.attempt() + 1
	if attempt > m.cfg.MaxAttempts {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonAttemptsExhausted,
			"%s has had %d attempts, the limit; stop retrying and ask the user what to do", target, r.attempt())
		pe.Data.SessionID = id
		pe.Data.Attempt = r.attempt()
		pe.Data.MaxAttempts = m.cfg.MaxAttempts
		return 0, pe
	}
	return attempt, nil
}

// markSuperseded retires the refused session once its correction began.
func (m *Manager) markSuperseded(id, by string) {
	e, err := m.lookup(id)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.Stage = protocol.StageSuperseded
	e.rec.SupersededBy = by
	m.dropStream(e)
	e.rec.UpdatedAt = m.cfg.Clock.Now()
	if err := m.putFinished(&e.rec); err != nil {
		m.cfg.Logger.Warn("recording a superseded session", "session", id, "err", err)
	}
	m.traceStage(&e.rec, trace.String("superseded_by", by))
}

func (r *record) attempt() int {
	if r.Attempt == 0 {
		return 1
	}
	return r.Attempt
}
