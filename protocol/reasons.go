package protocol

//go:generate go run ../internal/cmd/errtable -doc ../docs/protocol.md

// ReasonDoc documents one reason: the code it travels with and what it
// means to a client.
type ReasonDoc struct {
	Code   int64
	Reason string
	// Doc says what went wrong and, where it helps, which data field
	// carries more; one line of the error table in docs/protocol.md.
	Doc string
}

// ErrorReasons is every reason the daemon sends, with its code: the single
// source of the error table in docs/protocol.md (go generate ./protocol rewrites it).
// A Reason constant missing here fails internal/cmd/errtable's test.
var ErrorReasons = []ReasonDoc{
	{CodeParseError, ReasonInvalidJSON, "a frame whose body is not JSON; the connection stays usable"},
	{CodeParseError, ReasonMalformedFrame, "a frame that cannot be read (its header); the connection closes"},
	{CodeInvalidRequest, ReasonInvalidRequest, "JSON that is no request: not an object, no string method, `jsonrpc` not \"2.0\", a null or over-long id"},
	{CodeInvalidRequest, ReasonBatchNotSupported, "a batch (a JSON array): send requests one by one"},
	{CodeMethodNotFound, ReasonUnknownMethod, "no such method (`data.method`)"},
	{CodeInvalidParams, ReasonMalformedParams, "the params are not the JSON the method takes"},
	{CodeInvalidParams, ReasonRawContentNotTaken, "raw content (an `Orion-Raw-Length` header) sent to a method that takes none (`data.method`); the connection stays usable"},
	{CodeInvalidParams, ReasonContentSentTwice, "raw content sent, and the field it stands for (`data.field`) present in the params' JSON too"},
	{CodeInvalidParams, ReasonMissingField, "a required field is missing (`data.field`), also `chunk: null`"},
	{CodeInvalidParams, ReasonInvalidDuration, "a duration below 0 or above its maximum (`data.field`, `data.limit` in ms)"},
	{CodeInvalidParams, ReasonSeqZero, "a chunk's seq is 0; seqs start at 1"},
	{CodeInvalidParams, ReasonRelativePath, "a relative target without a workspace_root"},
	{CodeInvalidParams, ReasonInvalidPatchSpec, "patch_spec is missing or malformed"},
	{CodeInvalidParams, ReasonDuplicate, "two files of a transaction name the same target"},
	{CodeInternalError, ReasonInternal, "a bug in the daemon; the message says where"},
	{CodeSessionNotFound, ReasonSessionNotFound, "no session has this id (never existed, or pruned)"},
	{CodeSessionState, ReasonSessionClosed, "the session is completed or aborted"},
	{CodeSessionState, ReasonMarkerAlreadySeen, "reserved: this daemon does not send it"},
	{CodeSessionState, ReasonNotTruncated, "session.continue of a session that is not truncated"},
	{CodeSessionState, ReasonAlreadyContinued, "the truncated session was continued already"},
	{CodeSessionState, ReasonNothingToUndo, "the session has no completed write to undo (not completed, a dry run, or undone already)"},
	{CodeSessionState, ReasonNotNeedsCorrections, "supersedes names a session whose write was not refused"},
	{CodeSessionState, ReasonAttemptsExhausted, "the corrected attempts are used up (`--max-attempts`): stop and ask the user"},
	{CodeSessionState, ReasonTxState, "the transaction's stage does not allow the call"},
	{CodeSessionState, ReasonTxMember, "the session belongs to a transaction: use tx.commit or tx.abort"},
	{CodeSeqGap, ReasonSeqGap, "the seq skips ahead (`data.expected_seq`)"},
	{CodeSeqConflict, ReasonSeqConflict, "a seq already acknowledged, sent again with other bytes"},
	{CodeTargetExists, ReasonTargetExists, "create of a file that exists"},
	{CodePathNotAllowed, ReasonOutsideRoots, "the target is outside every allowed root (`data.allowed_roots`)"},
	{CodePathNotAllowed, ReasonSymlinkEscape, "a symlink on the way leads outside the allowed roots"},
	{CodePathNotAllowed, ReasonWorkspaceNotAllowed, "the workspace_root is outside every allowed root"},
	{CodePathNotAllowed, ReasonProtected, "a protected path: `data.rule` names the rule (see the Security model); only the person lifts it, with --allow-protected"},
	{CodePathNotAllowed, ReasonRootRefused, "daemon.allow_root of what may not be an allowed root: `/`, a relative path, not an existing directory (`data.path`); a protected directory is refused with `protected_path`"},
	{CodePathNotAllowed, ReasonOutsideWorkspace, "the target, or a file an edit or a transaction names, is outside the session's workspace_root (`data.path`, `data.workspace_root`)"},
	{CodePathNotAllowed, ReasonPathChanged, "a directory on the way was replaced or a symlink changed since the path was checked"},
	{CodeInvalidTarget, ReasonIsDirectory, "the target is a directory"},
	{CodeInvalidTarget, ReasonSpecialFile, "the target is a FIFO, socket or device"},
	{CodeInvalidTarget, ReasonParentMissing, "a file stands where a directory should be (missing directories are made)"},
	{CodeInvalidTarget, ReasonTargetMissing, "must_exist, a patch or an edit found no file"},
	{CodeTooLarge, ReasonChunkTooLarge, "a chunk is over `--max-chunk-bytes` (`data.limit`)"},
	{CodeTooLarge, ReasonSessionTooLarge, "the session is over `--max-session-bytes` (`data.limit`)"},
	{CodeTooLarge, ReasonFieldTooLarge, "a string or list in the params is over its limit (`data.field`, `data.limit`; see Field limits)"},
	{CodeTooLarge, ReasonTooManyFollows, "trace.follow on a connection that follows 4 times already (`data.limit`): a follow lasts until its connection closes; open another connection"},
	{CodeTooLarge, ReasonMessageTooLarge, "a frame's Content-Length is over the message limit (`data.limit`); refused from the header, then the connection closes"},
	{CodeMarkerMissing, ReasonMarkerMissing, "finalize before the end marker, without end_of_input"},
	{CodeInvalidOperation, ReasonUnknownOperation, "the operation is not one the daemon knows"},
	{CodeIO, ReasonIO, "reading or writing a file or the store failed"},
	{CodeIO, ReasonBackupFailed, "the old content could not be kept for undo, so nothing was written"},
	{CodeTargetChanged, ReasonTargetChanged, "the target changed on disk since the session began (finalize with `force` to overwrite)"},
	{CodeValidationFailed, ReasonValidationFailed, "a strict check refused the content (findings in `data.validation`)"},
	{CodeValidationFailed, ReasonInvalidUTF8, "text that is not valid UTF-8: a request's params with invalid bytes or a lone surrogate escape (`data.field` is `chunk` or `params`; nothing stored), or content a strict policy refuses"},
	{CodeEditFailed, ReasonEditFailed, "the patch or edit does not apply (a status per block in `data.edit`)"},
	{CodeValidationFailed, ReasonUnsupportedEncoding, "a whole-file write's text has a character the file's encoding cannot hold (the charset its project names in `.editorconfig` or `.gitattributes`, or the one its bytes show: a `€` in Latin-1), or the existing file's bytes would not survive decoding to UTF-8 and back; nothing is written"},
	{CodeEditFailed, ReasonUnsupportedEncoding, "an edit of a file whose bytes would not survive decoding to UTF-8 and back (a UTF-16 file with an unpaired surrogate, bytes its named encoding does not have), or whose new text has a character the file's encoding cannot hold; nothing is written"},
	{CodeTxNotFound, ReasonTxNotFound, "no transaction has this id"},
	{CodeTxFailed, ReasonTxRefused, "a file failed the check; nothing was written (`data.files`)"},
	{CodeTxFailed, ReasonTxRolledBack, "writing failed and every file was put back (`data.files`)"},
	{CodeTooManyConnections, ReasonTooManyConnections, "the daemon serves `--max-connections` clients already, or this process its `--max-client-connections` share (id null; the connection closes); also a connection of the status reserve asking anything but daemon.status"},
	{CodeRequestCancelled, ReasonRequestCancelled, "a listing or a session's content its client cancelled with `$/cancelRequest` before it was answered; nothing was changed"},
	{CodeTooManySessions, ReasonTooManySessions, "the daemon holds `--max-sessions` unfinished sessions, or this client `--max-client-sessions` (`data.limit`): finish or abort some"},
	{CodeTooLarge, ReasonStoreFull, "the store is at `--store-max-bytes` with no undo backup left to drop (`data.limit`); nothing acknowledged is dropped"},
	{CodeTurnNotFound, ReasonTurnNotFound, "no turn has this `turn_id` (or, with `last`, the workspace has no ended turn left to undo)"},
	{CodeTurnNotFound, ReasonOperationNotFound, "no undo has this `operation_id` (or, with `last`, none is left to redo)"},
	{CodeTurnNotFound, ReasonCheckpointNotFound, "a checkpoint the call needs was dropped by `--checkpoint-retention` or `--store-max-bytes`"},
	{CodeTurnState, ReasonTurnOpen, "undo of a turn that has not ended: call turn.end first"},
	{CodeTurnState, ReasonTurnUndone, "undo of a turn already undone (redo it first), or redo of an undo already redone"},
	{CodeTurnState, ReasonTurnUnrecorded, "the turn has no checkpoints: its workspace was too big to record"},
	{CodeWorkspaceTooBig, ReasonWorkspaceTooBig, "the workspace is over `--checkpoint-max-workspace-files` or `--checkpoint-max-workspace-bytes` after the ignores (`data.limit`): no checkpoint, never a partial one"},
	{CodePathNotAllowed, ReasonWorkspaceForbidden, "the home directory itself or `/` named as a turn's workspace: name a project directory"},
	{CodeSessionState, ReasonBackupDropped, "undo of a write whose backup was dropped to keep the store under `--store-max-bytes`"},
}
