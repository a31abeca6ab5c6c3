package validate_test

import (
	"errors"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

const marker = "__END_WRITE_sess_1a2b__"

func kinds(fixes []validate.Fix) []validate.FixKind {
	var ks []validate.FixKind
	for _, f := range fixes {
		ks = append(ks, f.Kind)
	}
	return ks
}

func TestRepair(t *testing.T) {
	bomS := "\xEF\xBB\xBF"
	tests := []struct {
		name        string
		path        string
		content     string
		original    string
		hasOriginal bool
		opts        validate.RepairOptions
		want        string
		kinds       []validate.FixKind
	}{
		{"NewFileGetsLFAndFinalNewline", "a.txt", "a\r\nb", "", false, validate.RepairOptions{}, "a\nb\n",
			[]validate.FixKind{validate.FixLineEndings, validate.FixFinalNewlineAdded}},
		{"CRLFOriginalKeepsCRLF", "a.txt", "x\ny\n", "a\r\nb\r\n", true, validate.RepairOptions{}, "x\r\ny\r\n",
			[]validate.FixKind{validate.FixLineEndings}},
		{"LFOriginalGetsLF", "a.txt", "x\r\ny\r\n", "a\nb\n", true, validate.RepairOptions{}, "x\ny\n",
			[]validate.FixKind{validate.FixLineEndings}},
		{"MixedOriginalKeepsEachLine", "a.txt", "one\ntwo\nnew\n", "one\r\ntwo\nthree\r\n", true, validate.RepairOptions{}, "one\r\ntwo\nnew\r\n",
			[]validate.FixKind{validate.FixLineEndings}},
		{"FinalNewlineRemovedLikeOriginal", "a.txt", "x\ny\n", "a\nb", true, validate.RepairOptions{}, "x\ny",
			[]validate.FixKind{validate.FixFinalNewlineRemoved}},
		{"FinalNewlineAddedLikeOriginal", "a.txt", "x\ny", "a\nb\n", true, validate.RepairOptions{}, "x\ny\n",
			[]validate.FixKind{validate.FixFinalNewlineAdded}},
		{"FinalCRLFAdded", "a.txt", "x\r\ny", "a\r\n", true, validate.RepairOptions{}, "x\r\ny\r\n",
			[]validate.FixKind{validate.FixFinalNewlineAdded}},
		{"EmptyStaysEmpty", "a.txt", "", "", false, validate.RepairOptions{}, "", nil},
		{"BOMAddedLikeOriginal", "a.cs", "x\n", bomS + "a\n", true, validate.RepairOptions{}, bomS + "x\n",
			[]validate.FixKind{validate.FixBOMAdded}},
		{"BOMRemovedLikeOriginal", "a.txt", bomS + "x\n", "a\n", true, validate.RepairOptions{}, "x\n",
			[]validate.FixKind{validate.FixBOMRemoved}},
		{"BOMKeptForNewFile", "a.txt", bomS + "x\n", "", false, validate.RepairOptions{}, bomS + "x\n", nil},
		{"FenceRemovedFromGo", "main.go", "```go\npackage main\n```\n", "", false, validate.RepairOptions{}, "package main\n",
			[]validate.FixKind{validate.FixCodeFenceRemoved}},
		{"TildeFenceRemovedFromJSON", "a.json", "\n~~~~json\n{}\n~~~~\n\n", "", false, validate.RepairOptions{}, "{}\n",
			[]validate.FixKind{validate.FixCodeFenceRemoved}},
		{"UnclosedOpeningFenceRemoved", "a.json", "```json\n{\"a\": [1", "", false, validate.RepairOptions{}, "{\"a\": [1\n",
			[]validate.FixKind{validate.FixCodeFenceRemoved, validate.FixFinalNewlineAdded}},
		{"FenceKeptInMarkdown", "README.md", "```go\npackage main\n```\n", "", false, validate.RepairOptions{}, "```go\npackage main\n```\n", nil},
		{"FenceKeptWhenOriginalHasIt", "notes.txt", "```\nnew\n```\n", "```\nold\n```\n", true, validate.RepairOptions{}, "```\nnew\n```\n", nil},
		{"InnerFencesAreNotAWrapper", "a.py", "x = 1\n```\ny\n```\n", "", false, validate.RepairOptions{}, "x = 1\n```\ny\n```\n", nil},
		{"MarkerLineRemoved", "a.txt", "x\n" + marker + "\n", "", false, validate.RepairOptions{EndMarker: marker}, "x\n",
			[]validate.FixKind{validate.FixEndMarkerRemoved}},
		{"TextAfterMarkerRemoved", "a.txt", "x\n  " + marker + " \nThanks!\n", "", false, validate.RepairOptions{EndMarker: marker}, "x\n",
			[]validate.FixKind{validate.FixEndMarkerRemoved, validate.FixTextAfterMarker}},
		{"MarkerGluedToLastLine", "a.go", "}" + marker + "\n", "", false, validate.RepairOptions{EndMarker: marker}, "}\n",
			[]validate.FixKind{validate.FixEndMarkerRemoved}},
		{"MarkerThenFence", "a.json", "```json\n{}\n```\n" + marker + "\n", "", false, validate.RepairOptions{EndMarker: marker}, "{}\n",
			[]validate.FixKind{validate.FixEndMarkerRemoved, validate.FixCodeFenceRemoved}},
		{"DoneRemovedWhenAllowed", "a.txt", "x\nDONE\n", "", false, validate.RepairOptions{AllowLegacyDone: true}, "x\n",
			[]validate.FixKind{validate.FixDoneLineRemoved}},
		{"DoneKeptWhenNotAllowed", "a.txt", "x\nDONE\n", "", false, validate.RepairOptions{}, "x\nDONE\n", nil},
		{"DoneKeptWhenOriginalEndsWithIt", "todo.txt", "x\nDONE\n", "y\nDONE\n", true, validate.RepairOptions{AllowLegacyDone: true}, "x\nDONE\n", nil},
		{"DoneInTheMiddleKept", "a.txt", "DONE\nx\n", "", false, validate.RepairOptions{AllowLegacyDone: true}, "DONE\nx\n", nil},
		{"InvalidUTF8Replaced", "a.txt", "a\xffb\n", "", false, validate.RepairOptions{}, "a\uFFFDb\n",
			[]validate.FixKind{validate.FixInvalidUTF8Replaced}},
		{"NonUTF8OriginalLeftAlone", "latin1.txt", "caf\xe9\n", "caf\xe9s\n", true, validate.RepairOptions{InvalidUTF8: validate.UTF8Refuse}, "caf\xe9\n", nil},
		{"LoneCRAtEndDropped", "a.txt", "a\r\nb\r", "", false, validate.RepairOptions{}, "a\nb\n",
			[]validate.FixKind{validate.FixLineEndings, validate.FixFinalNewlineAdded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Room after the content, filled, to see that Repair
			// neither writes to the content nor appends into its
			// array: callers pass bytes they must keep as sent.
			in := append([]byte(tt.content), "spare room"...)
			content := in[:len(tt.content)]
			got, fixes, err := validate.Repair(tt.path, content, []byte(tt.original), tt.hasOriginal, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("Repair = %q, want %q", got, tt.want)
			}
			if string(in) != tt.content+"spare room" {
				t.Fatalf("Repair changed the bytes it was given: %q", in)
			}
			// Content it leaves as it is comes back as it is, not
			// copied; anything else in a slice of Repair's own.
			same := len(got) > 0 && &got[0] == &content[0] && len(got) == len(content)
			if unchanged := len(fixes) == 0 && tt.want == tt.content && tt.content != ""; same != unchanged {
				t.Fatalf("Repair returned the content itself: %v, want %v", same, unchanged)
			}
			if same {
				return
			}
			for i := range got {
				got[i] = '!'
			}
			if string(in) != tt.content+"spare room" {
				t.Fatalf("Repair returned bytes of the content's array: %q", in)
			}
			if g, w := kinds(fixes), tt.kinds; len(g) != len(w) || len(g) > 0 && !equalKinds(g, w) {
				t.Fatalf("fixes = %v, want %v", g, w)
			}
			for _, f := range fixes {
				if f.Message == "" {
					t.Fatalf("fix %s has no message", f.Kind)
				}
			}
		})
	}
}

func equalKinds(a, b []validate.FixKind) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Empty content comes back empty and not nil: the session tells content
// that was checked from content that was not by nil.
func TestRepairEmptyIsNotNil(t *testing.T) {
	for _, content := range [][]byte{nil, {}} {
		got, _, err := validate.Repair("a.txt", content, nil, false, validate.RepairOptions{})
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Repair(%#v) = %#v, %v; want an empty slice", content, got, err)
		}
	}
}

func TestRepairRefusesInvalidUTF8(t *testing.T) {
	_, _, err := validate.Repair("a.txt", []byte("ok\nbad \xc3\x28 here\n"), nil, false, validate.RepairOptions{InvalidUTF8: validate.UTF8Refuse})
	if !errors.Is(err, validate.ErrInvalidUTF8) {
		t.Fatalf("err = %v, want ErrInvalidUTF8", err)
	}
	var ue *validate.UTF8Error
	if !errors.As(err, &ue) || ue.Line != 2 || ue.Column != 5 || ue.Count != 1 {
		t.Fatalf("err = %#v, want line 2, column 5, 1 byte", err)
	}
}

// TestRepairKeepsUnchangedBytes checks that content equal to the original
// comes out byte for byte, whatever the original's conventions.
func TestRepairKeepsUnchangedBytes(t *testing.T) {
	for name, orig := range map[string]string{
		"CRLF":        "a\r\nb\r\n",
		"Mixed":       "a\r\nb\nc\r\nd",
		"BOMNoFinal":  "\xEF\xBB\xBFa\nb",
		"Fenced":      "```\nx\n```\n",
		"DoneAtEnd":   "x\nDONE\n",
		"BlankLines":  "\n\na\n\n\n",
		"CROnlyLines": "a\rb\r",
	} {
		t.Run(name, func(t *testing.T) {
			got, fixes, err := validate.Repair("f.txt", []byte(orig), []byte(orig), true, validate.RepairOptions{EndMarker: marker, AllowLegacyDone: true})
			if err != nil || string(got) != orig || len(fixes) != 0 {
				t.Fatalf("Repair(original) = %q, %v, %v; want it unchanged", got, kinds(fixes), err)
			}
		})
	}
}

func FuzzRepairIdentity(f *testing.F) {
	for _, s := range []string{"a\r\nb\n", "\xEF\xBB\xBFx", "```\ny\n```", "x\nDONE\n", "", "\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, orig string) {
		got, fixes, err := validate.Repair("f.txt", []byte(orig), []byte(orig), true, validate.RepairOptions{EndMarker: marker, AllowLegacyDone: true})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != orig {
			t.Fatalf("Repair(%q, same original) = %q (fixes %v)", orig, got, kinds(fixes))
		}
	})
}
