package edit

import (
	"fmt"
	"path"
)

// NamedFiles lists the files an edit names, in the order of their first
// mention: an envelope's paths (with Move to destinations), and the path
// lines of search/replace blocks (Aider). Blocks that name no file, and
// unified diffs, name none: they edit the session's target. A malformed
// edit names none either; applying it reports what is wrong.
func NamedFiles(content []byte) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	switch Detect(content) {
	case FormatEnvelope:
		ops, err := parseEnvelope(content)
		if err != nil {
			return nil
		}
		for _, op := range ops {
			add(op.path)
			add(op.moveTo)
		}
	case FormatSearchReplace:
		blocks, _, err := parseBlocks(content)
		if err != nil {
			return nil
		}
		for _, b := range blocks {
			add(b.path)
		}
	}
	return out
}

// ApplyFiles applies an edit that may name several files, against the
// files read reports, as one edit: every file it changes is to be written
// in one transaction, or none if any part fails. An envelope goes to
// ApplyEnvelope. Search/replace blocks edit the file their path line names
// (Aider), or target when they name none; a file that does not exist is
// created by blocks whose SEARCH sections are all empty (Aider's way to
// make a new file), and is an error for any other block. Other formats
// edit target alone.
//
// same, when not nil, tells whether two paths name one file (the caller
// resolves them), so that blocks naming a file in two spellings, or the
// target by name and by default, edit it once.
func ApplyFiles(content []byte, target string, read ReadFunc, same func(a, b string) bool) (Result, error) {
	return ApplyFilesAs(content, target, read, same, nil)
}

// ApplyFilesAs is ApplyFiles with the charset each file's project names
// (charsetOf may be nil): every file read is decoded to UTF-8 for the
// edit and its new content encoded back, as ApplyAs.
func ApplyFilesAs(content []byte, target string, read ReadFunc, same func(a, b string) bool, charsetOf func(path string) Charset) (Result, error) {
	read, raw := decodingRead(read, charsetOf)
	res, err := applyFiles(content, target, read, same)
	if err == nil {
		err = encodeOps(&res, target, raw)
	}
	return res, err
}

func applyFiles(content []byte, target string, read ReadFunc, same func(a, b string) bool) (Result, error) {
	switch f := Detect(content); f {
	case FormatEnvelope:
		return ApplyEnvelope(content, read)
	case FormatSearchReplace:
	case FormatUnknown:
		return Result{}, fmt.Errorf("%w: %s", ErrUnknownFormat, unknownFormatHelp)
	default:
		old, exists, err := read(target)
		if err != nil {
			return Result{Format: f}, fmt.Errorf("reading %s: %w", target, err)
		}
		if !exists {
			return Result{Format: f, Dialect: DetectDialect(content)}, fmt.Errorf("%w: %s does not exist, and a %s changes an existing file", ErrConflict, target, f)
		}
		// old is decoded already.
		res, err := applyText(target, old, content)
		if err == nil && res.Changed {
			res.Files = []FileOp{{Kind: OpUpdate, Path: target, Content: res.Content, Old: old}}
		}
		return res, err
	}
	blocks, dialect, err := parseBlocks(content)
	res := Result{Format: FormatSearchReplace, Dialect: dialect}
	if err != nil {
		return res, err
	}
	// Group the blocks by file, in the order files first appear; blocks of
	// one file keep their order.
	var order []string
	byFile := map[string][]int{}
	for i := range blocks {
		p := blocks[i].path
		if p == "" {
			p = target
		} else {
			p = path.Clean(p)
		}
		if same != nil {
			for _, q := range order {
				if q != p && same(p, q) {
					p = q
					break
				}
			}
		}
		blocks[i].path = p
		if _, ok := byFile[p]; !ok {
			order = append(order, p)
		}
		byFile[p] = append(byFile[p], i)
	}
	results := make([]BlockResult, len(blocks))
	for _, p := range order {
		idx := byFile[p]
		mine := make([]srBlock, len(idx))
		for k, i := range idx {
			mine[k] = blocks[i]
		}
		data, exists, err := read(p)
		if err != nil {
			return res, fmt.Errorf("reading %s: %w", p, err)
		}
		var rs []BlockResult
		switch {
		case !exists && !allEmptySearch(mine):
			for _, b := range mine {
				r := BlockResult{Status: StatusApplied, Message: "would create the file"}
				if len(b.search) > 0 {
					r = BlockResult{Status: StatusConflict, Message: "the file does not exist, and this block's SEARCH section is not empty; check the path, or create the file with a block whose SEARCH section is empty"}
				}
				rs = append(rs, r)
			}
		default:
			fr, ferr := applyBlocks(p, data, mine, dialect)
			rs = fr.Blocks
			if ferr != nil && len(rs) == 0 {
				return res, ferr
			}
			switch {
			case ferr != nil:
			case !exists:
				res.Files = append(res.Files, FileOp{Kind: OpAdd, Path: p, Content: fr.Content})
			case fr.Changed:
				res.Files = append(res.Files, FileOp{Kind: OpUpdate, Path: p, Content: fr.Content, Old: data})
			}
		}
		for k, i := range idx {
			r := rs[k]
			r.Index, r.Path, r.EditLine = i+1, p, blocks[i].line
			results[i] = r
		}
	}
	res.Blocks = results
	var failed []BlockResult
	for _, r := range results {
		if !r.Status.ok() {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		res.Files = nil
		return res, &Error{Format: FormatSearchReplace, Failed: failed, Total: len(results)}
	}
	res.Changed = len(res.Files) > 0
	res.AlreadyApplied = allAlreadyApplied(results)
	return res, nil
}

// allEmptySearch reports blocks that all have an empty SEARCH section.
func allEmptySearch(blocks []srBlock) bool {
	for _, b := range blocks {
		if len(b.search) > 0 {
			return false
		}
	}
	return true
}

// CreatesFile reports search/replace blocks whose SEARCH sections are all
// empty: applied to a file that does not exist, they create it (Aider).
func CreatesFile(content []byte) bool {
	if Detect(content) != FormatSearchReplace {
		return false
	}
	blocks, _, err := parseBlocks(content)
	return err == nil && allEmptySearch(blocks)
}
