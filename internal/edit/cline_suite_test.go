package edit_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// clineSuite has the shapes of the cases in Cline's own tests of its diff
// code (src/core/assistant-message/diff.test.ts, 23 cases, and
// diff_edge_cases.test.ts, 8, in cline/cline as of mid-2025, Apache-2.0):
// what each case feeds Cline and what Cline answers. The texts
// are ours. Each runs in both of Cline's marker formats: the current one
// ("------- SEARCH" / "+++++++ REPLACE") and the older one ("<<<<<<<" /
// ">>>>>>>", which Aider shares) inside Cline's replace_in_file tool call.
//
// Where this daemon deliberately differs from Cline, the case says so and
// expects our answer: docs/edits.md lists these differences.
var clineSuite = []struct {
	name, file, blocks string
	want               string // the file after; "" with refused
	refused            bool
	differs            string // why we deliberately answer otherwise
}{
	{name: "EmptyFile", file: "", blocks: "S\n=======\nfresh text\nR", want: "fresh text\n"},
	{name: "MalformedSearchMixedSymbols", file: "alpha\nbeta\ngamma", blocks: "<<-- SEARCH\nbeta\n=======\nBETA\nR", refused: true},
	{name: "MalformedSearchShortRun", file: "alpha\nbeta\ngamma", blocks: "-- SEARCH\nbeta\n=======\nBETA\nR", refused: true},
	{name: "MalformedSearchMissingSpace", file: "alpha\nbeta\ngamma", blocks: "-------SEARCH\nbeta\n=======\nBETA\nR", refused: true},
	{name: "ExactMatch", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n=======\nBETA\nR", want: "alpha\nBETA\ngamma"},
	{name: "LineTrimmedMatchKeepsReplacementAsWritten", file: "alpha\n beta \ngamma", blocks: "S\nbeta\n=======\nBETA\nR", want: "alpha\nBETA\ngamma"},
	{name: "BlockAnchorMatch", file: "alpha\nopen\nbody\nclose\nomega", blocks: "S\nopen\nbody changed\nclose\n=======\nall new\nR", want: "alpha\nall new\nomega"},
	{name: "ReplacementWithBlankLine", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n=======\nBETA\n\nR", want: "alpha\nBETA\n\ngamma"},
	{name: "NoFinalNewlineKept", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n=======\nBETA\nR", want: "alpha\nBETA\ngamma"},
	{name: "TwoOrderedBlocks", file: "one\ntwo\nthree\nfour", blocks: "S\none\n=======\n1\nR\n\nS\nthree\n=======\n3\nR", want: "1\ntwo\n3\nfour"},
	{name: "ReplaceThenDeleteLastLine", file: "one\ntwo\nthree\nfour", blocks: "S\ntwo\n=======\n2\nR\n\nS\nfour\n=======\nR", want: "one\n2\nthree\n"},
	{name: "DeleteFirstThenReplace", file: "one\ntwo\nthree\nfour", blocks: "S\none\n=======\nR\n\nS\nthree\n=======\n3\nR", want: "two\n3\nfour"},
	{name: "MalformedMissingSeparator", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\nR\nBETA", refused: true},
	{name: "MalformedSeparatorTrailingSpace", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n======= \nBETA\nR", refused: true},
	{name: "MalformedDoubleReplace", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\nR\nBETA\nR", refused: true},
	{name: "MalformedSeparatorWithDashes", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n------- =======\nBETA\nR", refused: true},
	{name: "NoMatch", file: "alpha\nbeta\ngamma", blocks: "S\ndelta\n=======\nDELTA\nR", refused: true},
	{name: "MissingFinalReplaceMarker", file: "alpha\nbeta\ngamma", blocks: "S\nbeta\n=======\nBETA", refused: true,
		differs: "Cline applies a block without its final marker; a cut-off stream looks the same, so it is refused"},
	{name: "MissingFinalReplaceMarkerSeveralLines", file: "f() {\n\tx = 1;\n\treturn x;\n}", blocks: "S\n\tx = 1;\n\treturn x;\n=======\n\tx = 2;\n\tlog(x);\n\treturn x;", refused: true,
		differs: "as above"},
	{name: "OutOfOrderTwo", file: "first\nsecond\nthird\nfourth\n", blocks: "S\nfourth\n=======\n4th\nR\nS\nsecond\n=======\n2nd\nR", want: "first\n2nd\nthird\n4th\n"},
	{name: "OutOfOrderThree", file: "one\ntwo\nthree\nfour\nfive\n", blocks: "S\nfour\n=======\n4\nR\nS\ntwo\n=======\n2\nR\nS\nfive\n=======\n5\nR", want: "one\n2\nthree\n4\n5\n"},
	{name: "OutOfOrderIndented", file: "f() {\n\ta = 1;\n\tb = 2;\n\tc = 3;\n\n}", blocks: "S\n\tc = 3;\n=======\n\tc = 30;\nR\nS\n\ta = 1;\n=======\n\ta = 10;\nR", want: "f() {\n\ta = 10;\n\tb = 2;\n\tc = 30;\n\n}"},
	{name: "OutOfOrderBlankEdges", file: "head\n\nbody\n\nfoot\n", blocks: "S\nfoot\n=======\nnew foot\nR\nS\n\nbody\n\n=======\nnew body\nR", want: "head\nnew body\nnew foot\n"},
	// Cline's edge-case tests (src/core/assistant-message/diff_edge_cases.test.ts):
	// marker runs shorter or longer than seven characters are still markers.
	{name: "EdgeSearchRunShort", file: "before\ncontent\nafter", blocks: "----- SEARCH\ncontent\n=======\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSearchRunLong", file: "before\ncontent\nafter", blocks: "----------- SEARCH\ncontent\n=======\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSearchShortSeparatorShort", file: "before\ncontent\nafter", blocks: "----- SEARCH\ncontent\n=====\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSearchShortSeparatorLong", file: "before\ncontent\nafter", blocks: "----- SEARCH\ncontent\n========\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSearchLongSeparatorLong", file: "before\ncontent\nafter", blocks: "----------- SEARCH\ncontent\n==========\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSearchLongSeparatorShort", file: "before\ncontent\nafter", blocks: "----------- SEARCH\ncontent\n=====\nnew content\nR", want: "before\nnew content\nafter"},
	{name: "EdgeSecondBlockSearchShort", file: "before\nfirst content\nafter\nsecond content\nend", blocks: "S\nfirst content\n=======\nfirst new content\nR\n----- SEARCH\nsecond content\n=======\nsecond new content\nR", want: "before\nfirst new content\nafter\nsecond new content\nend"},
	{name: "EdgeSecondBlockSearchAndSeparatorShort", file: "before\nfirst content\nafter\nsecond content\nend", blocks: "S\nfirst content\n=======\nfirst new content\nR\n----- SEARCH\nsecond content\n=====\nsecond new content\nR", want: "before\nfirst new content\nafter\nsecond new content\nend"},
}

var dashRun = regexp.MustCompile(`(?m)^-{3,} SEARCH$`)

func TestClineOwnSuite(t *testing.T) {
	formats := []struct {
		name string
		wrap func(string) string
	}{
		{"Markers", func(b string) string {
			b = strings.ReplaceAll(b, "S\n", "------- SEARCH\n")
			return strings.ReplaceAll(strings.ReplaceAll(b, "\nR\n", "\n+++++++ REPLACE\n"), "\nR", "\n+++++++ REPLACE")
		}},
		{"LegacyMarkersInToolCall", func(b string) string {
			b = strings.ReplaceAll(b, "S\n", "<<<<<<< SEARCH\n")
			// A run of dashes of any length before SEARCH is the
			// same run of "<" in the older format.
			b = dashRun.ReplaceAllStringFunc(b, func(m string) string {
				return strings.Repeat("<", len(m)-len(" SEARCH")) + " SEARCH"
			})
			b = strings.ReplaceAll(strings.ReplaceAll(b, "\nR\n", "\n>>>>>>> REPLACE\n"), "\nR", "\n>>>>>>> REPLACE")
			return "<replace_in_file>\n<path>f.txt</path>\n<diff>\n" + b + "\n</diff>\n</replace_in_file>\n"
		}},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			pass := 0
			for _, c := range clineSuite {
				ok := t.Run(c.name, func(t *testing.T) {
					// The case's own short markers stay malformed in both
					// formats; only the stand-ins S and R are rewritten.
					e := f.wrap(c.blocks)
					read := func(p string) ([]byte, bool, error) { return []byte(c.file), true, nil }
					res, err := edit.ApplyFiles([]byte(e), "f.txt", read, nil)
					if res.Dialect != "" && res.Dialect != edit.DialectCline {
						t.Errorf("dialect = %q, want Cline's", res.Dialect)
					}
					if c.refused {
						if err == nil {
							t.Fatalf("applied, want refused\nedit:\n%s", e)
						}
						if len(res.Files) != 0 {
							t.Errorf("file operations %v on a refused edit", res.Files)
						}
						return
					}
					if err != nil {
						t.Fatalf("refused: %v\nedit:\n%s", err, e)
					}
					var got string
					for _, op := range res.Files {
						if op.Path == "f.txt" {
							got = string(op.Content)
						}
					}
					if got != c.want {
						t.Errorf("file = %q, want %q", got, c.want)
					}
				})
				if ok {
					pass++
				}
			}
			t.Logf("Cline's cases, %s: %d/%d as Cline answers or as documented", f.name, pass, len(clineSuite))
		})
	}
}
