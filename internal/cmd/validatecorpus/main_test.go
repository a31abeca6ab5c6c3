package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunOnADirectory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.json": "{\n  \"a\": [1, 2, 3],\n  \"b\": {\"c\": \"d\"}\n}\n",
		"b.xml":  "<root>\n  <item id=\"1\">one</item>\n</root>\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-no-default", "-dir", "tmp=" + dir, "-seed", "3", "-cuts", "4"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, s := range []string{"seed 3, 4 cuts per file, 2 files", "json", "xml", "100.0%", "all data"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(stderr.String(), "source tmp") {
		t.Errorf("stderr lacks the source line:\n%s", stderr.String())
	}
}

func TestRunJSON(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("{\"a\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-no-default", "-dir", dir, "-json"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"type": "json"`) || !strings.Contains(stdout.String(), `"truncations": 5`) {
		t.Fatalf("JSON output:\n%s", stdout.String())
	}
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-no-such-flag"}, &stdout, &stderr); err == nil {
		t.Fatal("bad flag accepted")
	}
	if err := run(context.Background(), []string{"extra"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("extra argument: err = %v", err)
	}
	if err := run(context.Background(), []string{"-no-default"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "no source") {
		t.Fatalf("no source: err = %v", err)
	}
}
