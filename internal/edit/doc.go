// Package edit is the pure engine behind the `patch` and `edit` operations:
// every function here maps (old file bytes, spec or edit text) to new file
// bytes or to an error precise enough for a model to correct its edit. It
// does no I/O; the daemon reads the target, calls the engine, and writes the
// result (with backups, undo, transactions and dry runs) itself.
//
// Two families of edits are supported:
//
//   - [ApplyPatch]: a [PatchSpec] given up front (insert at a line or next to
//     a marker, replace lines, a block, a pattern or a literal) and the
//     streamed content as the new text.
//   - [Apply]: the streamed content is the edit itself, in one of the
//     formats coding agents use: search/replace blocks, unified diffs, or
//     the "*** Begin Patch" envelope ([ApplyEnvelope], which may touch
//     several files). [Detect] tells them apart.
//
// All of them work on lines: the file's line endings (LF or CRLF, per
// line) and whether it ends with a newline are kept, and new lines take the
// file's dominant ending, so an edit written with LF applies cleanly to a
// CRLF file. Edit text may use either ending.
//
// Every block, hunk or chunk of an edit gets a [Status] in [Result.Blocks].
// The edit applies all or nothing: when any part fails, [Error] lists the
// parts that failed with the closest lines of the file, and nothing changes.
// A search/replace block may leave out unchanged lines: a placeholder in
// its REPLACE part ("// ... existing code ...", as package validate reads
// placeholders) is filled from the region its SEARCH part matched, and
// Aider's "..." lines split it into pairs; see elision.go.
//
// A part whose change is already in the file is reported as
// [StatusAlreadyApplied] and skipped, so a model that resends an edit does
// not fail (or loop) on the parts that went through before.
package edit
