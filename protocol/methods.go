package protocol

import "reflect"

// Method names served by oriond over JSON-RPC 2.0; MethodDocs says what
// each does.
const (
	MethodSessionBegin    = "session.begin"
	MethodSessionAppend   = "session.append"
	MethodSessionFinalize = "session.finalize"
	MethodSessionAbort    = "session.abort"
	MethodSessionGet      = "session.get"
	MethodSessionList     = "session.list"
	MethodSessionResume   = "session.resume"
	MethodSessionContinue = "session.continue"
	MethodSessionClean    = "session.clean"
	MethodSessionUndo     = "session.undo"
	// MethodSessionWrite writes a whole file in one request: begin, the
	// content and finalize.
	MethodSessionWrite = "session.write"
	// Transactions: several files written all or none.
	MethodTxBegin  = "tx.begin"
	MethodTxCommit = "tx.commit"
	MethodTxAbort  = "tx.abort"
	MethodTxGet    = "tx.get"
	// MethodTraceList returns stored trace events that match filters.
	MethodTraceList = "trace.list"
	// MethodTraceFollow subscribes the calling connection to new trace
	// events: each is sent as a trace.event notification until the
	// connection closes.
	MethodTraceFollow  = "trace.follow"
	MethodDaemonStatus = "daemon.status"
	// MethodDaemonAllowRoot adds an allowed root while the daemon runs,
	// and keeps it across restarts.
	MethodDaemonAllowRoot  = "daemon.allow_root"
	MethodToolsDefinitions = "tools.definitions"
)

// Method is one JSON-RPC method of the daemon: its name, and as type
// parameters the params it takes (P) and the result it answers with (R).
// The daemon's handler for a method and a Go client's call of it are both
// typed by the same Method value, so the compiler holds them to one
// contract.
type Method[P, R any] struct {
	Name string
}

// Spec describes m without its type parameters, for tables and generators.
func (m Method[P, R]) Spec() MethodSpec {
	return MethodSpec{Name: m.Name, Doc: MethodDocs[m.Name], Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

// MethodSpec is a Method as a value: its name, doc, and its params and
// result types.
type MethodSpec struct {
	Name   string
	Doc    string
	Params reflect.Type
	Result reflect.Type
}

// NoParams is the params of a method that takes none. Whatever a client
// sends as params to such a method is ignored.
type NoParams struct{}

// Every method, typed. Adding a method: its name above (or beside its
// types), its Method here, its entry in MethodSpecs, then its entry in the
// daemon's method table (daemon/methods.go).
var (
	SessionBegin     = Method[BeginParams, BeginResult]{MethodSessionBegin}
	SessionAppend    = Method[AppendParams, AppendResult]{MethodSessionAppend}
	SessionFinalize  = Method[FinalizeParams, FinalizeResult]{MethodSessionFinalize}
	SessionAbort     = Method[SessionIDParams, AbortResult]{MethodSessionAbort}
	SessionGet       = Method[SessionIDParams, SessionInfo]{MethodSessionGet}
	SessionList      = Method[ListParams, ListResult]{MethodSessionList}
	SessionResume    = Method[SessionIDParams, ResumeResult]{MethodSessionResume}
	SessionContinue  = Method[ContinueParams, BeginResult]{MethodSessionContinue}
	SessionClean     = Method[CleanParams, CleanResult]{MethodSessionClean}
	SessionUndo      = Method[SessionIDParams, UndoResult]{MethodSessionUndo}
	SessionContent   = Method[ContentParams, ContentResult]{MethodSessionContent}
	TxBegin          = Method[TxBeginParams, TxBeginResult]{MethodTxBegin}
	TxCommit         = Method[TxCommitParams, TxCommitResult]{MethodTxCommit}
	TxAbort          = Method[TxIDParams, TxInfo]{MethodTxAbort}
	TxGet            = Method[TxIDParams, TxInfo]{MethodTxGet}
	DaemonStatus     = Method[NoParams, StatusResult]{MethodDaemonStatus}
	DaemonAllowRoot  = Method[AllowRootParams, AllowRootResult]{MethodDaemonAllowRoot}
	ToolsDefinitions = Method[NoParams, ToolsResult]{MethodToolsDefinitions}
	TraceList        = Method[TraceListParams, TraceListResult]{MethodTraceList}
	TraceFollow      = Method[TraceFollowParams, TraceFollowResult]{MethodTraceFollow}
)

// MethodDocs is each method's row of the protocol reference's method table
// (docs/protocol.md, generated): its params, an arrow, what it answers.
var MethodDocs = map[string]string{
	MethodSessionBegin:     "`intent`, `target_file` (absolute, or relative to `workspace_root`), `operation` (`create`, `overwrite`, `append`, `patch` with `patch_spec`, `edit`) → `session_id`, `stage`, `end_marker`, `instructions`, resolved `target_file`",
	MethodSessionAppend:    "`session_id`, `seq` (1, 2, 3, …), `chunk` (or sent raw after the JSON: Content sent raw) → `bytes`, `lines`, `end_marker_seen`, `trailing_bytes`, `duplicate`, `stage`; sent only after the chunk is committed",
	MethodSessionFinalize:  "`session_id`, `end_of_input` (the input ended without a marker: a file, not a model) → `bytes`, `lines`, `sha256`, `file_bytes`, `file_sha256`, `mode`, `trailing_bytes`, `trailing_preview`; never the content",
	MethodSessionWrite:     "`session.begin`'s params and `content` (the whole file, at most `max_chunk_bytes`; or sent raw after the JSON) → finalize's summary; journaled in one commit before the file is written, no session left behind when refused before that",
	MethodSessionAbort:     "`session_id` → `stage: aborted`",
	MethodSessionGet:       "`session_id` → session info (stage, bytes, lines, last seq, result)",
	MethodSessionList:      "`all` → session info of each session (open ones only without `all`)",
	MethodSessionResume:    "`session_id` → `last_seq`, `next_seq`, `bytes`, `lines`, `tail` (last lines), `continue_prompt`: where to pick up after a crash or a disconnect",
	MethodSessionContinue:  "`session_id` of a truncated session → a new session chained to it (new marker); finalizing it writes both parts once",
	MethodSessionClean:     "`older_than_ms`, `finished_older_than_ms` → `expired`, `pruned`",
	MethodSessionUndo:      "`session_id` of a completed session → restores what it replaced (every file, for a multi-file edit)",
	MethodSessionContent:   "`session_id`, `source` (`streamed` or `backup`), `max_bytes` → `available`, `content` (bounded, valid UTF-8), `bytes`, `total`, `truncated`; read-only",
	MethodTxBegin:          "`files` (each as `session.begin` takes it), `workspace_root`, `intent` → `tx_id`, one session per file",
	MethodTxCommit:         "`tx_id`, `end_of_input`, `force`, `dry_run` → one finalize summary per file; all files or none",
	MethodTxAbort:          "`tx_id` → `stage: aborted`, `sessions`, `error`, `files`",
	MethodTxGet:            "`tx_id` → `stage`, `sessions`, `error`, `files`",
	MethodDaemonStatus:     "→ version, pid, socket, state dir, allowed roots, limits, methods, `trace` (retention, `bytes` stored, `max_bytes`, `evicted`, `suppressed`), `checkpoints` (each recorded workspace: `recording`, the `reason` of a full scan, `watches`, `open_turn`; the blob store's size)",
	MethodTurnBegin:        "`workspace_root`, `agent`, `label` → `turn_id`, `checkpoint_id`, `recording` (`watching`, `scanning`, `too_big` with a `warning` and no checkpoint), `ended` (the turn it ended)",
	MethodTurnEnd:          "`turn_id` → the turn with its changed `files` (path, kind, bytes before and after, writer)",
	MethodTurnList:         "`workspace_root`, `limit`, `cursor` → `turns` newest first (agent, times, files), `next_cursor`",
	MethodTurnGet:          "`turn_id`, `diffs`, `max_diff_bytes` → the turn; with `diffs`, each file's unified diff, bounded",
	MethodTurnUndo:         "`turn_id` or `last` with `workspace_root`, `all_or_nothing`, `dry_run` → `operation_id`, per file `outcome` (`reverted`, `merged`, `left` with `hunks`, `not_restorable`, `unchanged`); never overwrites a later change",
	MethodTurnRedo:         "`operation_id` or `last` with `workspace_root`, `all_or_nothing`, `dry_run` → as turn.undo: takes an undo back under the same rules",
	MethodCheckpointCreate: "`workspace_root`, `label`, `pin` → `checkpoint_id`, `files`, `changed`, `stored_bytes`",
	MethodDaemonAllowRoot:  "`path` (an absolute directory) → `path` resolved, `added` (false when a root holds it already), `allowed_roots`, `saved_in`; refused for `/`, a protected path, or what is not an existing directory (`root_refused`, `protected_path`)",
	MethodToolsDefinitions: "→ the OpenAI-style `WritePlanTool_begin` definition (no content parameter): `intent`, `target_file`, `operation` (create, overwrite, append, patch, edit), `patch_spec` for patch",
	MethodTraceList:        "`session_id`, `types`, `since`, `until`, `after`, `limit`, `newest` → `events` (oldest first), `more`, `next`, `stats`; `unknown_method` when tracing is off",
	MethodTraceFollow:      "`session_id`, `types` → `following`; then each new matching event as a `trace.event` notification until the connection closes",
}

// MethodSpecs is every method the daemon serves, in the order daemon.status
// lists them. The daemon's method table serves exactly these, with these
// types (a daemon test fails otherwise), and the Node package's protocol
// file is generated from them.
var MethodSpecs = []MethodSpec{
	SessionBegin.Spec(),
	SessionAppend.Spec(),
	SessionFinalize.Spec(),
	SessionAbort.Spec(),
	SessionGet.Spec(),
	SessionList.Spec(),
	SessionResume.Spec(),
	SessionContinue.Spec(),
	SessionClean.Spec(),
	SessionUndo.Spec(),
	SessionContent.Spec(),
	SessionWrite.Spec(),
	TxBegin.Spec(),
	TxCommit.Spec(),
	TxAbort.Spec(),
	TxGet.Spec(),
	DaemonStatus.Spec(),
	DaemonAllowRoot.Spec(),
	ToolsDefinitions.Spec(),
	TraceList.Spec(),
	TraceFollow.Spec(),
	TurnBegin.Spec(),
	TurnEnd.Spec(),
	TurnList.Spec(),
	TurnGet.Spec(),
	TurnUndo.Spec(),
	TurnRedo.Spec(),
	CheckpointCreate.Spec(),
}

// Methods lists every method the daemon serves, for status and discovery.
var Methods = methodNames(MethodSpecs)

func methodNames(specs []MethodSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
