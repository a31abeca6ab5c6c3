package edit_test

import (
	"errors"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// Every entry point edits a file in the charset its project names, or its
// bytes show, as text: the model's UTF-8 search finds the file's bytes,
// the new text is written in the file's charset, and a character it
// cannot hold is refused.
func TestEditInCharset(t *testing.T) {
	latin1 := edit.Charset{Name: "latin1", From: ".editorconfig"}
	sr := func(o, n string) []byte {
		return []byte("<<<<<<< SEARCH\n" + o + "\n=======\n" + n + "\n>>>>>>> REPLACE\n")
	}
	cases := []struct {
		name      string
		apply     func(old []byte) (edit.Result, error)
		old, want string
		err       error
	}{
		{"Named", func(old []byte) (edit.Result, error) { return edit.ApplyAs(old, sr("café", "thé"), latin1) },
			"caf\xe9\r\n\xa9\r\n", "th\xe9\r\n\xa9\r\n", nil},
		{"NamedRefusesEuro", func(old []byte) (edit.Result, error) { return edit.ApplyAs(old, sr("café", "5 €"), latin1) },
			"caf\xe9\n", "", edit.ErrUnsupportedEncoding},
		{"Detected1252", func(old []byte) (edit.Result, error) { return edit.Apply(old, sr("“a” €", "‘b’ €")) },
			"\x93a\x94 \x80\nz\xe9\n", "\x91b\x92 \x80\nz\xe9\n", nil},
		{"Patch", func(old []byte) (edit.Result, error) {
			return edit.ApplyPatchAs(old, edit.PatchSpec{Type: edit.PatchReplaceLines, StartLine: 2, EndLine: 2}, []byte("ü\n"), latin1)
		}, "a\n\xe9\nc\n", "a\n\xfc\nc\n", nil},
		{"Files", func(old []byte) (edit.Result, error) {
			read := func(p string) ([]byte, bool, error) { return old, p == "f.txt", nil }
			res, err := edit.ApplyFilesAs(append([]byte("f.txt\n"), sr("é", "è")...), "f.txt", read, nil,
				func(string) edit.Charset { return latin1 })
			if err == nil && len(res.Files) == 1 {
				res.Content = res.Files[0].Content
			}
			return res, err
		}, "\xe9\n", "\xe8\n", nil},
		{"UTF16NamedWithoutMark", func(old []byte) (edit.Result, error) {
			return edit.ApplyAs(old, sr("a", "é"), edit.Charset{Name: "UTF-16LE"})
		}, "a\x00\n\x00", "\xe9\x00\n\x00", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := c.apply([]byte(c.old))
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err == nil && string(res.Content) != c.want {
				t.Fatalf("content = %q, want %q", res.Content, c.want)
			}
		})
	}
}
