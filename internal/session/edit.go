package session

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/protocol"
)

// checkPartialEdit refuses at begin what a patch or edit can never do: a
// malformed patch_spec, or a file that is not there to change.
func checkPartialEdit(p protocol.BeginParams, exists bool, target string) error {
	// An edit may be a *** Begin Patch envelope that only adds files, so
	// its target need not exist yet; finalize says so if it was not one.
	if (p.MustExist || p.Operation == protocol.OpPatch) && !exists {
		e := protocol.Errorf(protocol.CodeInvalidTarget, protocol.ReasonTargetMissing,
			"%s does not exist, and operation %s (or must_exist) needs an existing file; use create", target, p.Operation)
		e.Data.Path = target
		return e
	}
	if p.Operation != protocol.OpPatch {
		return nil
	}
	if _, err := decodePatchSpec(p.PatchSpec); err != nil {
		return err
	}
	return nil
}

func decodePatchSpec(raw json.RawMessage) (edit.PatchSpec, error) {
	var spec edit.PatchSpec
	bad := func(err error) error {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonInvalidPatchSpec, "patch_spec: %v", err)
		e.Data.Field = "patch_spec"
		return e
	}
	if len(raw) == 0 {
		return spec, bad(errors.New("operation patch needs a patch_spec saying where the text goes"))
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return spec, bad(err)
	}
	if err := spec.Validate(); err != nil {
		return spec, bad(err)
	}
	return spec, nil
}

// applyEdit computes the new file of a patch or edit session from the file
// as it is and the streamed content.
func applyEdit(r *record, original, content []byte) ([]byte, *protocol.EditResult, error) {
	var (
		res edit.Result
		err error
	)
	if r.Operation == protocol.OpPatch {
		spec, derr := decodePatchSpec(r.PatchSpec)
		if derr != nil {
			return nil, nil, derr
		}
		res, err = edit.ApplyPatchAs(original, spec, content, r.charset)
	} else {
		res, err = edit.ApplyFileAs(r.Target, original, content, r.charset)
	}
	out := &protocol.EditResult{}
	if cerr := convert(res, out); cerr != nil {
		return nil, nil, ioError(r.ID, "encoding the edit result", cerr)
	}
	if out.Blocks == nil {
		out.Blocks = []protocol.EditBlock{}
	}
	if r.Operation == protocol.OpPatch {
		out.Format = "patch"
	}
	if err != nil {
		pe := protocol.Errorf(protocol.CodeEditFailed, protocol.ReasonEditFailed, "%s: %v", r.Target, err)
		if errors.Is(err, edit.ErrUnsupportedEncoding) {
			pe.Data.Reason = protocol.ReasonUnsupportedEncoding
		}
		if errors.Is(err, edit.ErrMultiFile) {
			pe.Message = fmt.Sprintf("%s: the edit touches several files; send one session per file", r.Target)
		}
		pe.Data.SessionID = r.ID
		pe.Data.Edit = out
		return nil, out, pe
	}
	return res.Content, out, nil
}
