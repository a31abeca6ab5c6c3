package corpus_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/internal/validate/corpus"
)

// writeTree creates files under a temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var tree = map[string]string{
	"pkg/a.json":                 "{\n  \"name\": \"a\",\n  \"list\": [1, 2, 3]\n}\n",
	"pkg/b.json":                 "{\"b\": true}\n",
	"pkg/copy.json":              "{\"b\": true}\n", // duplicate content: kept once
	"pkg/main.go":                "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"pkg/testdata/broken.go":     "package x\nfunc {\n", // Go under testdata: a fixture
	"pkg/invalid/x.json":         "{",                   // named invalid: a fixture
	"pkg/notes.txt":              "not a checked type\n",
	"pkg/README.md":              "# A\n\nSome text.\n",
	"pkg/template.css":           "{{/* a Go template */}}\na { color: red; }\n",
	"pkg/.git/config.json":       "{}\n",
	"pkg/empty.yaml":             "",
	"pkg/nested/deep/conf.yaml":  "a: 1\nb:\n  - x\n  - y\n",
	"pkg/nested/deep/style.toml": "[a]\nb = \"c\"\n",
}

func TestGather(t *testing.T) {
	dir := writeTree(t, tree)
	files, err := corpus.Gather(context.Background(), []corpus.Source{{Name: "t", Dir: dir}}, corpus.GatherOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f.Path)
		if rel == "pkg/b.json" || rel == "pkg/copy.json" {
			rel = "pkg/<one of the duplicates>.json"
		}
		got = append(got, rel)
		if f.Type != validate.Detect(f.Path, nil) || f.Source != "t" || len(f.Data) == 0 {
			t.Errorf("bad file %+v", f)
		}
	}
	want := []string{"pkg/template.css", "pkg/main.go", "pkg/a.json", "pkg/<one of the duplicates>.json", "pkg/README.md", "pkg/nested/deep/style.toml", "pkg/nested/deep/conf.yaml"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("gathered %v, want %v", got, want)
	}
}

func TestEvaluateIsDeterministic(t *testing.T) {
	dir := writeTree(t, tree)
	files, err := corpus.Gather(context.Background(), []corpus.Source{{Name: "t", Dir: dir}}, corpus.GatherOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	a := corpus.Evaluate(context.Background(), files, corpus.EvalOptions{Seed: 7, Cuts: 4, Workers: 3, Keep: 10})
	b := corpus.Evaluate(context.Background(), files, corpus.EvalOptions{Seed: 7, Cuts: 4, Workers: 1, Keep: 10})
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("results depend on the number of workers:\n%+v\n%+v", a, b)
	}
	for _, r := range a {
		switch r.Type {
		case validate.TypeCSS:
			if r.Invalid != 1 || r.Truncations != 0 {
				t.Errorf("template.css should be counted invalid and not cut: %+v", r)
			}
		case validate.TypeJSON:
			if r.Files != 2 || r.Flagged != 0 || r.Truncations != 8 || r.Caught != 8 {
				t.Errorf("json row %+v", r)
			}
		}
	}
	var out bytes.Buffer
	if err := corpus.WriteTable(&out, a); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"TP rate", "all data", "json", "target"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}
