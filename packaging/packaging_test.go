// Package packaging_test checks the package's files against the
// repository: the copyright file carries the LICENSE, and nfpm ships it.
// packaging/build-deb.sh (run by .ci/run) checks the built .deb itself.
package packaging_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The LICENSE is MIT, as client/node/package.json says, and the Debian
// copyright file carries its text as Expat (Debian's name for it).
func TestCopyrightCarriesTheLicense(t *testing.T) {
	license := read(t, "../LICENSE")
	if !strings.HasPrefix(license, "MIT License\n") {
		t.Fatal("LICENSE is not the MIT license")
	}
	var pkg struct{ License string }
	if err := json.Unmarshal([]byte(read(t, "../client/node/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.License != "MIT" {
		t.Fatalf("client/node/package.json says license %q, LICENSE says MIT", pkg.License)
	}
	copyright := read(t, "copyright")
	if !strings.HasPrefix(copyright, "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") ||
		!strings.Contains(copyright, "\nLicense: Expat\n") {
		t.Fatalf("packaging/copyright is not a machine-readable copyright file with License: Expat:\n%s", copyright)
	}
	// The license text, from the permission notice on, indented by one
	// space with blank lines as " .".
	_, notice, _ := strings.Cut(license, "\nPermission is hereby granted")
	var want strings.Builder
	for _, l := range strings.Split(strings.TrimRight("Permission is hereby granted"+notice, "\n"), "\n") {
		if l == "" {
			want.WriteString(" .\n")
		} else {
			want.WriteString(" " + l + "\n")
		}
	}
	if !strings.HasSuffix(copyright, want.String()) {
		t.Fatalf("packaging/copyright does not end with the LICENSE's text; want it to end with:\n%s", want.String())
	}
	_, holder, _ := strings.Cut(license, "Copyright (c) ")
	holder, _, _ = strings.Cut(holder, "\n")
	if !strings.Contains(copyright, "\nCopyright: "+holder+"\n") {
		t.Fatalf("packaging/copyright does not name the LICENSE's holder %q", holder)
	}
}

// The .deb ships docs/ beside the README, so that the README's links to
// docs/ lead somewhere in /usr/share/doc/oriond; build-deb.sh then checks
// that every file of docs/ is in the package.
func TestDebShipsDocs(t *testing.T) {
	var cfg struct {
		Contents []struct{ Src, Dst string }
	}
	if err := yaml.Unmarshal([]byte(read(t, "nfpm.yaml")), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"${ORION_DEB_BUILD}/doc/docs/*.md": "/usr/share/doc/oriond/docs/",
		"docs/images/*":                    "/usr/share/doc/oriond/docs/images/",
	}
	for _, c := range cfg.Contents {
		if dst, ok := want[c.Src]; ok && dst == c.Dst {
			delete(want, c.Src)
		}
	}
	for src, dst := range want {
		t.Errorf("nfpm.yaml does not ship %s into %s", src, dst)
	}
	if script := read(t, "build-deb.sh"); !strings.Contains(script, "git ls-files docs") {
		t.Errorf("build-deb.sh does not expect the files of docs/ in the package")
	}
}

// The .deb ships the copyright file and the packaging README, and
// build-deb.sh expects them.
func TestDebShipsCopyrightAndPackagingREADME(t *testing.T) {
	var cfg struct {
		Contents []struct{ Src, Dst string }
	}
	if err := yaml.Unmarshal([]byte(read(t, "nfpm.yaml")), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"/usr/share/doc/oriond/copyright":           "packaging/copyright",
		"/usr/share/doc/oriond/README.packaging.md": "${ORION_DEB_BUILD}/doc/README.packaging.md",
	}
	for _, c := range cfg.Contents {
		if src, ok := want[c.Dst]; ok && src == c.Src {
			delete(want, c.Dst)
		}
	}
	for dst, src := range want {
		t.Errorf("nfpm.yaml does not ship %s as %s", src, dst)
	}
	script := read(t, "build-deb.sh")
	for _, f := range []string{"./usr/share/doc/oriond/copyright", "./usr/share/doc/oriond/README.packaging.md"} {
		if !strings.Contains(script, `"-rw-r--r-- `+f+`"`) {
			t.Errorf("build-deb.sh does not expect %s in the package", f)
		}
	}
}
