package edit_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

const five = "one\ntwo\nthree\nfour\nfive\n"

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name   string
		old    string
		spec   edit.PatchSpec
		text   string
		want   string      // new content, when the patch succeeds
		status edit.Status // status of the one block
		err    error       // sentinel the error matches, if it fails
		msg    string      // substring of the error message
	}{
		{name: "InsertBeforeLine", old: five, spec: edit.PatchSpec{Type: "insert_before_line", Line: 2}, text: "new\n",
			want: "one\nnew\ntwo\nthree\nfour\nfive\n", status: edit.StatusApplied},
		{name: "InsertBeforeLineAppends", old: five, spec: edit.PatchSpec{Type: "insert_before_line", Line: 6}, text: "six",
			want: five + "six\n", status: edit.StatusApplied},
		{name: "InsertBeforeLineOutOfRange", old: five, spec: edit.PatchSpec{Type: "insert_before_line", Line: 8}, text: "x\n",
			status: edit.StatusOutOfRange, err: edit.ErrOutOfRange, msg: "which has 5 lines"},
		{name: "InsertAfterLine", old: five, spec: edit.PatchSpec{Type: "insert_after_line", Line: 5}, text: "six\nseven\n",
			want: five + "six\nseven\n", status: edit.StatusApplied},
		{name: "InsertAfterLineZero", old: five, spec: edit.PatchSpec{Type: "insert_after_line"}, text: "zero\n",
			want: "zero\n" + five, status: edit.StatusApplied},
		{name: "InsertAfterLineOutOfRange", old: five, spec: edit.PatchSpec{Type: "insert_after_line", Line: 6}, text: "x\n",
			status: edit.StatusOutOfRange, err: edit.ErrOutOfRange},
		{name: "InsertAfterLastLineWithoutNewline", old: "a\nb", spec: edit.PatchSpec{Type: "insert_after_line", Line: 2}, text: "c\n",
			want: "a\nb\nc", status: edit.StatusApplied},
		{name: "InsertIntoEmptyFile", old: "", spec: edit.PatchSpec{Type: "insert_after_line"}, text: "a",
			want: "a\n", status: edit.StatusApplied},
		{name: "ReplaceLines", old: five, spec: edit.PatchSpec{Type: "replace_lines", StartLine: 2, EndLine: 4}, text: "TWO-FOUR\n",
			want: "one\nTWO-FOUR\nfive\n", status: edit.StatusApplied},
		{name: "ReplaceLinesDelete", old: five, spec: edit.PatchSpec{Type: "replace_lines", StartLine: 1, EndLine: 5}, text: "",
			want: "", status: edit.StatusApplied},
		{name: "ReplaceLinesSame", old: five, spec: edit.PatchSpec{Type: "replace_lines", StartLine: 2, EndLine: 2}, text: "two\n",
			want: five, status: edit.StatusAlreadyApplied},
		{name: "ReplaceLinesOutOfRange", old: five, spec: edit.PatchSpec{Type: "replace_lines", StartLine: 4, EndLine: 9}, text: "x\n",
			status: edit.StatusOutOfRange, err: edit.ErrOutOfRange, msg: "4-9"},
		{name: "Prepend", old: five, spec: edit.PatchSpec{Type: "prepend"}, text: "// header\n",
			want: "// header\n" + five, status: edit.StatusApplied},
		{name: "PrependAlreadyApplied", old: "// header\n" + five, spec: edit.PatchSpec{Type: "prepend"}, text: "// header\n",
			want: "// header\n" + five, status: edit.StatusAlreadyApplied},
		{name: "InsertBeforeMarker", old: five, spec: edit.PatchSpec{Type: "insert_before_marker", Marker: "thr"}, text: "2.5\n",
			want: "one\ntwo\n2.5\nthree\nfour\nfive\n", status: edit.StatusApplied},
		{name: "InsertAfterMarker", old: five, spec: edit.PatchSpec{Type: "insert_after_marker", Marker: "three"}, text: "3.5\n",
			want: "one\ntwo\nthree\n3.5\nfour\nfive\n", status: edit.StatusApplied},
		{name: "InsertAfterMultilineMarker", old: five, spec: edit.PatchSpec{Type: "insert_after_marker", Marker: "two\nthree"}, text: "3.5\n",
			want: "one\ntwo\nthree\n3.5\nfour\nfive\n", status: edit.StatusApplied},
		{name: "InsertAfterMarkerRegex", old: five, spec: edit.PatchSpec{Type: "insert_after_marker", Marker: `^f\w+r$`, Regex: true}, text: "4.5\n",
			want: "one\ntwo\nthree\nfour\n4.5\nfive\n", status: edit.StatusApplied},
		{name: "InsertAfterMarkerAlreadyApplied", old: "one\ntwo\nthree\n3.5\nfour\nfive\n", spec: edit.PatchSpec{Type: "insert_after_marker", Marker: "three"}, text: "3.5\n",
			want: "one\ntwo\nthree\n3.5\nfour\nfive\n", status: edit.StatusAlreadyApplied},
		{name: "InsertBeforeMarkerAlreadyApplied", old: "one\n2.5\nthree\n", spec: edit.PatchSpec{Type: "insert_before_marker", Marker: "three"}, text: "2.5\n",
			want: "one\n2.5\nthree\n", status: edit.StatusAlreadyApplied},
		{name: "MarkerNotFound", old: five, spec: edit.PatchSpec{Type: "insert_after_marker", Marker: "thre3"}, text: "x\n",
			status: edit.StatusNoMatch, err: edit.ErrNoMatch, msg: `marker "thre3" is not in the file`},
		{name: "MarkerAmbiguous", old: five, spec: edit.PatchSpec{Type: "insert_after_marker", Marker: "o"}, text: "x\n",
			status: edit.StatusAmbiguous, err: edit.ErrAmbiguous, msg: "line 1: one\n  line 2: two\n  line 4: four"},
		{name: "MarkerRegexAmbiguous", old: five, spec: edit.PatchSpec{Type: "insert_before_marker", Marker: `^t`, Regex: true}, text: "x\n",
			status: edit.StatusAmbiguous, err: edit.ErrAmbiguous, msg: "matches 2 times"},
		{name: "ReplaceBlock", old: "a\nfunc f() {\n\treturn 1\n}\nb\n}\n", spec: edit.PatchSpec{Type: "replace_block", StartMarker: "func f() {", EndMarker: "}"},
			text: "func f() {\n\treturn 2\n}\n", want: "a\nfunc f() {\n\treturn 2\n}\nb\n}\n", status: edit.StatusApplied},
		{name: "ReplaceBlockKeepMarkers", old: "x\n// BEGIN\nold1\nold2\n// END\ny\n", spec: edit.PatchSpec{Type: "replace_block", StartMarker: "// BEGIN", EndMarker: "// END", KeepMarkers: true},
			text: "new\n", want: "x\n// BEGIN\nnew\n// END\ny\n", status: edit.StatusApplied},
		{name: "ReplaceBlockKeepMarkersSame", old: "// BEGIN\nnew\n// END\n", spec: edit.PatchSpec{Type: "replace_block", StartMarker: "// BEGIN", EndMarker: "// END", KeepMarkers: true},
			text: "new\n", want: "// BEGIN\nnew\n// END\n", status: edit.StatusAlreadyApplied},
		{name: "ReplaceBlockAlreadyApplied", old: "a\nfunc g() {\n\treturn 2\n}\n", spec: edit.PatchSpec{Type: "replace_block", StartMarker: "func f() {", EndMarker: "}"},
			text: "func g() {\n\treturn 2\n}\n", want: "a\nfunc g() {\n\treturn 2\n}\n", status: edit.StatusAlreadyApplied},
		{name: "ReplaceBlockEndMissing", old: five, spec: edit.PatchSpec{Type: "replace_block", StartMarker: "two", EndMarker: "one"},
			text: "x\n", status: edit.StatusNoMatch, err: edit.ErrNoMatch, msg: `end_marker "one" is not in the file after`},
		{name: "ReplaceBlockStartAmbiguous", old: five, spec: edit.PatchSpec{Type: "replace_block", StartMarker: "t", EndMarker: "five"},
			text: "x\n", status: edit.StatusAmbiguous, err: edit.ErrAmbiguous},
		{name: "ReplacePattern", old: "a := 1 // TODO: implement\nb\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `TODO: \w+`}, text: "done\n",
			want: "a := 1 // done\nb\n", status: edit.StatusApplied},
		{name: "ReplacePatternAll", old: "x1 x2\nx3\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `x\d`, Count: "all"}, text: "y",
			want: "y y\ny\n", status: edit.StatusApplied},
		{name: "ReplacePatternCount", old: "x1 x2\nx3\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `x\d`, Count: "3"}, text: "y",
			want: "y y\ny\n", status: edit.StatusApplied},
		{name: "ReplacePatternCountMismatch", old: "x1 x2\nx3\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `x\d`, Count: "2"}, text: "y",
			status: edit.StatusCountMismatch, err: edit.ErrCountMismatch, msg: "matches 3 times, at lines 1, 1, 2, but count is 2"},
		{name: "ReplacePatternDefaultCountIsOne", old: "x1 x2\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `x\d`}, text: "y",
			status: edit.StatusCountMismatch, err: edit.ErrCountMismatch},
		{name: "ReplacePatternWholeLines", old: five, spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `^t.*\n`, Count: "all"}, text: "T\n",
			want: "one\nT\nT\nfour\nfive\n", status: edit.StatusApplied},
		{name: "ReplacePatternLiteralDollar", old: "v = 1\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `(\d)`}, text: "${x}$1",
			want: "v = ${x}$1\n", status: edit.StatusApplied},
		{name: "ReplacePatternExpand", old: "v = 1\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `(\d)`, Expand: true}, text: "[$1]",
			want: "v = [1]\n", status: edit.StatusApplied},
		{name: "ReplacePatternNoMatch", old: five, spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `six`}, text: "6",
			status: edit.StatusNoMatch, err: edit.ErrNoMatch},
		{name: "ReplacePatternAlreadyApplied", old: "a := 1 // done\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `TODO: \w+`}, text: "done\n",
			want: "a := 1 // done\n", status: edit.StatusAlreadyApplied},
		{name: "ReplaceAll", old: "foo(1); foo(2)\nfoo\n", spec: edit.PatchSpec{Type: "replace_all", Pattern: "foo("}, text: "bar(\n",
			want: "bar(1); bar(2)\nfoo\n", status: edit.StatusApplied},
		{name: "ReplaceAllRegexCharsAreLiteral", old: "a.b axb\n", spec: edit.PatchSpec{Type: "replace_all", Pattern: "a.b"}, text: "c",
			want: "c axb\n", status: edit.StatusApplied},
		{name: "ReplaceAllNoMatch", old: five, spec: edit.PatchSpec{Type: "replace_all", Pattern: "seven"}, text: "7",
			status: edit.StatusNoMatch, err: edit.ErrNoMatch},
		{name: "ReplaceAllCountMismatch", old: "a a a\n", spec: edit.PatchSpec{Type: "replace_all", Pattern: "a", Count: "2"}, text: "b",
			status: edit.StatusCountMismatch, err: edit.ErrCountMismatch},
		{name: "CRLFKept", old: "one\r\ntwo\r\n", spec: edit.PatchSpec{Type: "insert_after_line", Line: 1}, text: "new\nnewer\n",
			want: "one\r\nnew\r\nnewer\r\ntwo\r\n", status: edit.StatusApplied},
		{name: "CRLFReplacePattern", old: "one\r\ntwo\r\nthree\r\n", spec: edit.PatchSpec{Type: "replace_pattern", Pattern: `two\n`}, text: "2\nand more\n",
			want: "one\r\n2\r\nand more\r\nthree\r\n", status: edit.StatusApplied},
		{name: "MixedEndingsOutsideEditKept", old: "a\r\nb\nc\r\n", spec: edit.PatchSpec{Type: "replace_lines", StartLine: 3, EndLine: 3}, text: "C\n",
			want: "a\r\nb\nC\r\n", status: edit.StatusApplied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := edit.ApplyPatch([]byte(tt.old), tt.spec, []byte(tt.text))
			if len(res.Blocks) != 1 {
				t.Fatalf("got %d blocks, want 1 (err %v)", len(res.Blocks), err)
			}
			if got := res.Blocks[0].Status; got != tt.status {
				t.Errorf("status = %s, want %s (err %v)", got, tt.status, err)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("error %q does not contain %q", err, tt.msg)
				}
				if res.Content != nil {
					t.Errorf("content %q on error", res.Content)
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyPatch: %v", err)
			}
			if got := string(res.Content); got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if got, want := res.Changed, tt.want != tt.old; got != want {
				t.Errorf("changed = %v, want %v", got, want)
			}
		})
	}
}

func TestPatchSpecValidate(t *testing.T) {
	tests := []struct {
		name  string
		spec  edit.PatchSpec
		field string // "" when valid
	}{
		{"OK", edit.PatchSpec{Type: "replace_lines", StartLine: 1, EndLine: 1}, ""},
		{"OKCountAll", edit.PatchSpec{Type: "replace_pattern", Pattern: "x", Count: "all"}, ""},
		{"ErrUnknownType", edit.PatchSpec{Type: "insert"}, "type"},
		{"ErrLineZero", edit.PatchSpec{Type: "insert_before_line"}, "line"},
		{"ErrLineNegative", edit.PatchSpec{Type: "insert_after_line", Line: -1}, "line"},
		{"ErrEndBeforeStart", edit.PatchSpec{Type: "replace_lines", StartLine: 5, EndLine: 4}, "end_line"},
		{"ErrStartMissing", edit.PatchSpec{Type: "replace_lines", EndLine: 4}, "start_line"},
		{"ErrMarkerMissing", edit.PatchSpec{Type: "insert_after_marker"}, "marker"},
		{"ErrBadRegex", edit.PatchSpec{Type: "insert_after_marker", Marker: "(", Regex: true}, "marker"},
		{"ErrEndMarkerMissing", edit.PatchSpec{Type: "replace_block", StartMarker: "a"}, "end_marker"},
		{"ErrBadPattern", edit.PatchSpec{Type: "replace_pattern", Pattern: "[a"}, "pattern"},
		{"ErrBadCount", edit.PatchSpec{Type: "replace_pattern", Pattern: "a", Count: "0"}, "count"},
		{"ErrFieldOfOtherType", edit.PatchSpec{Type: "insert_after_line", Line: 2, Marker: "x"}, "marker"},
		{"ErrRegexOnReplaceAll", edit.PatchSpec{Type: "replace_all", Pattern: "x", Regex: true}, "regex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ve *edit.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, edit.ErrInvalidSpec) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if ve.Field != tt.field {
				t.Errorf("field = %s, want %s (%v)", ve.Field, tt.field, err)
			}
			// ApplyPatch validates too.
			if _, err := edit.ApplyPatch([]byte(five), tt.spec, nil); !errors.Is(err, edit.ErrInvalidSpec) {
				t.Errorf("ApplyPatch err = %v, want ErrInvalidSpec", err)
			}
		})
	}
}

func TestPatchSpecJSON(t *testing.T) {
	for _, in := range []string{
		`{"type":"replace_pattern","pattern":"x","count":2}`,
		`{"type":"replace_pattern","pattern":"x","count":"2"}`,
	} {
		var s edit.PatchSpec
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got, want := s.Count, edit.Count("2"); got != want {
			t.Errorf("%s: count = %q, want %q", in, got, want)
		}
	}
	b, err := json.Marshal(edit.PatchSpec{Type: "replace_lines", StartLine: 1, EndLine: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"type":"replace_lines","start_line":1,"end_line":2}`; got != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}
