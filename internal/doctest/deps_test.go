package doctest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every module go.mod requires directly is justified in docs/dependencies.md,
// and that page names no module go.mod no longer requires: a dependency
// added or dropped without its reason fails here.
func TestDependenciesDocumented(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "dependencies.md"))
	if err != nil {
		t.Fatal(err)
	}
	required := directRequirements(string(gomod))
	if len(required) == 0 {
		t.Fatal("go.mod: no direct requirement found; has its format changed?")
	}
	documented := documentedModules(t, string(doc))
	for _, m := range required {
		if !slices.ContainsFunc(documented, func(d string) bool { return d == m || strings.HasPrefix(d, m+"/") }) {
			t.Errorf("go.mod requires %s, which docs/dependencies.md does not justify: add a line to its \"Go modules\" list saying what it does for us and why that one", m)
		}
	}
	for _, d := range documented {
		if !slices.ContainsFunc(required, func(m string) bool { return d == m || strings.HasPrefix(d, m+"/") }) {
			t.Errorf("docs/dependencies.md lists %s, which go.mod does not require directly: remove it, or mark it indirect there if it is", d)
		}
	}
}

// directRequirements returns the module paths of go.mod's require
// directives, block or single line, that are not marked // indirect.
func directRequirements(gomod string) []string {
	var mods []string
	inBlock := false
	for _, line := range strings.Split(gomod, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if line == "" || strings.HasPrefix(line, "//") || strings.HasSuffix(line, "// indirect") {
			continue
		}
		mods = append(mods, strings.Fields(line)[0])
	}
	return mods
}

var moduleItem = regexp.MustCompile("^- `([^`]+)`")

// documentedModules returns the first code span of each item of the "Go
// modules" section of docs/dependencies.md: a module path, or a package
// path inside the module (golang.org/x/sys/unix).
func documentedModules(t *testing.T, doc string) []string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Go modules\n")
	if !ok {
		t.Fatal(`docs/dependencies.md has no "## Go modules" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var mods []string
	for _, line := range strings.Split(section, "\n") {
		if m := moduleItem.FindStringSubmatch(line); m != nil {
			mods = append(mods, m[1])
		}
	}
	return mods
}
