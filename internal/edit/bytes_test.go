package edit_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/orion-agent/orion/internal/edit"
)

// TestBytesKept edits the first, a middle and the last line of files in
// each form a checkout holds (UTF-8 with a BOM, CRLF, mixed endings, no
// final newline, Latin-1 bytes) in every edit format, and checks that the
// edit writes the form's endings and that every byte outside the edited
// line is as it was.
func TestBytesKept(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	files := []struct {
		name, text string
	}{
		{"LF", "alpha\nbeta\ngamma\n"},
		{"CRLF", "alpha\r\nbeta\r\ngamma\r\n"},
		{"MixedEndings", "alpha\r\nbeta\ngamma\r\n"},
		{"NoFinalNewline", "alpha\nbeta\ngamma"},
		{"CRLFNoFinalNewline", "alpha\r\nbeta\r\ngamma"},
		{"BOM", bom + "alpha\nbeta\ngamma\n"},
		{"BOMCRLF", bom + "alpha\r\nbeta\r\ngamma\r\n"},
		{"Latin1", "alpha \xe9t\xe9\nbeta\ngamma \xfc\n"},
	}
	// The model writes LF and no BOM, whatever the file holds.
	edits := []struct {
		name string
		make func(old, new string) string
	}{
		{"Aider", func(o, n string) string { return "<<<<<<< SEARCH\n" + o + "\n=======\n" + n + "\n>>>>>>> REPLACE\n" }},
		{"Cline", func(o, n string) string { return "------- SEARCH\n" + o + "\n=======\n" + n + "\n+++++++ REPLACE\n" }},
		{"UnifiedDiff", nil},
		{"Envelope", func(o, n string) string {
			return "*** Begin Patch\n*** Update File: f.txt\n@@\n-" + o + "\n+" + n + "\n*** End Patch\n"
		}},
	}
	for _, f := range files {
		lines := strings.SplitAfter(strings.TrimPrefix(f.text, bom), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for li := range lines {
			oldLine := strings.TrimRight(lines[li], "\r\n")
			if strings.IndexByte(oldLine, 0xe9) >= 0 || strings.IndexByte(oldLine, 0xfc) >= 0 {
				continue // the model sends UTF-8; these lines are matched by their bytes elsewhere
			}
			newLine := strings.ToUpper(oldLine) + "!"
			// What the file must be: the edited line with its own ending
			// (the file's when it had one), every other byte as it was.
			want := f.text[:len(f.text)-len(strings.Join(lines[li:], ""))] +
				newLine + lines[li][len(oldLine):] + strings.Join(lines[li+1:], "")
			for _, e := range edits {
				t.Run(f.name+"/"+e.name+"/"+oldLine, func(t *testing.T) {
					var text string
					if e.make == nil {
						text = "--- a/f.txt\n+++ b/f.txt\n@@ -" + strconv.Itoa(li+1) + ",1 +" + strconv.Itoa(li+1) + ",1 @@\n-" + oldLine + "\n+" + newLine + "\n"
					} else {
						text = e.make(oldLine, newLine)
					}
					read := func(string) ([]byte, bool, error) { return []byte(f.text), true, nil }
					res, err := edit.ApplyFiles([]byte(text), "f.txt", read, nil)
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if len(res.Files) != 1 || string(res.Files[0].Content) != want {
						var got string
						if len(res.Files) == 1 {
							got = string(res.Files[0].Content)
						}
						t.Errorf("file = %q, want %q", got, want)
					}
				})
			}
		}
	}
}

// TestUTF16 edits UTF-16 files (with their byte order mark, as editors
// write them) as their text, and writes them back in UTF-16: every byte
// outside the edited line as it was.
func TestUTF16(t *testing.T) {
	enc := func(s string, big bool) string {
		u := utf16.Encode([]rune(s))
		b := make([]byte, 0, 2*len(u)+2)
		for _, r := range append([]uint16{0xfeff}, u...) {
			if big {
				b = append(b, byte(r>>8), byte(r))
			} else {
				b = append(b, byte(r), byte(r>>8))
			}
		}
		return string(b)
	}
	before, after := "Ünïcode\r\nvalue = 1\r\n€ end\r\n", "Ünïcode\r\nvalue = 2\r\n€ end\r\n"
	for _, big := range []bool{false, true} {
		for _, e := range []string{
			"<<<<<<< SEARCH\nvalue = 1\n=======\nvalue = 2\n>>>>>>> REPLACE\n",
			"------- SEARCH\nvalue = 1\n=======\nvalue = 2\n+++++++ REPLACE\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -2 +2 @@\n-value = 1\n+value = 2\n",
			"*** Begin Patch\n*** Update File: f.txt\n@@\n-value = 1\n+value = 2\n*** End Patch\n",
		} {
			file := enc(before, big)
			read := func(string) ([]byte, bool, error) { return []byte(file), true, nil }
			res, err := edit.ApplyFiles([]byte(e), "f.txt", read, nil)
			if err != nil {
				t.Fatalf("big endian %v: refused: %v\n%s", big, err, e)
			}
			if len(res.Files) != 1 || string(res.Files[0].Content) != enc(after, big) || string(res.Files[0].Old) != file {
				t.Errorf("big endian %v: files %+v\n%s", big, res.Files, e)
			}
		}
	}
	// An unpaired surrogate would come back as U+FFFD: refused, not garbled.
	bad := enc("a\n", false) + "\x00\xd8" + enc("b\n", false)[2:]
	read := func(string) ([]byte, bool, error) { return []byte(bad), true, nil }
	res, err := edit.ApplyFiles([]byte("<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n"), "f.txt", read, nil)
	if !errors.Is(err, edit.ErrUnsupportedEncoding) || len(res.Files) != 0 {
		t.Errorf("unpaired surrogate: err %v, files %v; want unsupported encoding, nothing written", err, res.Files)
	}
	if _, err := edit.Apply([]byte(bad), []byte("<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n")); !errors.Is(err, edit.ErrUnsupportedEncoding) {
		t.Errorf("Apply: err %v, want unsupported encoding", err)
	}
}
