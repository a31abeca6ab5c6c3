package edit

import (
	"fmt"
	"strings"

	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/validate"
)

// Elisions inside blocks. Models leave out unchanged lines in two ways:
//
//   - a REPLACE part with a placeholder ("// ... existing code ...") where
//     the SEARCH part has the lines in full: the placeholder stands for
//     lines of the matched region, placed by the REPLACE lines around it
//     with the rules of package elide (every anchor matches once);
//   - Aider's "..." lines, in both parts at the same places: the parts
//     between them are separate search/replace pairs, each of which must
//     match the file once.
//
// Where that is unambiguous the lines are kept from the file and the block
// reports ElisionsMerged; anywhere else the block is applied as written
// (its placeholder then refused by validation, as any other) or fails,
// saying why.

// UnmergedPlaceholder starts the message of a block whose REPLACE
// placeholder could not be merged (the block is applied as written, and
// validation refuses the placeholder).
const UnmergedPlaceholder = "the placeholder in REPLACE was not merged: "

// fillReplace replaces the placeholders of repl that region (the lines the
// SEARCH part matched) does not have with the region's lines they stand
// for. name is the file's name, for the comment forms of its language.
// With no placeholder it returns repl and 0; when one cannot be placed, an
// error saying where its anchors matched.
func fillReplace(name string, region, repl []string) ([]string, int, error) {
	if len(repl) == 0 {
		return repl, 0, nil
	}
	text, orig := joinText(repl), joinText(region)
	el := validate.NewPlaceholderLines(name, []byte(text), []byte(orig))
	if len(el) == 0 {
		return repl, 0, nil
	}
	out, n, err := elide.Merge([]byte(orig), []byte(text), el)
	if err != nil {
		return repl, 0, err
	}
	lines, _ := splitText(string(out))
	return lines, n, nil
}

func joinText(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// isDots reports Aider's elision line: "..." alone, indented or not.
func isDots(l string) bool { return strings.TrimSpace(l) == "..." }

func hasDots(lines []string) bool {
	for _, l := range lines {
		if isDots(l) {
			return true
		}
	}
	return false
}

// dotsArePlaceholders reports a REPLACE part whose "..." lines are all
// placeholders in the file's language, and not in the SEARCH part.
func dotsArePlaceholders(name string, b srBlock) bool {
	ph := map[int]bool{}
	for _, n := range validate.NewPlaceholderLines(name, []byte(joinText(b.replace)), []byte(joinText(b.search))) {
		ph[n] = true
	}
	for i, l := range b.replace {
		if isDots(l) && !ph[i+1] {
			return false
		}
	}
	return true
}

// splitDots cuts lines at its "..." lines.
func splitDots(lines []string) (pieces [][]string, dots []string) {
	cur := []string{}
	for _, l := range lines {
		if isDots(l) {
			pieces, dots, cur = append(pieces, cur), append(dots, strings.TrimSpace(l)), []string{}
			continue
		}
		cur = append(cur, l)
	}
	return append(pieces, cur), dots
}

// applyDots applies an Aider block whose SEARCH part holds "..." lines
// that are not in the file: each piece between them is its own block. ok
// is false when the block has none, or matches the file as written (a
// stub's "..." body), and is then applied as any other.
func applyDots(d *doc, b srBlock, name string) (BlockResult, bool) {
	if !hasDots(b.search) {
		// "..." in REPLACE alone: where the file's language reads it as
		// a placeholder (Go, JavaScript), it is filled from the region as
		// any other; elsewhere (Python, where it is a statement) Aider
		// refuses it as unpaired, and so does this.
		if !hasDots(b.replace) || dotsArePlaceholders(name, b) {
			return BlockResult{}, false
		}
	} else if len(findAll(d.lines, b.search, MatchIndentation, 0, len(d.lines))) > 0 {
		return BlockResult{}, false
	}
	sp, sdots := splitDots(b.search)
	rp, rdots := splitDots(b.replace)
	if len(sdots) != len(rdots) {
		return BlockResult{Status: StatusNoMatch, Message: fmt.Sprintf("the SEARCH part has %d \"...\" line(s) and the REPLACE part %d; each \"...\" in SEARCH needs one in REPLACE at the same place, standing for the same unchanged lines", len(sdots), len(rdots))}, true
	}
	first, last := 0, 0
	applied := false
	for k := range sp {
		s, r := sp[k], rp[k]
		if len(s) == 0 && len(r) == 0 || equalLines(s, r) {
			continue // unchanged lines around an elision
		}
		if strings.TrimSpace(joinText(s)) == "" {
			return BlockResult{Status: StatusNoMatch, Message: fmt.Sprintf("part %d of the block (between its \"...\" lines) has no SEARCH lines to place its REPLACE lines by; add the unchanged lines they go next to, to both parts", k+1)}, true
		}
		res := applyBlock(d, srBlock{search: s, replace: r, line: b.line}, name)
		if !res.Status.ok() {
			res.Message = fmt.Sprintf("part %d of the block (between its \"...\" lines): %s", k+1, res.Message)
			return res, true
		}
		if res.Status == StatusApplied {
			applied = true
		}
		if first == 0 || res.StartLine < first {
			first = res.StartLine
		}
		last = max(last, res.EndLine)
		if res.ElisionsMerged > 0 {
			return BlockResult{Status: StatusNoMatch, Message: fmt.Sprintf("part %d of the block (between its \"...\" lines) also holds a placeholder; use \"...\" lines or placeholders, not both", k+1)}, true
		}
	}
	st := StatusAlreadyApplied
	if applied {
		st = StatusApplied
	}
	return BlockResult{Status: st, StartLine: first, EndLine: last, Match: MatchExact, ElisionsMerged: len(sdots)}, true
}
