package session

import (
	"strings"

	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/protocol"
)

// The engine reports failures as *protocol.Error: they are plain data (code,
// reason, message) and the daemon passes them to the client unchanged, so a
// known failure never turns into a generic one on the way out.

// sentence ends a message with a period, so that another sentence can
// follow it, unless it ends with punctuation already.
func sentence(s string) string {
	s = strings.TrimRight(s, " \n")
	if s == "" || strings.ContainsAny(s[len(s)-1:], ".!?:") {
		return s
	}
	return s + "."
}

func notFound(id string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeSessionNotFound, protocol.ReasonSessionNotFound,
		"no session %q: it never existed, was pruned, or was begun with nothing appended before the daemon was killed; begin a new session", id)
	e.Data.SessionID = id
	return e
}

func closed(r *record) *protocol.Error {
	e := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonSessionClosed,
		"session %s is %s and accepts no more calls; begin a new session", r.ID, r.Stage)
	e.Data.SessionID = r.ID
	return e
}

func missingField(field string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMissingField, "%s is required", field)
	e.Data.Field = field
	return e
}

func ioError(id, doing string, err error) *protocol.Error {
	e := protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "%s: %v", doing, err)
	e.Data.SessionID = id
	return e
}

// pathError maps a pathguard refusal onto the wire's codes.
func pathError(err error) error { return pathguard.WireError(err, "resolving the target") }

func unknownOperation(op protocol.Operation) *protocol.Error {
	e := protocol.Errorf(protocol.CodeInvalidOperation, protocol.ReasonUnknownOperation,
		"unknown operation %q; use one of %v", op, protocol.Operations)
	e.Data.Field = "operation"
	return e
}

func sizeLimit(reason string, limit int64, what string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeTooLarge, reason, "%s exceeds the limit of %d bytes", what, limit)
	e.Data.Limit = limit
	return e
}

func seqGap(id string, got, want uint64) *protocol.Error {
	e := protocol.Errorf(protocol.CodeSeqGap, protocol.ReasonSeqGap,
		"chunk seq %d skips ahead: the next expected seq is %d; resend from seq %d", got, want, want)
	e.Data.SessionID = id
	e.Data.ExpectedSeq = want
	return e
}

func seqConflict(id string, seq, next uint64) *protocol.Error {
	e := protocol.Errorf(protocol.CodeSeqConflict, protocol.ReasonSeqConflict,
		"chunk seq %d was already acknowledged with different bytes; the next expected seq is %d", seq, next)
	e.Data.SessionID = id
	e.Data.ExpectedSeq = next
	return e
}

func markerMissing(r *record) *protocol.Error {
	e := protocol.Errorf(protocol.CodeMarkerMissing, protocol.ReasonMarkerMissing,
		"session %s has not received its end marker %s, so its content may be cut off; "+
			"send the rest ending with the marker, or finalize with end_of_input if the input really ended",
		r.ID, r.Scanner.Marker)
	e.Data.SessionID = r.ID
	return e
}

func targetExists(path string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeTargetExists, protocol.ReasonTargetExists,
		"%s already exists and operation create never replaces a file; use overwrite or append", path)
	e.Data.Path = path
	return e
}
