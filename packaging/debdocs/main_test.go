package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository's own documents, staged as the package installs them,
// have no link that leads nowhere, and none to a file the package does not
// ship.
func TestStagedDocumentsLinkSomewhere(t *testing.T) {
	out := t.TempDir()
	if err := stage("../..", out, "https://example.com/o/r/blob/REV"); err != nil {
		t.Fatal(err)
	}
	// What nfpm ships beside the staged documents.
	images, _ := filepath.Glob("../../docs/images/*")
	os.MkdirAll(filepath.Join(out, "docs", "images"), 0o755)
	for _, img := range images {
		os.WriteFile(filepath.Join(out, "docs", "images", filepath.Base(img)), nil, 0o644)
	}
	os.WriteFile(filepath.Join(out, "copyright"), nil, 0o644)
	broken, err := checkLinks(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link in the package: %s", b)
	}
}

func TestRewrite(t *testing.T) {
	files := map[string]string{"README.md": "README.md", "packaging/README.md": "README.packaging.md",
		"LICENSE": "copyright", "docs/a.md": "docs/a.md"}
	for _, tc := range []struct{ name, src, dst, in, want string }{
		{"ShippedStays", "README.md", "README.md", "[a](docs/a.md#x)", "[a](docs/a.md#x)"},
		{"Renamed", "docs/a.md", "docs/a.md", "[p](../packaging/README.md#units)", "[p](../README.packaging.md#units)"},
		{"License", "README.md", "README.md", "see [LICENSE](LICENSE).", "see [LICENSE](copyright)."},
		{"NotShipped", "docs/a.md", "docs/a.md", "[n](../client/node/README.md#x)", "[n](https://r/blob/REV/client/node/README.md#x)"},
		{"Directory", "docs/a.md", "docs/a.md", "[`protocol/`](../protocol)", "[`protocol/`](https://r/blob/REV/protocol)"},
		{"Anchor", "docs/a.md", "docs/a.md", "[h](#here)", "[h](#here)"},
		{"InCode", "README.md", "README.md", "`[c](CONTRIBUTING.md)`", "`[c](CONTRIBUTING.md)`"},
		{"Web", "README.md", "README.md", "[w](https://example.com/x.md)", "[w](https://example.com/x.md)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rewrite([]byte(tc.in+"\n"), tc.src, tc.dst, files, "https://r/blob/REV")); strings.TrimSpace(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
