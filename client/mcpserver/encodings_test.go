package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// The MCP edit and write tools keep a file in the encoding its project
// names or its bytes show: a Windows-1252 file with a euro sign and
// typographic quotes, and a UTF-16LE file .gitattributes names, are
// edited as text and written back in their encoding; a character the
// encoding lacks is refused unsupported_encoding, the file unchanged.
func TestEditKeepsEncoding(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	write := func(name, content string) string {
		p := filepath.Join(h.d.Root, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cp := write("price.txt", "\x93Price\x94 5 \x80\nx = 1\n")
	h.ok("edit_file", map[string]any{"target_file": "price.txt", "edit": "<<<<<<< SEARCH\n“Price” 5 €\n=======\n“Price” 6 €\n>>>>>>> REPLACE\n"})
	if got := readFile(t, cp); got != "\x93Price\x94 6 \x80\nx = 1\n" {
		t.Fatalf("price.txt: %q", got)
	}
	h.ok("write_file", map[string]any{"target_file": "price.txt", "operation": "overwrite", "content": "“Prix” 7 €\n"})
	if got := readFile(t, cp); got != "\x93Prix\x94 7 \x80\n" {
		t.Fatalf("price.txt after write_file: %q", got)
	}
	text, e := h.fails("edit_file", map[string]any{"target_file": "price.txt", "edit": "<<<<<<< SEARCH\n“Prix” 7 €\n=======\nΩ\n>>>>>>> REPLACE\n"})
	if e["error"] != "unsupported_encoding" {
		t.Fatalf("a character Windows-1252 lacks: %q %v", text, e)
	}
	if got := readFile(t, cp); got != "\x93Prix\x94 7 \x80\n" {
		t.Fatalf("price.txt after a refusal: %q", got)
	}

	write(".gitattributes", "*.w16 working-tree-encoding=UTF-16LE\n")
	wp := write("a.w16", "a\x00\n\x00x\x00\n\x00")
	h.ok("edit_file", map[string]any{"target_file": "a.w16", "edit": "<<<<<<< SEARCH\nx\n=======\né\n>>>>>>> REPLACE\n"})
	if got := readFile(t, wp); got != "a\x00\n\x00\xe9\x00\n\x00" {
		t.Fatalf("a.w16: %q", got)
	}
}

// The filesystem-compatible read_text_file and edit_file read a
// Windows-1252 file as its text (the reference server shows replacement
// characters and writes them back), and the edit is written back in
// Windows-1252, every other byte kept.
func TestFSToolsKeepEncoding(t *testing.T) {
	d := testdaemon.Start(t)
	dir := filepath.Join(d.Root, "ws")
	mkdir(t, dir)
	target := filepath.Join(dir, "price.txt")
	if err := os.WriteFile(target, []byte("\x93Price\x94 5 \x80\r\nx = 1\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newFSHost(t, d, dir)

	if got, _ := h.ok("read_text_file", map[string]any{"path": target}); got != "“Price” 5 €\r\nx = 1\r\n" {
		t.Fatalf("read_text_file: %q", got)
	}
	h.ok("edit_file", map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "“Price” 5 €", "newText": "“Price” 6 €"}}})
	if got := readFile(t, target); got != "\x93Price\x94 6 \x80\r\nx = 1\r\n" {
		t.Fatalf("after edit_file: %q", got)
	}
}
