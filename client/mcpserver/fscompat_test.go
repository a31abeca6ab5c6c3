package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// fsReference is the reference MCP filesystem server release that
// --filesystem-compatible is compared with, pinned.
const fsReference = "@modelcontextprotocol/server-filesystem@2026.8.31"

type fsCall struct {
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args"`
	IsError    bool            `json:"isError"`
	Content    json.RawMessage `json:"content"`
	Structured map[string]any  `json:"structured"`
	Thrown     string          `json:"thrown"`
}

type fsRun struct {
	Tools []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
	Calls []fsCall `json:"calls"`
}

// fsFixture lays out the same tree for each server: files, a directory,
// symlinks inside and out.
func fsFixture(t *testing.T, dir, outsideDir string) {
	t.Helper()
	for _, d := range []string{dir, outsideDir} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		mkdir(t, d)
	}
	mkdir(t, filepath.Join(dir, "sub", "deeper"))
	for path, content := range map[string]string{
		filepath.Join(dir, "sub", "a.txt"):          "alpha\n",
		filepath.Join(dir, "sub", "deeper", "b.md"): "# beta\n",
		filepath.Join(outsideDir, "secret.txt"):     "secret\n",
		filepath.Join(dir, "sub", "pic.png"):        "\x89PNG\r\n\x1a\n\x00\xff",
		filepath.Join(dir, "sub", "sound.wav"):      "RIFF\x00\x01",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(dir, "link-out"):      outsideDir,
		filepath.Join(dir, "link-in.txt"):   filepath.Join(dir, "sub", "a.txt"),
		filepath.Join(dir, "file-link-out"): filepath.Join(outsideDir, "secret.txt"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
}

// The same calls, sent by the TypeScript SDK's client to the reference
// filesystem server and to orionctl mcp --filesystem-compatible, answer the
// same, but for the differences Orion makes on purpose.
func TestFilesystemCompatible(t *testing.T) {
	modules := npmPackages(t, tsSDK, fsReference)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	dir := filepath.Join(d.Root, "ws")
	outsideDir := filepath.Join(d.Root, "elsewhere")
	outside := filepath.Join(outsideDir, "secret.txt")
	src, err := os.ReadFile("testdata/fscompare.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(modules, "fscompare.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(server ...string) fsRun {
		t.Helper()
		fsFixture(t, dir, outsideDir)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", append([]string{script, dir, outside}, server...)...)
		cmd.Dir = t.TempDir()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("node %v: %v\nstdout %s\nstderr %s", server, err, stdout.String(), stderr.String())
		}
		var out fsRun
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		return out
	}
	ref := run("node", filepath.Join(modules, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), dir)
	refFiles := snapshot(t, dir)
	orion := run(bin, "--socket", d.Socket, "mcp", "--filesystem-compatible", dir)
	orionFiles := snapshot(t, dir)

	// The tools: Orion's are the reference server's, with the same input
	// schemas (but for the JSON Schema dialect the TypeScript SDK names).
	refTools := map[string]map[string]any{}
	for _, tool := range ref.Tools {
		delete(tool.InputSchema, "$schema")
		refTools[tool.Name] = tool.InputSchema
	}
	var served []string
	for _, tool := range orion.Tools {
		served = append(served, tool.Name)
		want, ok := refTools[tool.Name]
		if !ok {
			t.Errorf("orion serves %s, which the reference server does not", tool.Name)
			continue
		}
		if !reflect.DeepEqual(want, tool.InputSchema) {
			t.Errorf("%s input schema:\nreference %v\norion     %v", tool.Name, want, tool.InputSchema)
		}
	}
	for name := range refTools {
		if !slices.Contains(served, name) {
			t.Errorf("orion does not serve %s", name)
		}
	}
	if len(ref.Calls) != len(orion.Calls) {
		t.Fatalf("%d calls answered by the reference server, %d by orion", len(ref.Calls), len(orion.Calls))
	}
	same := 0
	for i := range ref.Calls {
		r, o := ref.Calls[i], orion.Calls[i]
		if r.Name == "get_file_info" {
			// The fixture is made anew for each server: the times
			// differ, their format must not.
			r.Content, o.Content = jsDates(r.Content), jsDates(o.Content)
			r.Structured, o.Structured = jsDatesMap(r.Structured), jsDatesMap(o.Structured)
		}
		sha, hasSHA := o.Structured["sha256"]
		delete(o.Structured, "sha256")
		if !o.IsError && (o.Name == "read_text_file" || o.Name == "read_file" || o.Name == "read_multiple_files" || o.Name == "read_media_file") && (!hasSHA || sha == "") {
			t.Errorf("call %d %s %s: no sha256 in %v", i, o.Name, o.Args, o.Structured)
		}
		if r.IsError == o.IsError && jsonEqual(r.Content, o.Content) && reflect.DeepEqual(r.Structured, o.Structured) && r.Thrown == o.Thrown {
			same++
			continue
		}
		why, deliberate := fsDeliberate(i, r, o)
		if !deliberate {
			t.Errorf("call %d %s %s differs:\nreference %s %s %v %s\norion     %s %s %v %s", i, r.Name, r.Args,
				errWord(r.IsError), r.Content, r.Structured, r.Thrown, errWord(o.IsError), o.Content, o.Structured, o.Thrown)
			continue
		}
		t.Logf("call %d %s %s differs on purpose (%s)", i, r.Name, r.Args, why)
	}
	t.Logf("%d of %d calls identical", same, len(ref.Calls))
	// The protected file the reference server wrote and Orion refused,
	// and the file it moved where Orion refuses moves.
	delete(refFiles, ".mcp.json")
	if moved, ok := refFiles["moved.md"]; ok {
		delete(refFiles, "moved.md")
		refFiles[filepath.Join("sub", "deeper", "b.md")] = moved
	}
	if !reflect.DeepEqual(refFiles, orionFiles) {
		t.Errorf("files after the calls differ:\nreference %v\norion     %v", refFiles, orionFiles)
	}
}

// fsDeliberate says why a difference is kept, or that it is not.
func fsDeliberate(i int, r, o fsCall) (string, bool) {
	var args struct{ Path string }
	json.Unmarshal(o.Args, &args)
	if o.Name == "write_file" && strings.HasSuffix(args.Path, "/.mcp.json") && !r.IsError && o.IsError &&
		strings.Contains(string(o.Content), "protected") {
		return "a protected path, refused", true
	}
	if o.Name == "move_file" && !r.IsError && o.IsError && strings.Contains(string(o.Content), "move_file is refused by Orion") {
		return "a move, which cannot be journaled, refused", true
	}
	return "", false
}

// jsDateRE is a JavaScript Date as a string: "Fri Nov 27 2026 05:30:00
// GMT+0000 (Coordinated Universal Time)".
var jsDateRE = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4} \([^)]*\)`)

func jsDates(raw json.RawMessage) json.RawMessage {
	return json.RawMessage(jsDateRE.ReplaceAll(raw, []byte("DATE")))
}

func jsDatesMap(m map[string]any) map[string]any {
	if s, ok := m["content"].(string); ok {
		m["content"] = jsDateRE.ReplaceAllString(s, "DATE")
	}
	return m
}

func errWord(isError bool) string {
	if isError {
		return "error"
	}
	return "ok"
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// snapshot is every regular file and symlink under dir and its content or
// target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out[rel] = "-> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%q %v", b, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
