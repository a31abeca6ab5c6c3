package pathguard

// Reasons carried by Error. They equal the reason strings of the wire
// protocol so the daemon can pass them through unchanged; they are repeated
// here because internal packages do not depend on the wire format.
const (
	// ReasonOutsideRoots: the target lies outside every allowed root even
	// before symlinks are followed.
	ReasonOutsideRoots = "outside_allowed_roots"
	// ReasonSymlinkEscape: the target's path is inside a root but a symlink on
	// the way leads out of every root.
	ReasonSymlinkEscape = "symlink_escape"
	// ReasonRelativePath: the target is relative and there is no workspace
	// root to resolve it against.
	ReasonRelativePath = "relative_path_without_workspace_root"
	// ReasonWorkspaceNotAllowed: the workspace root is relative, missing, not
	// a directory, or outside every allowed root.
	ReasonWorkspaceNotAllowed = "workspace_root_not_allowed"
	// ReasonIsDirectory: the target exists and is a directory.
	ReasonIsDirectory = "target_is_directory"
	// ReasonSpecialFile: the target exists and is neither a regular file nor
	// a directory (a FIFO, socket, device...), which writing would block on
	// or misuse.
	ReasonSpecialFile = "target_is_special_file"
	// ReasonParentMissing: a directory on the way to the target does not
	// exist or is not a directory. Directories are never created.
	ReasonParentMissing = "parent_directory_missing"
	// ReasonProtected: the target is inside a root but protected (see
	// Protection): the daemon's own files, or a file that runs code or
	// holds credentials.
	ReasonProtected = "protected_path"
	// ReasonPathChanged: the path resolves to another file or directory
	// than when it was checked, because something on the way was replaced.
	ReasonPathChanged = "path_changed"
	// ReasonOutsideWorkspace: the session names a workspace root and the
	// target (or a file an edit names) resolves outside it, although
	// perhaps inside the allowed roots.
	ReasonOutsideWorkspace = "outside_workspace"
)

// Error is a refusal by the guard. Callers switch on Reason; Msg is written
// for a model or a user to act on.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Path is the absolute path the check failed on: the resolved target,
	// the workspace root for ReasonWorkspaceNotAllowed, or the missing
	// directory for ReasonParentMissing. It is empty for ReasonRelativePath.
	Path string
	// Workspace is the resolved workspace root, for
	// ReasonOutsideWorkspace.
	Workspace string
	// Rule is the protection rule that matched, for ReasonProtected (see
	// the Rule constants).
	Rule string
	// Msg says what was wrong and what to do instead.
	Msg string
}

// Error returns Msg, so the text shown to a model is the actionable one.
func (e *Error) Error() string { return e.Msg }
