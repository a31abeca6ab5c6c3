package pathguard

import (
	"errors"

	"github.com/orion-agent/orion/protocol"
)

// WireError maps err onto the protocol's codes: a refusal of this package
// keeps its reason, path, workspace and rule; any other error is an I/O
// error, its message prefixed with doing ("" for none). The session engine
// and the checkpoints answer path refusals alike through it.
func WireError(err error, doing string) error {
	var pe *Error
	if !errors.As(err, &pe) {
		if doing != "" {
			return protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "%s: %v", doing, err)
		}
		return protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "%v", err)
	}
	code := int64(protocol.CodePathNotAllowed)
	switch pe.Reason {
	case ReasonIsDirectory, ReasonSpecialFile, ReasonParentMissing:
		code = protocol.CodeInvalidTarget
	case ReasonRelativePath:
		code = protocol.CodeInvalidParams
	}
	return &protocol.Error{Code: code, Message: pe.Error(), Data: protocol.ErrorData{Reason: pe.Reason, Path: pe.Path,
		WorkspaceRoot: pe.Workspace, Rule: pe.Rule}}
}
