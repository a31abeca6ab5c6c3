package protocol

import (
	"fmt"
	"strings"
	"time"
)

// Field limits: the largest value the daemon accepts in each field a client
// sends. They sit far above anything a real client sends and far below what
// would let one request bloat the daemon: an intent is kept in its session's
// record, rewritten with every chunk and returned by every session.list, so
// before these limits one 50 MB intent made each listing 73 MB. A value over
// its limit is refused with ReasonFieldTooLarge (CodeTooLarge), naming the
// field and the limit, before the request does anything.
const (
	// MaxIntentBytes bounds intent: a sentence or two describing the write.
	MaxIntentBytes = 4 << 10
	// MaxPathBytes bounds target_file, workspace_root and daemon.allow_root's
	// path: PATH_MAX on Linux,
	// the longest path a system call takes.
	MaxPathBytes = 4096
	// MaxIDBytes bounds the ids a client sends back (session_id, tx_id,
	// supersedes, a trace filter's session_id and after): the daemon's ids
	// are UUIDs of 36 bytes and trace event ids 32.
	MaxIDBytes = 128
	// MaxNameBytes bounds the enumerated strings: operation,
	// truncation_policy, the validation policy's names and categories, and
	// each of a trace filter's types.
	MaxNameBytes = 64
	// MaxMethodBytes bounds a request's method name; the longest the daemon
	// serves is 21 bytes. Anything longer is refused before it is logged or
	// traced, and traced cut to this length.
	MaxMethodBytes = 64
	// MaxPatchSpecBytes bounds patch_spec as JSON: room for a marker, a
	// start and an end marker and a pattern of a few KiB each.
	MaxPatchSpecBytes = 16 << 10
	// MaxTxFiles bounds the files of one transaction.
	MaxTxFiles = 256
	// MaxValidationCategories bounds the categories a validation policy
	// names; there are six.
	MaxValidationCategories = 32
	// MaxTraceTypes bounds the types of a trace filter.
	MaxTraceTypes = 64
)

// Duration limits, in milliseconds. A duration a client gives is refused
// with ReasonInvalidDuration when it is negative or above its maximum: 2^63-1
// ms overflowed time.Duration and ended a session after 2 ms.
const (
	// MaxSessionTimeoutMS bounds idle_ms and auto_finalize_ms: a day, far
	// longer than a model takes to write a file.
	MaxSessionTimeoutMS = int64(24 * time.Hour / time.Millisecond)
	// MaxCleanAgeMS bounds session.clean's older_than_ms and
	// finished_older_than_ms: ten years.
	MaxCleanAgeMS = int64(10 * 365 * 24 * time.Hour / time.Millisecond)
)

// FieldTooLarge is the error for a string field of size bytes over its
// limit.
func FieldTooLarge(field string, size, limit int) *Error {
	e := Errorf(CodeTooLarge, ReasonFieldTooLarge,
		"%s is %d bytes, over the limit of %d bytes; send a shorter value", field, size, limit)
	e.Data.Field = field
	e.Data.Limit = int64(limit)
	return e
}

// TooManyItems is the error for a list field of n items over its limit.
func TooManyItems(field string, n, limit int) *Error {
	e := Errorf(CodeTooLarge, ReasonFieldTooLarge,
		"%s has %d items, over the limit of %d; send fewer", field, n, limit)
	e.Data.Field = field
	e.Data.Limit = int64(limit)
	return e
}

// InvalidDuration is the error for a duration out of range.
func InvalidDuration(field string, ms, maxMS int64) *Error {
	e := Errorf(CodeInvalidParams, ReasonInvalidDuration,
		"%s %d is out of range: give 0 for the daemon's default, or 1 to %d milliseconds", field, ms, maxMS)
	e.Data.Field = field
	e.Data.Limit = maxMS
	return e
}

// checker collects the first field out of bounds; later checks are no-ops,
// so a Check reads as a list of limits.
type checker struct {
	prefix string
	err    *Error
}

func (c *checker) str(field, v string, limit int) {
	if c.err == nil && len(v) > limit {
		c.err = FieldTooLarge(c.prefix+field, len(v), limit)
	}
}

func (c *checker) count(field string, n, limit int) {
	if c.err == nil && n > limit {
		c.err = TooManyItems(c.prefix+field, n, limit)
	}
}

func (c *checker) duration(field string, ms, maxMS int64) {
	if c.err == nil && (ms < 0 || ms > maxMS) {
		c.err = InvalidDuration(c.prefix+field, ms, maxMS)
	}
}

// result returns the error as an error, nil when there is none (never a
// nil *Error in a non-nil interface).
func (c *checker) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// Check reports the first field of p over its limit (ReasonFieldTooLarge)
// or duration out of range (ReasonInvalidDuration), or nil. The daemon
// checks the params of every request before anything else looks at them.
func (p *BeginParams) Check() error {
	c := checker{}
	p.check(&c)
	return c.result()
}

func (p *BeginParams) check(c *checker) {
	c.str("intent", p.Intent, MaxIntentBytes)
	c.str("target_file", p.TargetFile, MaxPathBytes)
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.str("operation", string(p.Operation), MaxNameBytes)
	c.str("truncation_policy", string(p.TruncationPolicy), MaxNameBytes)
	c.str("supersedes", p.Supersedes, MaxIDBytes)
	c.str("patch_spec", string(p.PatchSpec), MaxPatchSpecBytes)
	if v := p.Validation; v != nil {
		c.str("validation.all", v.All, MaxNameBytes)
		c.count("validation.categories", len(v.Categories), MaxValidationCategories)
		for k, pol := range v.Categories {
			c.str("validation.categories", k, MaxNameBytes)
			c.str(fmt.Sprintf("validation.categories.%.*s", MaxNameBytes, k), pol, MaxNameBytes)
		}
	}
	c.duration("idle_ms", p.IdleMS, MaxSessionTimeoutMS)
	c.duration("auto_finalize_ms", p.AutoFinalizeMS, MaxSessionTimeoutMS)
	c.path("target_file", p.TargetFile)
	c.path("workspace_root", p.WorkspaceRoot)
	if c.err == nil && strings.HasSuffix(p.TargetFile, "/") {
		// Cleaned, "dir/" would name a file "dir": the client meant a
		// directory.
		c.err = Errorf(CodeInvalidTarget, ReasonIsDirectory,
			"%starget_file ends in /, so it names a directory; give the path of a file", c.prefix)
		c.err.Data.Field = c.prefix + "target_file"
	}
	c.nonNegative("expected_bytes", p.ExpectedBytes)
	c.nonNegative("expected_lines", p.ExpectedLines)
	c.sha256("expected_sha256", p.ExpectedSHA256)
}

// sha256 refuses a hash that is not 64 lowercase hex digits (or
// AbsentSHA256): a typo must not read as "the file changed".
func (c *checker) sha256(field, v string) {
	if c.err != nil || v == "" || v == AbsentSHA256 {
		return
	}
	ok := len(v) == 64
	for i := 0; ok && i < len(v); i++ {
		ok = v[i] >= '0' && v[i] <= '9' || v[i] >= 'a' && v[i] <= 'f'
	}
	if !ok {
		c.err = Errorf(CodeInvalidParams, ReasonMalformedParams,
			"%s%s must be the sha256 of the content as 64 lowercase hex digits, or %q for a file that must not exist", c.prefix, field, AbsentSHA256)
		c.err.Data.Field = c.prefix + field
	}
}

// path refuses a path with a NUL byte, which no file system takes: named
// as a bad param, not as the I/O error opening it would give.
func (c *checker) path(field, v string) {
	if c.err == nil && strings.IndexByte(v, 0) >= 0 {
		c.err = Errorf(CodeInvalidParams, ReasonMalformedParams,
			"%s%s contains a NUL byte, which no path can hold", c.prefix, field)
		c.err.Data.Field = c.prefix + field
	}
}

// nonNegative refuses a count below zero.
func (c *checker) nonNegative(field string, n int64) {
	if c.err == nil && n < 0 {
		c.err = Errorf(CodeInvalidParams, ReasonMalformedParams,
			"%s%s is %d; give a count of 0 or more (0: not announced)", c.prefix, field, n)
		c.err.Data.Field = c.prefix + field
	}
}

// Check reports the first field of p out of bounds, or nil; the chunk is
// bounded by the daemon's --max-chunk-bytes instead.
func (p *AppendParams) Check() error {
	c := checker{}
	c.str("session_id", p.SessionID, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *FinalizeParams) Check() error {
	c := checker{}
	c.str("session_id", p.SessionID, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *AllowRootParams) Check() error {
	c := checker{}
	c.str("path", p.Path, MaxPathBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *SessionIDParams) Check() error {
	c := checker{}
	c.str("session_id", p.SessionID, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *ContinueParams) Check() error {
	c := checker{}
	c.str("session_id", p.SessionID, MaxIDBytes)
	return c.result()
}

// Check reports the first duration of p out of range, or nil.
func (p *CleanParams) Check() error {
	c := checker{}
	c.duration("older_than_ms", p.OlderThanMS, MaxCleanAgeMS)
	c.duration("finished_older_than_ms", p.FinishedOlderThanMS, MaxCleanAgeMS)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil: the number of
// files, then every file's fields as BeginParams.Check does, named
// files[i].field.
func (p *TxBeginParams) Check() error {
	c := checker{}
	c.str("intent", p.Intent, MaxIntentBytes)
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.count("files", len(p.Files), MaxTxFiles)
	for i := range p.Files {
		if c.err != nil {
			break
		}
		c.prefix = fmt.Sprintf("files[%d].", i)
		p.Files[i].check(&c)
	}
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TxCommitParams) Check() error {
	c := checker{}
	c.str("tx_id", p.TxID, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TxIDParams) Check() error {
	c := checker{}
	c.str("tx_id", p.TxID, MaxIDBytes)
	return c.result()
}

func (f *TraceFilter) check(c *checker) {
	c.str("session_id", f.SessionID, MaxIDBytes)
	c.count("types", len(f.Types), MaxTraceTypes)
	for i, t := range f.Types {
		c.str(fmt.Sprintf("types[%d]", i), t, MaxNameBytes)
	}
}

// Check reports the first field of p out of bounds, or nil.
func (p *TraceListParams) Check() error {
	c := checker{}
	p.TraceFilter.check(&c)
	c.str("after", p.After, MaxIDBytes)
	c.str("before", p.Before, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TraceFollowParams) Check() error {
	c := checker{}
	p.TraceFilter.check(&c)
	return c.result()
}

// CheckMethod refuses a method name over MaxMethodBytes, so that what is
// logged, traced and echoed in an unknown_method error stays small.
func CheckMethod(method string) error {
	c := checker{}
	c.str("method", method, MaxMethodBytes)
	return c.result()
}

// Check reports a limit below 0 or over MaxListLimit, or a cursor over
// MaxIDBytes*2, or nil.
func (p *ListParams) Check() error {
	c := checker{}
	c.str("cursor", p.Cursor, 2*MaxIDBytes)
	if c.err == nil && (p.Limit < 0 || p.Limit > MaxListLimit) {
		e := Errorf(CodeInvalidParams, ReasonMalformedParams,
			"limit %d is out of range: give 0 for the default (%d), or 1 to %d", p.Limit, DefaultListLimit, MaxListLimit)
		e.Data.Field = "limit"
		e.Data.Limit = MaxListLimit
		c.err = e
	}
	return c.result()
}
