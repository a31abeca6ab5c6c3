package newfile_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/orion-agent/orion/internal/newfile"
)

func TestLookupAndApply(t *testing.T) {
	// git writes its UTF-16 with a byte order mark, in the byte order of
	// the system's iconv.
	gitUTF16 := "\xfe\xff\x00h\x00i\x00\n"
	if runtime.GOOS == "linux" {
		gitUTF16 = "\xff\xfeh\x00i\x00\n\x00"
	}
	tree := map[string]string{
		"/home/.editorconfig":          "[*]\nend_of_line = crlf\n", // above a root=true file: never read
		"/home/p/.editorconfig":        "root = true\n[*]\nend_of_line = lf\ninsert_final_newline = true\n[*.{cmd,ps1}]\nend_of_line = crlf\n[old/**.txt]\ncharset = latin1\n",
		"/home/p/web/.editorconfig":    "[*.html]\ninsert_final_newline = false\n",
		"/home/p/.gitattributes":       "*.sh eol=lf\n*.png binary\n/tools/*.sh eol=crlf\n",
		"/home/p/web/.gitattributes":   "# comment\n*.txt eol=crlf\n*.w16 working-tree-encoding=UTF-16LE eol=crlf\n*.u16 working-tree-encoding=UTF-16\n*.sj working-tree-encoding=SHIFT-JIS\n*.ini working-tree-encoding=WINDOWS-1252\nplain.ini -working-tree-encoding\n",
		"/home/p/huge/.gitattributes":  "", // unreadable below
		"/home/p/old/deep/keep.txt.ig": "",
	}
	read := func(p string) ([]byte, bool) {
		s, ok := tree[p]
		return []byte(s), ok && p != "/home/p/huge/.gitattributes"
	}
	cases := []struct {
		target, in, want string
		err              error
	}{
		{"/home/p/a.go", "package a", "package a\n", nil},
		{"/home/p/a.go", "a\r\nb\r\n", "a\nb\n", nil},
		{"/home/p/x/run.cmd", "echo\n", "echo\r\n", nil},
		{"/home/p/web/i.html", "<p>\n", "<p>", nil},
		{"/home/p/web/n.txt", "a\nb", "a\r\nb\r\n", nil},
		{"/home/p/tools/b.sh", "x\n", "x\r\n", nil},
		{"/home/p/other/b.sh", "x\r\n", "x\n", nil},
		{"/home/p/i.png", "\x89PNG\r\n", "\x89PNG\r\n", nil},
		{"/home/p/old/deep/a.txt", "café\n", "caf\xe9\n", nil},
		{"/home/p/old/deep/b.txt", "€\n", "", newfile.ErrUnsupportedEncoding},
		// git's working-tree-encoding: UTF-16LE without a byte order mark,
		// UTF-16 with one, Windows-1252 with its euro sign.
		{"/home/p/web/a.w16", "hi\n", "h\x00i\x00\r\x00\n\x00", nil},
		{"/home/p/web/a.u16", "hi", gitUTF16, nil},
		{"/home/p/web/a.sj", "日本\n", "\x93\xfa\x96{\n", nil},
		{"/home/p/web/a.ini", "“5 €”\n", "\x935 \x80\x94\n", nil},
		{"/home/p/web/b.ini", "Ω\n", "", newfile.ErrUnsupportedEncoding},
		{"/home/p/web/plain.ini", "Ω\n", "Ω\n", nil},
	}
	for _, c := range cases {
		s := newfile.Lookup(c.target, "/home/p", read)
		got, _, err := newfile.Apply([]byte(c.in), s)
		if !errors.Is(err, c.err) || (err == nil && string(got) != c.want) {
			t.Errorf("%s %q: got %q, %v; want %q, %v (style %+v)", c.target, c.in, got, err, c.want, c.err, s)
		}
	}
	// Without any configuration the text is left as the model wrote it.
	s := newfile.Lookup("/elsewhere/a.txt", "/elsewhere", read)
	if got, ch, _ := newfile.Apply([]byte("a\r\nb"), s); string(got) != "a\r\nb" || len(ch) != 0 {
		t.Errorf("no configuration: %q %v", got, ch)
	}
}
