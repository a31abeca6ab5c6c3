package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// Placeholders of resendArgs for what did not arrive usable.
const (
	operationPlaceholder = "<create, overwrite, append, patch or edit>"
	patchSpecPlaceholder = `<object saying where your text goes, e.g. {"type": "replace_lines", "start_line": 3, "end_line": 5}>`
)

// beginArgs are the parsed arguments of a WritePlanTool_begin call, or the
// failure to send back instead.
type beginArgs struct {
	params  protocol.BeginParams
	ignored []string // members that are not parameters
	failed  *beginFailed
}

const resendAdvice = `Call WritePlanTool_begin again with complete JSON arguments: exactly the three string fields shown in "resend", ` +
	`replacing any <...> placeholder. Put no file content in the arguments: you write the content as plain text after the call.`

// patchResendAdvice is resendAdvice for a resend that carries a patch_spec.
const patchResendAdvice = `Call WritePlanTool_begin again with complete JSON arguments: exactly the fields shown in "resend", with patch_spec as a JSON object, ` +
	`replacing any <...> placeholder. Put no file content in the arguments: you write the text as plain text after the call.`

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
		return patchSpecArg{sent: true, problem: fmt.Sprintf(`"patch_spec" must be an object, not %s`, article(v.kind))}
	}
	// The scanner skips nested values loosely; the daemon needs valid JSON.
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.raw), &m); err != nil {
		return patchSpecArg{sent: true, problem: `"patch_spec" is not valid JSON`}
	}
	return patchSpecArg{sent: true, obj: json.RawMessage(v.raw), empty: len(m) == 0}
}

// resend is the patch_spec to show in a resend: the object sent, or a
// placeholder.
func (p patchSpecArg) resend() any {
	if p.obj != nil && !p.empty {
		return p.obj
	}
	return patchSpecPlaceholder
}

// parseBeginArgs checks a WritePlanTool_begin call's arguments. Whatever
// is wrong, the result says what to resend; it never degrades to "{}".
func parseBeginArgs(raw string) beginArgs {
	sc := scanArgs(raw)
	resend := &resendArgs{
		Intent:     "<one sentence: what this write does>",
		TargetFile: "<path of the file to write>",
		Operation:  operationPlaceholder,
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
		advice := resendAdvice
		if resend.PatchSpec != nil {
			advice = patchResendAdvice
		}
		return beginArgs{failed: &beginFailed{Error: code, Message: msg + " " + advice, Resend: resend, Received: preview(raw)}}
	}
	switch sc.status {
	case argsEmpty:
		return fail(ErrArgumentsMissing, "WritePlanTool_begin arrived without arguments, so no file was started.")
	case argsTruncated:
		where := ""
		switch {
		case sc.inValueOf != "":
			where = fmt.Sprintf(`, inside the value of "%s"`, sc.inValueOf)
		case sc.lastKey != "":
			where = fmt.Sprintf(`, after the value of "%s"`, sc.lastKey)
		}
		return fail(ErrArgumentsTruncated, fmt.Sprintf(
			"The arguments of WritePlanTool_begin were cut off after %d %s%s: they are not complete JSON, so no file was started.",
			sc.pos, textfmt.Word(sc.pos, "character", "characters"), where))
	case argsMalformed:
		return fail(ErrArgumentsMalformed, fmt.Sprintf(
			"The arguments of WritePlanTool_begin are not valid JSON: unexpected %s at character %d, so no file was started.",
			describeRune(sc.bad), sc.pos+1))
	}

	var problems []string
	str := func(name string) string {
		v, ok := sc.fields[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf(`"%s" is missing`, name))
		case v.kind != "string":
			problems = append(problems, fmt.Sprintf(`"%s" must be a string, not %s`, name, article(v.kind)))
		case strings.TrimSpace(v.str) == "":
			problems = append(problems, fmt.Sprintf(`"%s" is empty`, name))
		default:
			return v.str
		}
		return ""
	}
	intent, target, op := str("intent"), str("target_file"), str("operation")
	if op != "" && !knownOperation(op) {
		problems = append(problems, fmt.Sprintf(`"operation" must be create, overwrite, append, patch or edit, not "%s"`, op))
	}
	switch patch := op == string(protocol.OpPatch); {
	case patch && !spec.sent:
		problems = append(problems, `"patch_spec" is missing: operation patch needs it to say where your text goes`)
	case patch && spec.problem != "":
		problems = append(problems, spec.problem)
	case patch && spec.empty:
		problems = append(problems, `"patch_spec" is empty: operation patch needs its type and fields to say where your text goes`)
	case !patch && knownOperation(op) && spec.sent && !spec.empty:
		// Text meant for one place would replace or extend the whole file.
		problems = append(problems, fmt.Sprintf(`"patch_spec" goes only with operation patch, not "%s": `+
			`use patch to change only the part it names, or leave patch_spec out`, op))
		resend.Operation = fmt.Sprintf("<patch, or %s without patch_spec>", op)
		resend.PatchSpec = spec.resend()
	}
	if len(problems) > 0 {
		return fail(ErrArgumentsInvalid, "The arguments of WritePlanTool_begin are incomplete: "+
			strings.Join(problems, "; ")+". No file was started.")
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
	return fmt.Sprintf("The argument(s) %s are not parameters of WritePlanTool_begin and were ignored; "+
		"write the file's content as plain text, as the instructions say.", strings.Join(quoted, ", "))
}

// refusedResult turns a daemon's refusal of session.begin into a tool
// result the model can act on.
func refusedResult(err error) *beginFailed {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
		if advice := refusalAdvice(pe.Data.Reason); advice != "" {
			msg += ". " + advice
		}
	}
	return &beginFailed{Error: ErrBeginRefused, Message: "No file was started: " + msg}
}

// refusalAdvice says what to do instead, for the refusals a model can fix.
func refusalAdvice(reason string) string {
	switch reason {
	case protocol.ReasonTargetExists:
		return `Use "operation": "overwrite" to replace it or "append" to add to it, or choose another target_file.`
	case protocol.ReasonOutsideRoots, protocol.ReasonSymlinkEscape, protocol.ReasonRelativePath:
		return "Choose a target_file inside the workspace."
	case protocol.ReasonParentMissing:
		return "Choose a target_file in a directory that exists."
	case protocol.ReasonIsDirectory, protocol.ReasonSpecialFile:
		return "Choose a target_file that is a regular file."
	case protocol.ReasonTargetMissing:
		return `patch and edit change an existing file: use "operation": "create" to write a new one, or choose a target_file that exists.`
	case protocol.ReasonInvalidPatchSpec:
		return "Correct patch_spec as this says and call WritePlanTool_begin again."
	}
	return ""
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
