package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Entry is a parsed spool entry, ready to become a recoverable session.
type Entry struct {
	// Dir is the entry directory; ID is its name, the session id the
	// crashed client used.
	Dir, ID string
	// Intent, TargetFile, WorkspaceRoot and Operation are metadata.json's
	// fields. TargetFile is absolute, or relative to WorkspaceRoot; the
	// daemon's path guard still has to check both.
	Intent, TargetFile, WorkspaceRoot, Operation string
	// CreatedAt is metadata.json's created_at, or the file's modification
	// time when that is missing or unreadable (see Warnings).
	CreatedAt time.Time
	// ContentPath is content.txt; ContentSize its size when parsed. The
	// content can be large: stream it (Open), never read it whole.
	ContentPath string
	ContentSize int64
	// State is state.json, or nil when it is absent or unreadable.
	State *State
	// Warnings describe problems that did not stop the import, such as an
	// unreadable state.json, in words for a log or a user.
	Warnings []string
}

// State is a spool entry's optional state.json, as the client last saved
// it. It is informational: content.txt is what gets recovered.
type State struct {
	// BufferSize is buffer_size: bytes the client held when it last saved.
	BufferSize int64
	// LastSave is last_save, an RFC 3339 time or Unix milliseconds.
	LastSave time.Time
	// LineCount is line_count: lines saved to content.txt.
	LineCount int64
}

// Target returns TargetFile resolved against WorkspaceRoot when it is
// relative. It does not check that the result stays inside the root.
func (e Entry) Target() string {
	if filepath.IsAbs(e.TargetFile) || e.WorkspaceRoot == "" {
		return filepath.Clean(e.TargetFile)
	}
	return filepath.Join(e.WorkspaceRoot, e.TargetFile)
}

// Open opens the content for streaming. The reader yields exactly
// ContentSize bytes, the content as parsed, and fails with an error wrapping
// io.ErrUnexpectedEOF if content.txt shrank since, so a recovered session is
// never silently shorter than what was found.
func (e Entry) Open() (io.ReadCloser, error) {
	f, err := openNoBlock(e.ContentPath)
	if err != nil {
		return nil, fmt.Errorf("spool: opening content: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("spool: opening content: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("spool: %s is no longer a regular file", e.ContentPath)
	}
	return &contentReader{f: f, left: e.ContentSize, path: e.ContentPath}, nil
}

type contentReader struct {
	f    *os.File
	left int64
	path string
}

func (r *contentReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.f.Read(p)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		return n, fmt.Errorf("spool: %s shrank while being read (%d bytes missing): %w",
			r.path, r.left, io.ErrUnexpectedEOF)
	}
	if err == io.EOF {
		err = nil // left is 0: the next call says EOF
	}
	return n, err
}

func (r *contentReader) Close() error { return r.f.Close() }

// Problem is why a spool entry was not imported.
type Problem struct {
	// Dir is the entry (or stray file) in the spool.
	Dir string
	// Reason is stable and machine-readable: one of the Reason constants,
	// or one chosen by the import function.
	Reason string
	// Msg says what is wrong and what to do, for a log or a user.
	Msg string
}

// Error lets an import function return a Problem to refuse an entry.
func (p *Problem) Error() string {
	return fmt.Sprintf("spool entry %s: %s (%s)", p.Dir, p.Msg, p.Reason)
}

// Reasons for a Problem. They are stable: clients and scripts match them.
const (
	ReasonNotADirectory    = "not_a_directory"   // a file or symlink where an entry directory belongs
	ReasonMissingMetadata  = "missing_metadata"  // no metadata.json after the entry settled
	ReasonBadMetadataJSON  = "bad_metadata_json" // metadata.json is not a JSON object of the right shape
	ReasonMissingField     = "missing_field"     // target_file or operation is absent or empty
	ReasonUnknownOperation = "unknown_operation" // an operation the daemon does not know
	ReasonBadPath          = "bad_path"          // relative target without workspace_root, relative workspace_root, NUL byte
	ReasonMissingContent   = "missing_content"   // no content.txt after the entry settled
	ReasonNotRegularFile   = "not_regular_file"  // metadata.json or content.txt is a symlink, directory, FIFO...
	ReasonForeignOwner     = "foreign_owner"     // owned by another user: never import what someone else planted
	ReasonUnreadable       = "unreadable"        // an I/O error, such as permission denied
	ReasonRejected         = "rejected"          // the import function refused it without a reason of its own
	ReasonMoveFailed       = "move_failed"       // imported, but could not be moved to .imported
)

// Size limits for the small files, so a corrupt entry cannot make the
// daemon read gigabytes into memory.
const (
	maxMetadataBytes = 1 << 20
	maxStateBytes    = 1 << 20
)

// Parse reads an entry directory's metadata.json and state.json and stats
// its content.txt, without reading the content. It returns the first
// problem that keeps the entry from being imported; lesser ones land in
// Entry.Warnings. Symbolic links are not followed, neither for the entry
// nor for its files.
func Parse(entryDir string) (Entry, *Problem) {
	dir := filepath.Clean(entryDir)
	e := Entry{Dir: dir, ID: filepath.Base(dir)}
	problem := func(reason, format string, args ...any) (Entry, *Problem) {
		return Entry{}, &Problem{Dir: dir, Reason: reason, Msg: fmt.Sprintf(format, args...)}
	}

	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(ReasonNotADirectory, "the entry directory does not exist")
	case err != nil:
		return problem(ReasonUnreadable, "cannot read the entry: %v", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return problem(ReasonNotADirectory, "a symbolic link, not an entry directory; put the real directory in the spool")
	case !fi.IsDir():
		return problem(ReasonNotADirectory, "a %s, not an entry directory (<id>/metadata.json, <id>/content.txt); move it out of the spool", kind(fi))
	case foreign(fi):
		return problem(ReasonForeignOwner, "the entry directory belongs to another user; it is not imported")
	}

	mpath := filepath.Join(dir, MetadataFile)
	data, mfi, p := readSmall(dir, mpath, maxMetadataBytes, ReasonMissingMetadata)
	if p != nil {
		return Entry{}, p
	}
	var m struct {
		Intent        string          `json:"intent"`
		TargetFile    string          `json:"target_file"`
		Operation     string          `json:"operation"`
		WorkspaceRoot string          `json:"workspace_root"`
		CreatedAt     json.RawMessage `json:"created_at"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return problem(ReasonBadMetadataJSON, "%s: %s; fix the file, or move the entry out of the spool", MetadataFile, describeJSONError(data, err))
	}
	if !isObject(data) {
		return problem(ReasonBadMetadataJSON, "%s must hold a JSON object with target_file and operation", MetadataFile)
	}
	switch {
	case m.TargetFile == "":
		return problem(ReasonMissingField, "%s has no target_file; add the path of the file the session was writing", MetadataFile)
	case m.Operation == "":
		return problem(ReasonMissingField, "%s has no operation; add one of %s", MetadataFile, operations())
	case !slices.Contains(protocol.WholeFileOperations, protocol.Operation(m.Operation)):
		return problem(ReasonUnknownOperation, "%s: operation %q is not one of %s", MetadataFile, m.Operation, operations())
	case strings.ContainsRune(m.TargetFile, 0) || strings.ContainsRune(m.WorkspaceRoot, 0):
		return problem(ReasonBadPath, "%s: a path contains a NUL byte", MetadataFile)
	case m.WorkspaceRoot != "" && !filepath.IsAbs(m.WorkspaceRoot):
		return problem(ReasonBadPath, "%s: workspace_root %q must be absolute", MetadataFile, m.WorkspaceRoot)
	case !filepath.IsAbs(m.TargetFile) && m.WorkspaceRoot == "":
		return problem(ReasonBadPath, "%s: target_file %q is relative and there is no workspace_root to resolve it against; make it absolute or add workspace_root", MetadataFile, m.TargetFile)
	}
	e.Intent, e.TargetFile, e.Operation, e.WorkspaceRoot = m.Intent, m.TargetFile, m.Operation, m.WorkspaceRoot

	created, err := parseTime(m.CreatedAt)
	switch {
	case err != nil:
		e.Warnings = append(e.Warnings, fmt.Sprintf("%s: created_at %s is not a time (%v); using the file's modification time", MetadataFile, m.CreatedAt, err))
		created = mfi.ModTime()
	case created.IsZero():
		e.Warnings = append(e.Warnings, fmt.Sprintf("%s has no created_at; using the file's modification time", MetadataFile))
		created = mfi.ModTime()
	}
	e.CreatedAt = created

	cpath := filepath.Join(dir, ContentFile)
	cfi, err := os.Lstat(cpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(ReasonMissingContent, "no %s; the client saved no content. Restore the file, or move the entry out of the spool", ContentFile)
	case err != nil:
		return problem(ReasonUnreadable, "cannot read %s: %v", ContentFile, err)
	case !cfi.Mode().IsRegular():
		return problem(ReasonNotRegularFile, "%s is a %s, not a regular file", ContentFile, kind(cfi))
	case foreign(cfi):
		return problem(ReasonForeignOwner, "%s belongs to another user; it is not imported", ContentFile)
	}
	e.ContentPath, e.ContentSize = cpath, cfi.Size()

	// state.json only describes the content; a torn one (the client died
	// while rewriting it) must not cost the content itself.
	st, warning := parseState(dir)
	e.State = st
	if warning != "" {
		e.Warnings = append(e.Warnings, warning)
	}
	return e, nil
}

func parseState(dir string) (*State, string) {
	spath := filepath.Join(dir, StateFile)
	if _, err := os.Lstat(spath); errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	data, _, p := readSmall(dir, spath, maxStateBytes, "")
	if p != nil {
		return nil, p.Msg + "; state ignored"
	}
	var raw struct {
		BufferSize json.Number     `json:"buffer_size"`
		LastSave   json.RawMessage `json:"last_save"`
		LineCount  json.Number     `json:"line_count"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || !isObject(data) {
		msg := "not a JSON object"
		if err != nil {
			msg = describeJSONError(data, err)
		}
		return nil, fmt.Sprintf("%s: %s; state ignored", StateFile, msg)
	}
	var st State
	var err error
	if st.BufferSize, err = count(raw.BufferSize); err != nil {
		return nil, fmt.Sprintf("%s: buffer_size: %v; state ignored", StateFile, err)
	}
	if st.LineCount, err = count(raw.LineCount); err != nil {
		return nil, fmt.Sprintf("%s: line_count: %v; state ignored", StateFile, err)
	}
	if st.LastSave, err = parseTime(raw.LastSave); err != nil {
		return nil, fmt.Sprintf("%s: last_save: %v; state ignored", StateFile, err)
	}
	return &st, ""
}

// count accepts a JSON number that is a non-negative whole number (a
// JavaScript client may write 12.0), or nothing.
func count(n json.Number) (int64, error) {
	if n == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
		return 0, fmt.Errorf("%s is not a count", n)
	}
	return int64(f), nil
}

// readSmall reads a small regular file of an entry, refusing symlinks,
// other users' files and anything over limit. missingReason is the Problem
// reason for a missing file.
func readSmall(dir, path string, limit int64, missingReason string) ([]byte, fs.FileInfo, *Problem) {
	name := filepath.Base(path)
	problem := func(reason, format string, args ...any) ([]byte, fs.FileInfo, *Problem) {
		return nil, nil, &Problem{Dir: dir, Reason: reason, Msg: fmt.Sprintf(format, args...)}
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(missingReason, "no %s; a spool entry needs %s and %s. Restore it, or move the entry out of the spool", name, MetadataFile, ContentFile)
	case err != nil:
		return problem(ReasonUnreadable, "cannot read %s: %v", name, err)
	case !fi.Mode().IsRegular():
		return problem(ReasonNotRegularFile, "%s is a %s, not a regular file", name, kind(fi))
	case foreign(fi):
		return problem(ReasonForeignOwner, "%s belongs to another user; it is not imported", name)
	case fi.Size() > limit:
		return problem(ReasonBadMetadataJSON, "%s is %d bytes, more than the %d such a file can hold", name, fi.Size(), limit)
	}
	f, err := openNoBlock(path)
	if err != nil {
		return problem(ReasonUnreadable, "cannot read %s: %v", name, err)
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !ofi.Mode().IsRegular() {
		return problem(ReasonNotRegularFile, "%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return problem(ReasonUnreadable, "cannot read %s: %v", name, err)
	}
	if int64(len(data)) > limit {
		return problem(ReasonBadMetadataJSON, "%s is more than the %d bytes such a file can hold", name, limit)
	}
	return data, fi, nil
}

// parseTime reads a timestamp the way JavaScript and other clients write
// them: an RFC 3339 string (Date.toISOString), or a number of milliseconds
// (Date.now) or seconds since the epoch, possibly as a string. Absent or
// null is the zero time.
func parseTime(raw json.RawMessage) (time.Time, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return time.Time{}, nil
	}
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return time.Time{}, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
		// An ISO time without a zone: taken as UTC, which is what
		// JavaScript's toISOString would have written.
		if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
			return t, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or a Unix time, got %s", raw)
	}
	// Milliseconds since the epoch are above 1e11 since 1973; seconds will
	// not reach that before the year 5000.
	if f >= 1e11 {
		return time.UnixMilli(int64(f)).UTC(), nil
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// describeJSONError says where a JSON document is broken, in words.
func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return "the file is empty"
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("field %q must be a %s, not a JSON %s", typ.Field, typ.Type, typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("must be a JSON object, not a JSON %s", typ.Value)
	default:
		return err.Error()
	}
}

func isObject(data []byte) bool {
	data = bytes.TrimSpace(data)
	return len(data) > 0 && data[0] == '{'
}

func operations() string {
	names := make([]string, len(protocol.WholeFileOperations))
	for i, op := range protocol.WholeFileOperations {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}

// kind names a file's type for a message.
func kind(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// openNoBlock opens a spool file without following a symlink and without
// waiting: a FIFO swapped in after the Lstat opens at once (and is then
// refused as not regular) instead of stopping the scan.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
