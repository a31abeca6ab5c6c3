package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// Errors a WritePlanTool_begin tool result can carry, in its "error" field.
const (
	ErrArgumentsMissing   = "arguments_missing"
	ErrArgumentsTruncated = "arguments_truncated"
	ErrArgumentsMalformed = "arguments_malformed"
	ErrArgumentsInvalid   = "arguments_invalid"
	ErrBeginRefused       = "begin_refused"
)

// receivedPreview bounds how much of bad arguments is echoed to the model:
// enough to see where they went wrong, not a whole file pasted back.
const receivedPreview = 200

// beginOK is the tool result of a session that began. Field order is the
// JSON order, which the Node package keeps too.
type beginOK struct {
	OK           bool   `json:"ok"`
	SessionID    string `json:"session_id"`
	TargetFile   string `json:"target_file"`
	Operation    string `json:"operation"`
	EndMarker    string `json:"end_marker"`
	Instructions string `json:"instructions"`
	Note         string `json:"note,omitempty"`
}

// beginFailed is the tool result of a call that started nothing: what was
// wrong, and the arguments to send instead.
type beginFailed struct {
	OK       bool        `json:"ok"`
	Error    string      `json:"error"`
	Message  string      `json:"message"`
	Resend   *resendArgs `json:"resend,omitempty"`
	Received string      `json:"received,omitempty"`
}

// resendArgs shows the model the exact call to make: what it sent that was
// usable, and a <placeholder> for each part it must supply. PatchSpec is
// there for a patch only: the object sent, or a placeholder.
type resendArgs struct {
	Intent     string `json:"intent"`
	TargetFile string `json:"target_file"`
	Operation  string `json:"operation"`
	PatchSpec  any    `json:"patch_spec,omitempty"`
}

// beginArgs are the parsed arguments of a WritePlanTool_begin call, or the
// failure to send back instead.
type beginArgs struct {
	params  protocol.BeginParams
	ignored []string // members that are not parameters
	failed  *beginFailed
}

// patchSpecArg is what arrived as patch_spec.
type patchSpecArg struct {
	sent    bool            // a value other than null arrived
	obj     json.RawMessage // the object, when it is one and valid JSON
	empty   bool            // obj is {}
	problem string          // why what arrived is not a usable object
}

func readPatchSpec(sc argsScan) patchSpecArg {
	v, ok := sc.fields["patch_spec"]
	if !ok || v.kind == "null" {
		return patchSpecArg{}
	}
	if v.kind != "object" {
		return patchSpecArg{sent: true, problem: protocol.Fill(protocol.PromptProblemPatchSpecType, "kind", article(v.kind))}
	}
	// The scanner skips nested values loosely; the daemon needs valid JSON.
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.raw), &m); err != nil {
		return patchSpecArg{sent: true, problem: protocol.PromptProblemPatchSpecJSON}
	}
	return patchSpecArg{sent: true, obj: json.RawMessage(v.raw), empty: len(m) == 0}
}

// resend is the patch_spec to show in a resend: the object sent, or a
// placeholder.
func (p patchSpecArg) resend() any {
	if p.obj != nil && !p.empty {
		return p.obj
	}
	return protocol.PromptPlaceholderPatchSpec
}

// parseBeginArgs checks a WritePlanTool_begin call's arguments. Whatever
// is wrong, the result says what to resend; it never degrades to "{}".
func parseBeginArgs(raw string) beginArgs {
	sc := scanArgs(raw)
	resend := &resendArgs{
		Intent:     protocol.PromptPlaceholderIntent,
		TargetFile: protocol.PromptPlaceholderTargetFile,
		Operation:  protocol.PromptPlaceholderOperation,
	}
	if v, ok := sc.fields["intent"]; ok && v.kind == "string" && v.str != "" {
		resend.Intent = v.str
	}
	if v, ok := sc.fields["target_file"]; ok && v.kind == "string" && v.str != "" {
		resend.TargetFile = v.str
	}
	if v, ok := sc.fields["operation"]; ok && v.kind == "string" && knownOperation(v.str) {
		resend.Operation = v.str
	}
	spec := readPatchSpec(sc)
	if resend.Operation == string(protocol.OpPatch) {
		resend.PatchSpec = spec.resend()
	}
	fail := func(code, msg string) beginArgs {
		advice := protocol.PromptResend
		if resend.PatchSpec != nil {
			advice = protocol.PromptResendPatch
		}
		return beginArgs{failed: &beginFailed{Error: code, Message: msg + " " + advice, Resend: resend, Received: preview(raw)}}
	}
	switch sc.status {
	case argsEmpty:
		return fail(ErrArgumentsMissing, protocol.PromptArgumentsMissing)
	case argsTruncated:
		where := ""
		switch {
		case sc.inValueOf != "":
			where = protocol.Fill(protocol.PromptTruncatedInside, "field", sc.inValueOf)
		case sc.lastKey != "":
			where = protocol.Fill(protocol.PromptTruncatedAfter, "field", sc.lastKey)
		}
		count := textfmt.Count(sc.pos, "character", "characters")
		return fail(ErrArgumentsTruncated, protocol.Fill(protocol.PromptArgumentsTruncated, "count", count, "where", where))
	case argsMalformed:
		return fail(ErrArgumentsMalformed, protocol.Fill(protocol.PromptArgumentsMalformed,
			"char", describeRune(sc.bad), "pos", strconv.Itoa(sc.pos+1)))
	}

	var problems []string
	str := func(name string) string {
		v, ok := sc.fields[name]
		switch {
		case !ok:
			problems = append(problems, protocol.Fill(protocol.PromptProblemMissing, "field", name))
		case v.kind != "string":
			problems = append(problems, protocol.Fill(protocol.PromptProblemNotString, "field", name, "kind", article(v.kind)))
		case strings.TrimSpace(v.str) == "":
			problems = append(problems, protocol.Fill(protocol.PromptProblemEmpty, "field", name))
		default:
			return v.str
		}
		return ""
	}
	intent, target, op := str("intent"), str("target_file"), str("operation")
	if op != "" && !knownOperation(op) {
		problems = append(problems, protocol.Fill(protocol.PromptProblemOperation, "op", op))
	}
	switch patch := op == string(protocol.OpPatch); {
	case patch && !spec.sent:
		problems = append(problems, protocol.PromptProblemPatchSpecMissing)
	case patch && spec.problem != "":
		problems = append(problems, spec.problem)
	case patch && spec.empty:
		problems = append(problems, protocol.PromptProblemPatchSpecEmpty)
	case !patch && knownOperation(op) && spec.sent && !spec.empty:
		// Text meant for one place would replace or extend the whole file.
		problems = append(problems, protocol.Fill(protocol.PromptProblemPatchSpecWithout, "op", op))
		resend.Operation = protocol.Fill(protocol.PromptPlaceholderOperationOr, "op", op)
		resend.PatchSpec = spec.resend()
	}
	if len(problems) > 0 {
		return fail(ErrArgumentsInvalid, protocol.Fill(protocol.PromptArgumentsInvalid, "problems", strings.Join(problems, "; ")))
	}
	var ignored []string
	for name := range sc.fields {
		if name != "intent" && name != "target_file" && name != "operation" && name != "patch_spec" {
			ignored = append(ignored, name)
		}
	}
	slices.Sort(ignored)
	p := protocol.BeginParams{Intent: intent, TargetFile: target, Operation: protocol.Operation(op)}
	if op == string(protocol.OpPatch) {
		p.PatchSpec = spec.obj
	}
	return beginArgs{params: p, ignored: ignored}
}

func knownOperation(op string) bool {
	return slices.Contains(protocol.Operations, protocol.Operation(op))
}

func article(kind string) string {
	switch kind {
	case "array", "object":
		return "an " + kind
	case "null":
		return "null"
	}
	return "a " + kind
}

// describeRune names an unexpected character so the model can find it: the
// character itself in backquotes when printable ASCII, else its code point.
func describeRune(r rune) string {
	if r > 0x20 && r < 0x7f && r != '`' {
		return fmt.Sprintf("`%c`", r)
	}
	return fmt.Sprintf("U+%04X", r)
}

// preview cuts bad arguments to receivedPreview characters.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= receivedPreview {
		return s
	}
	return string([]rune(s)[:receivedPreview]) + "…"
}

// ignoredNote tells the model which members were not parameters.
func ignoredNote(ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	quoted := make([]string, len(ignored))
	for i, n := range ignored {
		quoted[i] = `"` + n + `"`
	}
	return protocol.Fill(protocol.PromptIgnored, "names", strings.Join(quoted, ", "))
}

// refusedResult turns a daemon's refusal of session.begin into a tool
// result the model can act on.
func refusedResult(err error) *beginFailed {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
		if advice := protocol.RefusalAdvice[pe.Data.Reason]; advice != "" {
			msg += ". " + advice
		}
	}
	return &beginFailed{Error: ErrBeginRefused, Message: protocol.Fill(protocol.PromptRefused, "message", msg)}
}

// toJSON encodes a tool result as the Node package does: no HTML escaping,
// no trailing newline.
func toJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only strings, bools and patch_spec objects already checked to be
		// valid JSON are encoded here.
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
