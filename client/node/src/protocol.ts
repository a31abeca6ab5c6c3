// Wire types of oriond's JSON-RPC protocol, mirroring the Go package
// github.com/orion-agent/orion/protocol. Field names are the wire names.

/** Methods served by oriond. */
export const Methods = {
  sessionBegin: "session.begin",
  sessionAppend: "session.append",
  sessionFinalize: "session.finalize",
  sessionAbort: "session.abort",
  sessionGet: "session.get",
  sessionList: "session.list",
  sessionResume: "session.resume",
  sessionContinue: "session.continue",
  sessionClean: "session.clean",
  txBegin: "tx.begin",
  txCommit: "tx.commit",
  txAbort: "tx.abort",
  txGet: "tx.get",
  daemonStatus: "daemon.status",
  toolsDefinitions: "tools.definitions",
} as const;

/** Notifications oriond sends to the connection driving a session. */
export const Notifications = {
  idle: "session.idle",
  truncated: "session.truncated",
  finalized: "session.finalized",
  conflict: "session.conflict",
} as const;

/** The one tool the model sees. */
export const ToolName = "WritePlanTool_begin";

/**
 * create, overwrite and append stream the file (or its end); patch streams
 * the new text for the place patch_spec names; edit streams the edit itself
 * (search/replace blocks, a unified diff or a *** Begin Patch envelope).
 */
export type Operation = "create" | "overwrite" | "append" | "patch" | "edit";
export const Operations: readonly Operation[] = ["create", "overwrite", "append", "patch", "edit"];

export type PatchType =
  | "insert_before_line"
  | "insert_after_line"
  | "replace_lines"
  | "prepend"
  | "insert_before_marker"
  | "insert_after_marker"
  | "replace_block"
  | "replace_pattern"
  | "replace_all";

/** patch_spec of operation patch: where the streamed text goes. The daemon checks it. */
export interface PatchSpec {
  type: PatchType;
  line?: number;
  start_line?: number;
  end_line?: number;
  marker?: string;
  start_marker?: string;
  end_marker?: string;
  pattern?: string;
  regex?: boolean;
  /** A positive number, or "all". */
  count?: number | string;
  keep_markers?: boolean;
  expand?: boolean;
}

export type Stage =
  | "awaiting_content"
  | "streaming"
  | "finalizing"
  | "completed"
  | "aborted"
  | "truncated"
  | "needs_corrections"
  | "expired";

export type TruncationPolicy = "keep" | "incomplete_file" | "write_with_note";

/** Application error codes (JSON-RPC implementation range). */
export const ErrorCodes = {
  sessionNotFound: -32001,
  sessionState: -32002,
  seqGap: -32003,
  seqConflict: -32004,
  targetExists: -32005,
  pathNotAllowed: -32006,
  invalidTarget: -32007,
  tooLarge: -32008,
  markerMissing: -32009,
  invalidOperation: -32010,
  io: -32011,
  targetChanged: -32012,
  editFailed: -32014,
  txNotFound: -32015,
  txFailed: -32016,
} as const;

/** Stable reasons carried in an error's data. */
export const Reasons = {
  sessionNotFound: "session_not_found",
  sessionClosed: "session_closed",
  markerAlreadySeen: "end_marker_already_seen",
  seqGap: "seq_gap",
  seqConflict: "seq_conflict",
  seqZero: "seq_zero",
  targetExists: "target_exists",
  outsideRoots: "outside_allowed_roots",
  symlinkEscape: "symlink_escape",
  relativePath: "relative_path_without_workspace_root",
  workspaceNotAllowed: "workspace_root_not_allowed",
  isDirectory: "target_is_directory",
  specialFile: "target_is_special_file",
  parentMissing: "parent_directory_missing",
  chunkTooLarge: "chunk_too_large",
  sessionTooLarge: "session_too_large",
  fieldTooLarge: "field_too_large",
  invalidDuration: "invalid_duration",
  invalidUtf8: "invalid_utf8",
  markerMissing: "end_marker_missing",
  unknownOperation: "unknown_operation",
  missingField: "missing_field",
  malformedParams: "malformed_params",
  unknownMethod: "unknown_method",
  targetChanged: "target_changed",
  notTruncated: "session_not_truncated",
  alreadyContinued: "session_already_continued",
  editFailed: "edit_failed",
  invalidPatchSpec: "invalid_patch_spec",
  targetMissing: "target_missing",
  txNotFound: "tx_not_found",
  txState: "tx_state",
  txMember: "tx_member",
  txRefused: "tx_refused",
  txRolledBack: "tx_rolled_back",
  duplicateTarget: "duplicate_target",
  io: "io_error",
  internal: "internal_error",
} as const;

export interface ErrorData {
  reason: string;
  session_id?: string;
  field?: string;
  expected_seq?: number;
  limit?: number;
  path?: string;
  allowed_roots?: string[];
  method?: string;
  edit?: EditResult;
  tx_id?: string;
  files?: FileError[];
}

export interface BeginParams {
  intent?: string;
  target_file: string;
  operation: Operation;
  workspace_root?: string;
  idle_ms?: number;
  auto_finalize_ms?: number;
  expected_lines?: number;
  expected_bytes?: number;
  truncation_policy?: TruncationPolicy;
  /** Required with operation patch. */
  patch_spec?: PatchSpec;
  must_exist?: boolean;
  backup_required?: boolean;
}

export interface BeginResult {
  session_id: string;
  stage: Stage;
  end_marker: string;
  instructions: string;
  target_file: string;
  operation: Operation;
}

export interface AppendParams {
  session_id: string;
  seq: number;
  chunk: string;
}

export interface AppendResult {
  session_id: string;
  seq: number;
  duplicate?: boolean;
  stage: Stage;
  bytes: number;
  lines: number;
  end_marker_seen: boolean;
  trailing_bytes?: number;
}

export interface FinalizeParams {
  session_id: string;
  end_of_input?: boolean;
  force?: boolean;
}

export interface Warning {
  code: string;
  message: string;
}

export interface FinalizeResult {
  session_id: string;
  stage: Stage;
  target_file: string;
  operation: Operation;
  bytes: number;
  lines: number;
  sha256: string;
  file_bytes: number;
  file_sha256: string;
  end_marker_seen: boolean;
  trailing_bytes?: number;
  trailing_preview?: string;
  mode: string;
  continued_sessions?: string[];
  warnings?: Warning[];
  /** What a patch or edit did, per block or hunk. */
  edit?: EditResult;
  backup_id?: string;
  /** True when the edit was already applied: nothing was written. */
  nothing_written?: boolean;
  /** Directories made for the file(s), outermost first. */
  created_dirs?: string[];
  dry_run?: boolean;
  diff?: string;
  tx_id?: string;
  /** Every file a multi-file edit changed. */
  files?: FileChange[];
}

/** The outcome of one block or hunk of an edit. */
export interface EditBlock {
  index: number;
  path?: string;
  /** applied, already_applied, no_match, ambiguous, context_mismatch, overlap, out_of_range, count_mismatch, conflict. */
  status: string;
  start_line?: number;
  end_line?: number;
  matches?: number[];
  message?: string;
}

/** What a patch or edit did. */
export interface EditResult {
  /** patch, search_replace, unified_diff or begin_patch. */
  format: string;
  /**
   * The agent format the edit was detected as and applied by:
   * codex_apply_patch, aider_editblock, aider_diff_fenced,
   * cline_replace_in_file or unified_diff.
   */
  dialect?: string;
  changed: boolean;
  /** Every part was already in place: nothing was written. */
  already_applied?: boolean;
  blocks: EditBlock[];
}

/** One file a multi-file edit changed: kind add, update, delete or move. */
export interface FileChange {
  kind: string;
  target_file: string;
  moved_to?: string;
  bytes: number;
  sha256?: string;
}

/** What went wrong with one file of a transaction or a multi-file edit. */
export interface FileError {
  session_id?: string;
  target_file: string;
  code: number;
  reason: string;
  message: string;
  edit?: EditResult;
}

/** open -> committing -> committed, or rolled_back, needs_corrections, aborted. */
export type TxStage = "open" | "committing" | "committed" | "rolled_back" | "needs_corrections" | "aborted";

/** tx.begin: one session per file, each as session.begin takes it. */
export interface TxBeginParams {
  intent?: string;
  /** The default for files that give none. */
  workspace_root?: string;
  files: BeginParams[];
}

/** The sessions to stream each file's content into, in the order of the files. */
export interface TxBeginResult {
  tx_id: string;
  stage: TxStage;
  sessions: BeginResult[];
}

export interface TxCommitParams {
  tx_id: string;
  end_of_input?: boolean;
  force?: boolean;
  /** True when the edit was already applied: nothing was written. */
  nothing_written?: boolean;
  /** Directories made for the file(s), outermost first. */
  created_dirs?: string[];
  dry_run?: boolean;
}

/** One summary per file, in the order of the files. */
export interface TxCommitResult {
  tx_id: string;
  stage: TxStage;
  files: FinalizeResult[];
  /** True when the edit was already applied: nothing was written. */
  nothing_written?: boolean;
  /** Directories made for the file(s), outermost first. */
  created_dirs?: string[];
  dry_run?: boolean;
}

/** A transaction, as tx.get and tx.abort return it. */
export interface TxInfo {
  tx_id: string;
  intent?: string;
  stage: TxStage;
  sessions: string[];
  created_at: string;
  updated_at: string;
  error?: string;
  files?: FinalizeResult[];
}

export interface AbortResult {
  session_id: string;
  stage: Stage;
}

export interface TruncationContext {
  session_id: string;
  target_file: string;
  lines: number;
  bytes: number;
  tail: string;
  continue_prompt: string;
  incomplete_file?: string;
}

export interface SessionInfo {
  session_id: string;
  intent?: string;
  target_file: string;
  operation: Operation;
  stage: Stage;
  end_marker: string;
  last_seq: number;
  bytes: number;
  lines: number;
  end_marker_seen: boolean;
  trailing_bytes?: number;
  created_at: string;
  updated_at: string;
  result?: FinalizeResult;
  truncation?: TruncationContext;
  conflict?: string;
  continues_session?: string;
  continued_by?: string;
}

export interface ResumeResult {
  session_id: string;
  stage: Stage;
  target_file: string;
  operation: Operation;
  end_marker: string;
  last_seq: number;
  next_seq: number;
  bytes: number;
  lines: number;
  end_marker_seen: boolean;
  tail: string;
  continue_prompt: string;
}

export interface CleanParams {
  older_than_ms?: number;
  finished_older_than_ms?: number;
}

export interface CleanResult {
  expired: string[];
  pruned: string[];
}

export interface StatusResult {
  version: string;
  protocol_version: number;
  pid: number;
  socket: string;
  state_dir: string;
  allowed_roots: string[];
  started_at: string;
  open_sessions: number;
  max_chunk_bytes: number;
  max_session_bytes: number;
  /** Largest frame (Content-Length) the daemon reads. */
  max_message_bytes?: number;
  /** Requests of one connection awaiting their reply before the daemon stops reading it. */
  max_inflight?: number;
  max_connections?: number;
  connections?: number;
  /** The daemon's soft RLIMIT_NOFILE. */
  fd_limit?: number;
  methods: string[];
}

export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface IdleNotification {
  session_id: string;
  idle_ms: number;
  end_marker: string;
  prompt: string;
}

export interface ConflictNotification {
  session_id: string;
  target_file: string;
  event: string;
}
