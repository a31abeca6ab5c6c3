package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// jsonError is the one JSON object --json prints on stderr for a failure.
type jsonError struct {
	// Code is the daemon's JSON-RPC error code; 0 for a failure of
	// orionctl itself.
	Code int64 `json:"code"`
	// Reason is the daemon's data.reason, or usage, daemon_unreachable or
	// local_error for a failure of orionctl itself.
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	ExitCode int    `json:"exit_code"`
	// Data is the daemon's error data, when the daemon refused.
	Data *protocol.ErrorData `json:"data,omitempty"`
}

// printErrorJSON writes err as one line of JSON.
func printErrorJSON(w io.Writer, err error, code int) {
	je := jsonError{Message: err.Error(), ExitCode: code}
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		je.Code, je.Reason, je.Data = pe.Code, pe.Data.Reason, &pe.Data
		var re *refusedError
		if errors.As(err, &re) {
			je.Message = re.text
		} else {
			je.Message = pe.Message
		}
	case code == exitUsage:
		je.Reason = "usage"
	case errors.Is(err, client.ErrDaemonUnreachable):
		je.Reason = "daemon_unreachable"
	default:
		je.Reason = "local_error"
	}
	b, _ := json.Marshal(je)
	fmt.Fprintf(w, "%s\n", b)
}

// refusedError is a refusal of the daemon told in orionctl's words: what was
// wrong, and what to do next with orionctl, where the daemon's own message
// addresses an agent's client (a new session with supersedes=...). It
// unwraps to the daemon's *protocol.Error.
type refusedError struct {
	text string
	pe   *protocol.Error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s (%s, code %d)", e.text, e.pe.Data.Reason, e.pe.Code)
}

func (e *refusedError) Unwrap() error { return e.pe }

// Next steps orionctl suggests after a refusal, by what is left of the
// session.
const (
	nextAborted  = "Nothing was written. Fix the input and run the command again."
	nextTxAbort  = "Nothing was written. Fix the files and run the command again."
	nextDryRun   = "Nothing was written (dry run). Fix the input and run the command again."
	nextReplaced = "Nothing was written. Write the corrected content in a new session: orionctl write --supersedes %[1]s (or begin --supersedes %[1]s)."
)

// contentRefusal describes content the daemon refused (or, in a dry run,
// would refuse): the edit that does not apply, or the validation findings
// that block. It is empty when nothing blocks.
func contentRefusal(name string, v *protocol.Validation, editMsg string) string {
	if editMsg != "" {
		// The daemon's message names the file.
		return "the edit does not apply:\n" + sentence(editMsg)
	}
	if v == nil || !v.Blocked {
		return ""
	}
	lines := findingLines(v, "error")
	if len(lines) == 0 {
		// Under a strict policy warnings block too (a lazy placeholder):
		// name them rather than print an empty list.
		lines = findingLines(v, "warning")
	}
	head := fmt.Sprintf("%s: %s must be fixed first:", name, textfmt.Count(len(lines), "problem", "problems"))
	return head + "\n" + strings.Join(lines, "\n")
}

// findingLines lists the new findings of one severity, one per line.
func findingLines(v *protocol.Validation, severity string) []string {
	var lines []string
	for _, f := range v.Findings {
		if f.Severity == severity && !f.Preexisting {
			lines = append(lines, fmt.Sprintf("  line %d col %d: %s [%s]", f.Line, f.Column, f.Message, f.Code))
		}
	}
	return lines
}

// refusal rewrites a daemon error about refused content (validation_failed,
// edit_failed, tx_refused) in orionctl's words, with next as the last line;
// other errors are returned as they are.
func refusal(err error, name, next string) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err
	}
	var text string
	switch pe.Data.Reason {
	case protocol.ReasonValidationFailed:
		text = contentRefusal(name, pe.Data.Validation, "")
	case protocol.ReasonEditFailed:
		text = contentRefusal(name, nil, strings.TrimSuffix(pe.Message, " "+pe.Data.Next))
	case protocol.ReasonTxRefused:
		var parts []string
		for _, f := range pe.Data.Files {
			editMsg := ""
			if f.Reason == protocol.ReasonEditFailed {
				editMsg = f.Message
			}
			part := contentRefusal(displayName(f.TargetFile), f.Validation, editMsg)
			if part == "" {
				part = fmt.Sprintf("%s: %s (%s)", displayName(f.TargetFile), sentence(f.Message), f.Reason)
			}
			parts = append(parts, part)
		}
		text = fmt.Sprintf("transaction %s: %s failed the check:\n%s",
			pe.Data.TxID, textfmt.Count(len(pe.Data.Files), "file", "files"), strings.Join(parts, "\n"))
	}
	if text == "" {
		return err
	}
	return &refusedError{text: text + "\n" + next, pe: pe}
}

// dryRunRefusal is the error of a dry run that found what the real run
// would refuse, with the real run's message; nil when the write would go
// through.
func dryRunRefusal(res protocol.FinalizeResult, next string) error {
	text := contentRefusal(displayName(res.TargetFile), res.Validation, editWarning(res))
	if text == "" {
		return nil
	}
	reason, code := protocol.ReasonValidationFailed, int64(protocol.CodeValidationFailed)
	if editWarning(res) != "" {
		reason, code = protocol.ReasonEditFailed, protocol.CodeEditFailed
	}
	pe := &protocol.Error{Code: code, Message: text, Data: protocol.ErrorData{Reason: reason, SessionID: res.SessionID,
		Validation: res.Validation, Edit: res.Edit}}
	return &refusedError{text: text + "\n" + next, pe: pe}
}

// editWarning is the message of a dry run's failed edit, which the daemon
// reports as an edit_failed warning.
func editWarning(res protocol.FinalizeResult) string {
	for _, w := range res.Warnings {
		if w.Code == protocol.ReasonEditFailed {
			return w.Message
		}
	}
	return ""
}

// sentence ends s with a period unless it ends with punctuation already.
func sentence(s string) string {
	s = strings.TrimRight(s, " \n")
	if s == "" || strings.ContainsAny(s[len(s)-1:], ".!?:") {
		return s
	}
	return s + "."
}
