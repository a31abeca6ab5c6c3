package mcpserver

import (
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	roots := []string{"/w/a", "/w/a/inner", "/w/b"}
	for _, c := range []struct {
		target, root, abs, err string
	}{
		{"x.go", "/w/a", "/w/a/x.go", ""},
		{"inner/x.go", "/w/a/inner", "/w/a/inner/x.go", ""},
		{"/w/b/y.go", "/w/b", "/w/b/y.go", ""},
		{"/w/bb/y.go", "", "", "outside the workspace"},
		{"../b/y.go", "/w/b", "/w/b/y.go", ""},
		{"../../etc/passwd", "", "", "outside the workspace"},
		{"", "", "", "target_file is empty"},
	} {
		pl, err := place(roots, c.target)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error saying %q", c.target, err, c.err)
			}
			continue
		}
		if err != nil || pl.root != c.root || pl.target != c.abs {
			t.Errorf("%q: %+v, %v; want root %s, target %s", c.target, pl, err, c.root, c.abs)
		}
	}
}

func TestRootPath(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///home/me/src":            "/home/me/src",
		"file://localhost/home/me/a%20b": "/home/me/a b",
		"file:///home/me/src/":           "/home/me/src",
		"https://example.com/x":          "",
		"file://other/home":              "",
		"file:relative":                  "",
	} {
		got, err := rootPath(uri)
		if want == "" {
			if err == nil {
				t.Errorf("%s: %s, want refused", uri, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", uri, got, err, want)
		}
	}
}
