// Package doctest finds the shell blocks of the project's documents, so
// that a test can run each one exactly as written and the documents cannot
// drift from the code.
//
// A fenced block whose info string starts with sh, bash or shell is a shell
// block. The word after the language says how it is run:
//
//	```sh             run, and wait for it to exit 0
//	```sh background  start it, leave it running (the daemon)
//	```sh ci          run by .ci/run, not by the doc test
//	```sh no-run      shown, never run
//
// Any other word is an error, so that a typo cannot turn a block off. Other
// fences (output, config files) are not shell blocks.
//
// A rendered page shows the info string to its reader, so a document may
// give the mode in an HTML comment, which renders as nothing, on the line
// right before a plain ```sh fence instead:
//
//	<!-- doctest: background -->
//	```sh
//
// Such a comment anywhere else, with an unknown mode, or before a fence
// that names a mode too, is an error.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Mode says how a shell block is run.
type Mode string

// The modes, as written after the language in a fence's info string.
const (
	Run        Mode = ""
	Background Mode = "background"
	CI         Mode = "ci"
	NoRun      Mode = "no-run"
)

// Block is one shell block of a document.
type Block struct {
	File string // the document, as given to Extract
	Line int    // the line of the opening fence, from 1
	Mode Mode
	Text string // the block's lines, without the fences, ending in a newline
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var (
	shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}
	modes      = map[Mode]bool{Run: true, Background: true, CI: true, NoRun: true}
	fenceOpen  = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})[ \t]*([^`]*)$")
	modeNote   = regexp.MustCompile(`^ {0,3}<!--[ \t]*doctest:[ \t]*(.*?)[ \t]*-->[ \t]*$`)
)

// Extract returns the shell blocks of the document src, named file in the
// blocks and in errors. A block with an unknown mode, or a fence that is
// never closed, is an error.
func Extract(file string, src []byte) ([]Block, error) {
	var (
		blocks []Block
		cur    *Block
		fence  string // the open fence's characters, "" outside a block
		indent int
		body   strings.Builder
		lineNo int
		// note is the mode of a doctest comment on the line before, and
		// noteLine its line (0: none).
		note     Mode
		noteLine int
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if fence == "" {
			noted, notedLine := note, noteLine
			note, noteLine = "", 0
			if n := modeNote.FindStringSubmatch(line); n != nil {
				if mode := Mode(n[1]); mode == Run || !modes[mode] {
					return nil, fmt.Errorf("%s:%d: doctest comment: unknown mode %q (want background, ci or no-run)", file, lineNo, n[1])
				}
				note, noteLine = Mode(n[1]), lineNo
				continue
			}
			m := fenceOpen.FindStringSubmatch(line)
			isShell := m != nil && len(strings.Fields(m[3])) > 0 && shellLangs[strings.Fields(m[3])[0]]
			if notedLine != 0 && !isShell {
				return nil, fmt.Errorf("%s:%d: doctest comment is not right before a shell block's fence", file, notedLine)
			}
			if m == nil {
				continue
			}
			fence, indent = m[2], len(m[1])
			fields := strings.Fields(m[3])
			cur = nil
			if !isShell {
				continue // a fence, but not a shell block: skip to its end
			}
			mode := Mode(strings.Join(fields[1:], " "))
			if !modes[mode] {
				return nil, fmt.Errorf("%s:%d: shell block %q: unknown mode %q (want none, background, ci or no-run)", file, lineNo, m[3], mode)
			}
			if notedLine != 0 {
				if mode != Run {
					return nil, fmt.Errorf("%s:%d: shell block %q: mode given twice, here and in the doctest comment above", file, lineNo, m[3])
				}
				mode = noted
			}
			cur = &Block{File: file, Line: lineNo, Mode: mode}
			body.Reset()
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
			if cur != nil {
				cur.Text = body.String()
				blocks = append(blocks, *cur)
			}
			fence, cur = "", nil
			continue
		}
		if cur != nil {
			body.WriteString(strings.TrimPrefix(line, strings.Repeat(" ", indent)))
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: a fenced block is never closed", file)
	}
	return blocks, nil
}

// Link is a link of a document to a relative path, with or without an
// anchor: "docs/security.md#protected-paths", "#quick-start".
type Link struct {
	Line   int
	Target string
}

var (
	linkRe     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	codeSpanRe = regexp.MustCompile("`+[^`]*`+")
	headingRe  = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$`)
	slugDrop   = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// Links returns the document's links to relative paths and anchors, outside
// fenced blocks and code spans; links with a scheme (https:, mailto:) are
// left out.
func Links(src []byte) []Link {
	var links []Link
	for i, line := range proseLines(src) {
		line = codeSpanRe.ReplaceAllString(line, "")
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			links = append(links, Link{Line: i + 1, Target: t})
		}
	}
	return links
}

// Anchors returns the anchors GitHub gives the document's headings: lower
// case, punctuation dropped, spaces as hyphens, and -1, -2, ... after a
// repeated one.
func Anchors(src []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(src) {
		m := headingRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := codeSpanRe.ReplaceAllStringFunc(m[1], func(s string) string { return strings.Trim(s, "`") })
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// proseLines returns the document's lines with those inside fenced blocks
// blanked, so that line numbers stay right.
func proseLines(src []byte) []string {
	lines := strings.Split(string(src), "\n")
	fence := ""
	for i, line := range lines {
		if fence == "" {
			if m := fenceOpen.FindStringSubmatch(line); m != nil {
				fence = m[2]
				lines[i] = ""
			}
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
			fence = ""
		}
		lines[i] = ""
	}
	return lines
}
