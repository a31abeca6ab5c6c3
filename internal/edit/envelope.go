package edit

import (
	"fmt"
	"strings"
)

// Envelope markers.
const (
	envelopeBegin = "*** Begin Patch"
	envelopeEnd   = "*** End Patch"
	addPrefix     = "*** Add File: "
	updatePrefix  = "*** Update File: "
	deletePrefix  = "*** Delete File: "
	movePrefix    = "*** Move to: "
	endOfFile     = "*** End of File"
)

// FileOpKind is what a FileOp does to the file system.
type FileOpKind string

// File operation kinds.
const (
	// OpAdd creates Path with Content; Path did not exist, unless
	// Replaced says it did (Codex's Add File replaces a file).
	OpAdd FileOpKind = "add"
	// OpUpdate replaces Path's content with Content.
	OpUpdate FileOpKind = "update"
	// OpDelete removes Path.
	OpDelete FileOpKind = "delete"
	// OpMove writes Content to MoveTo and removes Path. MoveTo did not
	// exist, unless Replaced says it did.
	OpMove FileOpKind = "move"
)

// FileOp is one file operation of an envelope, computed against the files
// as the ReadFunc showed them.
type FileOp struct {
	// Kind is the operation.
	Kind FileOpKind `json:"kind"`
	// Path is the file as the envelope names it; resolving and guarding it
	// is the caller's business.
	Path string `json:"path"`
	// MoveTo is the destination of OpMove.
	MoveTo string `json:"move_to,omitempty"`
	// Content is the new content for OpAdd, OpUpdate and OpMove.
	Content []byte `json:"-"`
	// Old is the content the operation was computed against (nil for
	// OpAdd), so that a transaction can check the file did not change
	// since.
	Old []byte `json:"-"`
	// Replaced is true when the file OpAdd writes, or the MoveTo of
	// OpMove, exists and is replaced; ReplacedOld is its content, to back
	// up and to check it did not change since.
	Replaced    bool   `json:"replaced,omitempty"`
	ReplacedOld []byte `json:"-"`
}

// ReadFunc returns a file's content and whether it exists. An error other
// than "does not exist" aborts the envelope.
type ReadFunc func(path string) (data []byte, exists bool, err error)

// envOp is one "*** Add/Update/Delete File" section.
type envOp struct {
	kind   FileOpKind
	path   string
	moveTo string
	add    []string
	chunks []chunk
	line   int
}

// chunk is one "@@" part of an Update File section.
type chunk struct {
	anchors  []string // "@@ text" lines to find first, in order
	old, new []string
	body     []bodyLine
	eof      bool // "*** End of File": the chunk ends the file
	line     int
}

// parseEnvelope reads a "*** Begin Patch" envelope.
func parseEnvelope(content []byte) ([]envOp, error) {
	lines := editLines(content)
	serr := func(line int, format string, args ...any) error {
		return &SyntaxError{Format: FormatEnvelope, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) != envelopeBegin {
		i++
	}
	if i == len(lines) {
		return nil, serr(0, "no %q line", envelopeBegin)
	}
	i++
	var ops []envOp
	var op *envOp
	var ch *chunk
	var bare int // empty lines at the end of ch, read as empty context
	closeChunk := func() {
		if ch == nil {
			return
		}
		// Empty lines at the end of a chunk are spacing, not context.
		ch.body = ch.body[:len(ch.body)-bare]
		ch.old, ch.new = sides(ch.body)
		if len(ch.old) > 0 || len(ch.new) > 0 || len(ch.anchors) > 0 {
			op.chunks = append(op.chunks, *ch)
		}
		ch, bare = nil, 0
	}
	closeOp := func() error {
		if op == nil {
			return nil
		}
		closeChunk()
		if op.kind == OpUpdate && op.moveTo == "" && len(op.chunks) == 0 {
			return serr(op.line, "*** Update File: %s has no changes; give \"@@\" chunks with ' ', '-' and '+' lines", op.path)
		}
		ops = append(ops, *op)
		op = nil
		return nil
	}
	seen := map[string]int{}
	claim := func(path string, n int) error {
		if path == "" {
			return serr(n, "missing file path")
		}
		if prev, ok := seen[path]; ok {
			return serr(n, "%s is touched at line %d already; merge the two sections", path, prev)
		}
		seen[path] = n
		return nil
	}
	for ; i < len(lines); i++ {
		l, n := lines[i], i+1
		// Codex trims the envelope's own lines: models pad them with
		// blanks (" *** End Patch"), which would otherwise read as context.
		t := strings.TrimSpace(l)
		switch {
		case t == envelopeEnd:
			if err := closeOp(); err != nil {
				return nil, err
			}
			if len(ops) == 0 {
				return nil, serr(n, "the envelope has no file sections")
			}
			return ops, nil
		case strings.HasPrefix(t, addPrefix), strings.HasPrefix(t, updatePrefix), strings.HasPrefix(t, deletePrefix):
			if err := closeOp(); err != nil {
				return nil, err
			}
			op = &envOp{line: n}
			switch {
			case strings.HasPrefix(t, addPrefix):
				op.kind, op.path = OpAdd, strings.TrimSpace(t[len(addPrefix):])
			case strings.HasPrefix(t, updatePrefix):
				op.kind, op.path = OpUpdate, strings.TrimSpace(t[len(updatePrefix):])
			default:
				op.kind, op.path = OpDelete, strings.TrimSpace(t[len(deletePrefix):])
			}
			if err := claim(op.path, n); err != nil {
				return nil, err
			}
		case op == nil:
			if strings.TrimSpace(l) != "" {
				return nil, serr(n, "expected \"*** Add File: \", \"*** Update File: \", \"*** Delete File: \" or %q, got %q", envelopeEnd, l)
			}
		case strings.HasPrefix(t, movePrefix):
			if op.kind != OpUpdate || len(op.chunks) > 0 || ch != nil {
				return nil, serr(n, "\"*** Move to: \" must come right after \"*** Update File: \"")
			}
			op.moveTo = strings.TrimSpace(t[len(movePrefix):])
			if err := claim(op.moveTo, n); err != nil {
				return nil, err
			}
		case op.kind == OpDelete:
			if strings.TrimSpace(l) != "" {
				return nil, serr(n, "*** Delete File takes no lines, got %q", l)
			}
		case op.kind == OpAdd:
			switch {
			case strings.HasPrefix(l, "+"):
				op.add = append(op.add, l[1:])
			case l == "":
				op.add = append(op.add, "")
			default:
				return nil, serr(n, "every line of an added file starts with '+', got %q", l)
			}
		case t == endOfFile:
			if ch == nil {
				return nil, serr(n, "%q outside a chunk", endOfFile)
			}
			ch.eof = true
			closeChunk()
		case strings.HasPrefix(l, "@@"):
			if ch != nil && len(ch.body) > bare {
				closeChunk()
			}
			if ch == nil {
				ch = &chunk{line: n}
			}
			ch.body, bare = nil, 0 // blank lines between "@@" lines
			if a := strings.TrimSpace(l[2:]); a != "" {
				ch.anchors = append(ch.anchors, a)
			}
		case l == "" || l[0] == ' ' || l[0] == '-' || l[0] == '+':
			if ch == nil {
				ch = &chunk{line: n} // the first chunk may omit "@@"
			}
			b := bodyLine{kind: ' ', bare: l == ""}
			if l != "" {
				b.kind, b.text = l[0], l[1:]
			}
			ch.body = append(ch.body, b)
			if l == "" {
				bare++
			} else {
				bare = 0
			}
		default:
			return nil, serr(n, "expected a line starting with ' ', '-', '+' or \"@@\" in *** Update File: %s, got %q", op.path, l)
		}
	}
	return nil, serr(0, "no %q line; the edit may be truncated", envelopeEnd)
}

// ApplyEnvelope computes the file operations of a "*** Begin Patch"
// envelope (Codex's apply_patch) against the files read reports. The
// envelope applies as a whole: any part that fails fails it, and nothing
// is to be written (Codex keeps the files it changed before a failure).
//
// As in Codex: the envelope's lines may be padded with blanks; Add File
// writes a file whether or not it exists, replacing it (Replaced: the
// caller backs it up); Move to replaces its destination the same way;
// Delete File and Update File need an existing file.
//
// Update chunks apply in order, each searched for after the previous one,
// and after its "@@ text" anchor lines when it has any (the first match
// after the anchor wins, which is what anchors are for); a chunk without
// anchors must match once. Lines match exactly, else ignoring trailing
// whitespace, else ignoring indentation, else reading typographic
// punctuation as ASCII. A chunk ending in "*** End of File" is looked for
// at the end of the file first. A chunk without '-' or context lines
// inserts after its anchor, or at the end of the file. Updates keep the
// file's line endings and final newline; added files end with a newline.
//
// Parts already done are reported, not failed: an added file that exists
// with the same content, a chunk whose new lines are in place, a move
// whose source is gone and whose destination has the chunks applied.
func ApplyEnvelope(content []byte, read ReadFunc) (Result, error) {
	res := Result{Format: FormatEnvelope, Dialect: DialectCodex}
	ops, err := parseEnvelope(content)
	if err != nil {
		return res, err
	}
	var blocks []BlockResult
	var files []FileOp
	var op envOp
	add := func(path string, r BlockResult) {
		r.Index, r.Path = len(blocks)+1, path
		if r.EditLine == 0 {
			r.EditLine = op.line
		}
		blocks = append(blocks, r)
	}
	for _, op = range ops {
		data, exists, err := read(op.path)
		if err != nil {
			return res, fmt.Errorf("reading %s: %w", op.path, err)
		}
		switch op.kind {
		case OpAdd:
			body := []byte(strings.Join(op.add, "\n") + "\n")
			if len(op.add) == 0 {
				body = nil
			}
			switch {
			case !exists:
				add(op.path, BlockResult{Status: StatusApplied})
				files = append(files, FileOp{Kind: OpAdd, Path: op.path, Content: body})
			case string(normalizeEOL(data)) == string(body):
				add(op.path, BlockResult{Status: StatusAlreadyApplied})
			default:
				add(op.path, BlockResult{Status: StatusApplied, Message: "the file exists and is replaced (its old content is backed up)"})
				files = append(files, FileOp{Kind: OpAdd, Path: op.path, Content: body, Replaced: true, ReplacedOld: data})
			}
		case OpDelete:
			if !exists {
				// Codex fails here too: deleting nothing is a model's
				// mistake about the tree, not a change already made.
				add(op.path, BlockResult{Status: StatusConflict, Message: "the file does not exist, so there is nothing to delete; remove this *** Delete File section"})
				continue
			}
			add(op.path, BlockResult{Status: StatusApplied})
			files = append(files, FileOp{Kind: OpDelete, Path: op.path, Old: data})
		case OpUpdate:
			path := op.path
			if op.moveTo != "" {
				dst, dstExists, err := read(op.moveTo)
				if err != nil {
					return res, fmt.Errorf("reading %s: %w", op.moveTo, err)
				}
				switch {
				case exists && dstExists:
					// Codex replaces the destination; it is backed up.
					rs, out := updateChunks(data, op.chunks)
					for _, r := range rs {
						add(op.path, r)
					}
					if len(rs) == 0 {
						add(op.path, BlockResult{Status: StatusApplied, Message: fmt.Sprintf("%s exists and is replaced (its old content is backed up)", op.moveTo)})
					}
					files = append(files, FileOp{Kind: OpMove, Path: op.path, MoveTo: op.moveTo, Content: out, Old: data, Replaced: true, ReplacedOld: dst})
					continue
				case !exists && dstExists:
					// Resent after the move: the destination must
					// already have every chunk.
					rs, _ := updateChunks(dst, op.chunks)
					for _, r := range rs {
						if r.Status != StatusAlreadyApplied {
							r = BlockResult{Status: StatusConflict, Message: fmt.Sprintf("the file does not exist, and %s does but without this change", op.moveTo)}
						}
						add(op.moveTo, r)
					}
					if len(rs) == 0 {
						add(op.moveTo, BlockResult{Status: StatusAlreadyApplied, Message: "moved already"})
					}
					continue
				}
			}
			if !exists {
				add(path, BlockResult{Status: StatusConflict, Message: "the file does not exist; use *** Add File to create it"})
				continue
			}
			rs, out := updateChunks(data, op.chunks)
			for _, r := range rs {
				add(path, r)
			}
			switch {
			case op.moveTo != "":
				if len(rs) == 0 {
					add(path, BlockResult{Status: StatusApplied})
				}
				files = append(files, FileOp{Kind: OpMove, Path: op.path, MoveTo: op.moveTo, Content: out, Old: data})
			case string(out) != string(data):
				files = append(files, FileOp{Kind: OpUpdate, Path: op.path, Content: out, Old: data})
			}
		}
	}
	res, err = finish(FormatEnvelope, nil, blocks, func() []byte { return nil })
	res.Dialect = DialectCodex
	if err != nil {
		return res, err
	}
	res.Files, res.Changed = files, len(files) > 0
	return res, nil
}

// normalizeEOL turns CRLF into LF, to compare a file with envelope text.
func normalizeEOL(b []byte) []byte {
	return []byte(strings.ReplaceAll(string(b), "\r\n", "\n"))
}

// updateChunks applies an Update File section's chunks to old and returns
// their results and the new content.
func updateChunks(old []byte, chunks []chunk) ([]BlockResult, []byte) {
	d := parseDoc(old)
	var edits []lineEdit
	results := make([]BlockResult, len(chunks))
	cursor := 0
	for i, c := range chunks {
		r, e, next := placeChunk(d, c, cursor)
		r.EditLine = c.line
		results[i] = r
		if r.Status == StatusApplied {
			edits = append(edits, e)
		}
		if r.Status.ok() {
			cursor = next
		}
	}
	d.applyEdits(edits)
	return results, d.render()
}

// placeChunk finds where a chunk applies at or after cursor. It returns the
// edit to make and the cursor for the next chunk.
func placeChunk(d *doc, c chunk, cursor int) (BlockResult, lineEdit, int) {
	n := len(d.lines)
	for _, a := range c.anchors {
		at, _ := findUnique(d.lines, []string{a}, cursor, n, MatchPunctuation)
		if len(at) == 0 {
			return BlockResult{Status: StatusNoMatch, Closest: closest(d.lines[cursor:], []string{a}).shift(cursor),
				Message: fmt.Sprintf("the \"@@ %s\" line is not %s", a, after(cursor))}, lineEdit{}, cursor
		}
		cursor = at[0] + 1
	}
	if len(c.old) == 0 {
		p := n
		if len(c.anchors) > 0 {
			p = cursor
		}
		if len(c.new) > 0 && p+len(c.new) <= n && equalLines(d.lines[p:p+len(c.new)], c.new) ||
			p == n && p >= len(c.new) && len(c.new) > 0 && equalLines(d.lines[p-len(c.new):], c.new) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: p + 1, EndLine: p + len(c.new), Match: MatchExact}, lineEdit{}, p
		}
		return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p, Match: MatchExact}, lineEdit{p, p, c.new}, p
	}
	lo := cursor
	if c.eof {
		lo = max(cursor, n-len(c.old))
	}
	at, m := findUnique(d.lines, c.old, lo, n, MatchPunctuation)
	atEnd := c.eof
	if len(at) == 0 && c.eof && lo > cursor {
		// Codex looks for an "*** End of File" chunk at the end first,
		// then anywhere after the previous chunk.
		at, m = findUnique(d.lines, c.old, cursor, n, MatchPunctuation)
		atEnd = false
	}
	if len(at) > 1 && len(c.anchors) == 0 && !atEnd {
		return BlockResult{Status: StatusAmbiguous, Match: m, Matches: oneBased(at),
			Message: fmt.Sprintf("the chunk's context and '-' lines match %d times %s, at lines %s; add an \"@@\" line naming the function or class it is in, or more context", len(at), after(cursor), lineList(oneBased(at)))}, lineEdit{}, cursor
	}
	if len(at) > 1 {
		at = at[:1]
	}
	if !equalLines(c.old, c.new) && len(c.new) > 0 {
		rlo := cursor
		if c.eof {
			rlo = max(cursor, n-len(c.new))
		}
		rat, rm := findUnique(d.lines, c.new, rlo, n, MatchTrailingSpace)
		if len(rat) > 1 && len(c.anchors) > 0 {
			rat = rat[:1] // after an anchor, the first match is the one
		}
		if len(rat) == 1 && (len(at) == 0 || isSubrange(at[0], len(c.old), rat[0], len(c.new))) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: rat[0] + 1, EndLine: rat[0] + len(c.new), Match: rm}, lineEdit{}, rat[0] + len(c.new)
		}
	}
	if len(at) == 0 {
		return BlockResult{Status: StatusNoMatch, Closest: closest(d.lines, c.old),
			Message: fmt.Sprintf("the chunk's %d context and '-' lines are not %s, not even ignoring whitespace; copy them from the closest lines below", len(c.old), after(cursor))}, lineEdit{}, cursor
	}
	p := at[0]
	repl := c.new
	if m == MatchIndentation || m == MatchPunctuation {
		repl = reindent(c.old, d.lines[p:p+len(c.old)], c.new)
	}
	repl = keepContext(c.body, d.lines[p:p+len(c.old)], repl)
	return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p + len(c.old), Match: m}, lineEdit{p, p + len(c.old), repl}, p + len(c.old)
}

// after says where a chunk was looked for.
func after(cursor int) string {
	if cursor == 0 {
		return "in the file"
	}
	return fmt.Sprintf("in the file after line %d (where the previous chunk or \"@@\" line matched)", cursor)
}
