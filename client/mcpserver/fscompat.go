package mcpserver

//lint:file-ignore ST1005 the error texts are the reference filesystem server's, word for word, which hosts and models already know.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/internal/charset"
	"github.com/orion-agent/orion/protocol"
)

// The filesystem-compatible tools: the names, arguments and result shapes
// of the reference MCP filesystem server (@modelcontextprotocol/
// server-filesystem), so a host configured for it runs Orion instead with
// nothing else changed. Writes go through write sessions; reads open the
// file through an os.Root of its allowed directory, so a symlink or ".."
// cannot lead a read outside (the path is never checked and then opened
// by name).

// fsReadMaxBytes bounds a file read whole into a result.
const fsReadMaxBytes = 64 << 20

func (s *Server) addFSTools() {
	ro := func() *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}
	}
	yes := true
	add := func(name, title, desc string, schema string, ann *mcp.ToolAnnotations, fn fsHandler) {
		ann.Title = title
		s.srv.AddTool(&mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: json.RawMessage(schema), Annotations: ann},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args map[string]any
				if err := s.decodeArgs(name, req, &args); err != nil {
					return fsError(err), nil
				}
				if msg := fsCheckArgs(schema, args); msg != "" {
					return fsError(fmt.Errorf("MCP error -32602: Input validation error: Invalid arguments for tool %s: %s", name, msg)), nil
				}
				res, err := fn(ctx, args)
				if err != nil {
					return fsError(err), nil
				}
				return res, nil
			})
	}
	readText := func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		p, _ := args["path"].(string)
		head, _ := args["head"].(float64)
		tail, _ := args["tail"].(float64)
		if head != 0 && tail != 0 {
			return nil, errors.New("Cannot specify both head and tail parameters simultaneously")
		}
		data, err := s.fsRead(p)
		if err != nil {
			return nil, err
		}
		content := fsDecode(data)
		switch {
		case tail > 0:
			content = lastLines(content, int(tail))
		case head > 0:
			content = firstLines(content, int(head))
		}
		return fsText(content, map[string]any{"content": content, "sha256": sha(data)}), nil
	}
	readSchema := `{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number","description":"If provided, returns only the last N lines of the file"},"head":{"type":"number","description":"If provided, returns only the first N lines of the file"}},"required":["path"]}`
	add("read_file", "Read File (Deprecated)", "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.", readSchema, ro(), readText)
	add("read_text_file", "Read Text File", "Read the complete contents of a file from the file system as text. "+
		"Handles various text encodings and provides detailed error messages "+
		"if the file cannot be read. Use this tool when you need to examine "+
		"the contents of a single file. Use the 'head' parameter to read only "+
		"the first N lines of a file, or the 'tail' parameter to read only "+
		"the last N lines of a file. Operates on the file as text regardless of extension. "+
		"Only works within allowed directories.", readSchema, ro(), readText)
	add("read_media_file", "Read Media File", "Read a file and return it as a base64-encoded content block with its MIME type. "+
		"Image and audio files are returned as image/audio content; any other file type is "+
		"returned as an embedded resource. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			data, err := s.fsRead(p)
			if err != nil {
				return nil, err
			}
			dir, rel, err := s.fsResolve(p)
			if err != nil {
				return nil, err
			}
			real := filepath.Join(dir, rel)
			mime, ok := fsMediaTypes[strings.ToLower(filepath.Ext(real))]
			if !ok {
				mime = "application/octet-stream"
			}
			b64 := base64.StdEncoding.EncodeToString(data)
			var item map[string]any
			var block mcp.Content
			switch {
			case strings.HasPrefix(mime, "image/"):
				item = map[string]any{"type": "image", "data": b64, "mimeType": mime}
				block = &mcp.ImageContent{Data: data, MIMEType: mime}
			case strings.HasPrefix(mime, "audio/"):
				item = map[string]any{"type": "audio", "data": b64, "mimeType": mime}
				block = &mcp.AudioContent{Data: data, MIMEType: mime}
			default:
				uri := (&url.URL{Scheme: "file", Path: real}).String()
				item = map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": mime, "blob": b64}}
				block = &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: mime, Blob: data}}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{block},
				StructuredContent: map[string]any{"content": []any{item}, "sha256": sha(data)}}, nil
		})
	add("read_multiple_files", "Read Multiple Files", "Read the contents of multiple files simultaneously. This is more "+
		"efficient than reading files one by one when you need to analyze "+
		"or compare multiple files. Each file's content is returned with its "+
		"path as a reference. Failed reads for individual files won't stop "+
		"the entire operation. Only works within allowed directories.",
		`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"},"minItems":1,"description":"Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories."}},"required":["paths"]}`,
		ro(), func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			paths, _ := args["paths"].([]any)
			var parts []string
			sums := map[string]string{}
			for _, v := range paths {
				p, _ := v.(string)
				data, err := s.fsRead(p)
				if err != nil {
					parts = append(parts, fmt.Sprintf("%s: Error - %s", p, err.Error()))
					continue
				}
				sums[p] = sha(data)
				parts = append(parts, fmt.Sprintf("%s:\n%s\n", p, fsDecode(data)))
			}
			text := strings.Join(parts, "\n---\n")
			return fsText(text, map[string]any{"content": text, "sha256": sums}), nil
		})
	add("write_file", "Write File", "Create a new file or completely overwrite an existing file with new content. "+
		"Use with caution as it will overwrite existing files without warning. "+
		"Handles text content with proper encoding. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`,
		&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes, OpenWorldHint: new(bool)},
		func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			content, _ := args["content"].(string)
			if err := s.fsWrite(ctx, p, content, ""); err != nil {
				return nil, err
			}
			text := "Successfully wrote to " + p
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("edit_file", "Edit File", "Make line-based edits to a text file. Each edit replaces exact line sequences "+
		"with new content. Returns a git-style diff showing the changes made. "+
		"Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Text to search for - must match exactly"},"newText":{"type":"string","description":"Text to replace with"}},"required":["oldText","newText"]}},"dryRun":{"type":"boolean","default":false,"description":"Preview changes using git-style diff format"}},"required":["path","edits"]}`,
		&mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: new(bool)}, s.fsEdit)
	add("create_directory", "Create Directory", "Create a new directory or ensure a directory exists. Can create multiple "+
		"nested directories in one operation. If the directory already exists, "+
		"this operation will succeed silently. Perfect for setting up directory "+
		"structures for projects or ensuring required paths exist. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(bool), OpenWorldHint: new(bool)},
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			dir, rel, err := s.fsResolve(p)
			if err != nil {
				return nil, err
			}
			// A directory holds nothing to journal or undo; it is made
			// through the root, so a symlink swapped in cannot lead out.
			root, err := os.OpenRoot(dir)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			if rel != "." {
				if err := root.MkdirAll(rel, 0o755); err != nil {
					return nil, fsErr(err, p)
				}
			}
			text := "Successfully created directory " + p
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("list_directory", "List Directory", "Get a detailed listing of all files and directories in a specified path. "+
		"Results clearly distinguish between files and directories with [FILE] and [DIR] "+
		"prefixes. This tool is essential for understanding directory structure and "+
		"finding specific files within a directory. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			root, rel, err := s.fsOpenRoot(p)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			entries, err := fsReadDir(root, rel, p)
			if err != nil {
				return nil, err
			}
			var lines []string
			for _, e := range entries {
				kind := "[FILE]"
				if e.IsDir() {
					kind = "[DIR]"
				}
				lines = append(lines, kind+" "+e.Name())
			}
			text := strings.Join(lines, "\n")
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("list_directory_with_sizes", "List Directory with Sizes", "Get a detailed listing of all files and directories in a specified path, including sizes. "+
		"Results clearly distinguish between files and directories with [FILE] and [DIR] "+
		"prefixes. This tool is useful for understanding directory structure and "+
		"finding specific files within a directory. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"},"sortBy":{"type":"string","enum":["name","size"],"default":"name","description":"Sort entries by name or size"}},"required":["path"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			sortBy, _ := args["sortBy"].(string)
			root, rel, err := s.fsOpenRoot(p)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			entries, err := fsReadDir(root, rel, p)
			if err != nil {
				return nil, err
			}
			type sized struct {
				name string
				dir  bool
				size int64
			}
			var list []sized
			var files, dirs int
			var total int64
			for _, e := range entries {
				it := sized{name: e.Name(), dir: e.IsDir()}
				// Stat through the root: an entry that is a symlink
				// leading out counts as size 0, as one that cannot be
				// read does in the reference server.
				if fi, err := root.Stat(filepath.Join(rel, e.Name())); err == nil {
					it.size = fi.Size()
				}
				list = append(list, it)
				if it.dir {
					dirs++
				} else {
					files++
					total += it.size
				}
			}
			slices.SortStableFunc(list, func(a, b sized) int {
				if sortBy == "size" {
					return cmp.Compare(b.size, a.size)
				}
				return localeCompare(a.name, b.name)
			})
			var lines []string
			for _, it := range list {
				kind, size := "[FILE]", fmt.Sprintf("%10s", formatSize(it.size))
				if it.dir {
					kind, size = "[DIR]", ""
				}
				lines = append(lines, fmt.Sprintf("%s %-30s %s", kind, it.name, size))
			}
			lines = append(lines, "", fmt.Sprintf("Total: %d files, %d directories", files, dirs), "Combined size: "+formatSize(total))
			text := strings.Join(lines, "\n")
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("list_allowed_directories", "List Allowed Directories", "Returns the list of directories that this server is allowed to access. "+
		"Subdirectories within these allowed directories are also accessible. "+
		"Use this to understand which directories and their nested paths are available "+
		"before trying to access files.", `{"type":"object","properties":{}}`, ro(),
		func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			text := "Allowed directories:\n" + strings.Join(s.fsDirs, "\n")
			return fsText(text, map[string]any{"content": text}), nil
		})
	s.addFSWalkTools(add, ro)
}

type fsHandler func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)

// fsEdit applies the edits as the reference server does (exact text
// first, then lines equal but for surrounding white space) and writes the
// result through a write session.
func (s *Server) fsEdit(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
	p, _ := args["path"].(string)
	dryRun, _ := args["dryRun"].(bool)
	raw, _ := args["edits"].([]any)
	data, err := s.fsRead(p)
	if err != nil {
		return nil, err
	}
	content := strings.ReplaceAll(fsDecode(data), "\r\n", "\n")
	modified := content
	for _, e := range raw {
		m, _ := e.(map[string]any)
		oldRaw, _ := m["oldText"].(string)
		newRaw, _ := m["newText"].(string)
		oldText := strings.ReplaceAll(oldRaw, "\r\n", "\n")
		newText := strings.ReplaceAll(newRaw, "\r\n", "\n")
		if strings.Contains(modified, oldText) {
			modified = strings.Replace(modified, oldText, newText, 1)
			continue
		}
		var ok bool
		if modified, ok = looseReplace(modified, oldText, newText); !ok {
			return nil, fmt.Errorf("Could not find exact match for edit:\n%s", oldRaw)
		}
	}
	dir, rel, err := s.fsResolve(p)
	if err != nil {
		return nil, err
	}
	target := filepath.Join(dir, rel)
	diff := jsDiff(target, content, modified)
	ticks := 3
	for strings.Contains(diff, strings.Repeat("`", ticks)) {
		ticks++
	}
	fence := strings.Repeat("`", ticks)
	text := fence + "diff\n" + diff + fence + "\n\n"
	if !dryRun {
		if s.fsEditHook != nil {
			s.fsEditHook(target)
		}
		// The edit was made on the content read: if the file changed
		// since, the daemon refuses the write (target_changed) rather
		// than have it overwrite the other change.
		if err := s.fsWrite(ctx, target, modified, sha(data)); err != nil {
			return nil, err
		}
	}
	return fsText(text, map[string]any{"content": text}), nil
}

// looseReplace is the reference server's second try: the first run of
// lines equal to old's but for leading and trailing white space, replaced
// keeping the first line's indentation.
func looseReplace(content, oldText, newText string) (string, bool) {
	oldLines := strings.Split(oldText, "\n")
	lines := strings.Split(content, "\n")
	for i := 0; i+len(oldLines) <= len(lines); i++ {
		match := true
		for j, ol := range oldLines {
			if strings.TrimSpace(ol) != strings.TrimSpace(lines[i+j]) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		indent := leadingSpace(lines[i])
		var repl []string
		for j, nl := range strings.Split(newText, "\n") {
			if j == 0 {
				repl = append(repl, indent+strings.TrimLeft(nl, " \t\r\n\f\v"))
				continue
			}
			oldIndent := ""
			if j < len(oldLines) {
				oldIndent = leadingSpace(oldLines[j])
			}
			newIndent := leadingSpace(nl)
			if oldIndent != "" && newIndent != "" {
				repl = append(repl, indent+strings.Repeat(" ", max(0, len(newIndent)-len(oldIndent)))+strings.TrimLeft(nl, " \t\r\n\f\v"))
				continue
			}
			repl = append(repl, nl)
		}
		out := append(append(append([]string{}, lines[:i]...), repl...), lines[i+len(oldLines):]...)
		return strings.Join(out, "\n"), true
	}
	return content, false
}

func leadingSpace(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t\r\n\f\v"))]
}

// jsDiff is the unified diff as the reference server's diff library
// writes it: an Index and a rule, labelled headers, four lines of context.
func jsDiff(path, old, new string) string {
	head := "Index: " + path + "\n===================================================================\n--- " + path + "\toriginal\n+++ " + path + "\tmodified\n"
	d, err := udiff.ToUnified(path, path, old, udiff.Lines(old, new), 4)
	if err != nil {
		return head
	}
	// Drop udiff's own two header lines.
	for range 2 {
		if i := strings.IndexByte(d, '\n'); i >= 0 {
			d = d[i+1:]
		}
	}
	// It writes every hunk's line counts, 1 included.
	return head + hunkHeader.ReplaceAllStringFunc(d, func(h string) string {
		m := hunkHeader.FindStringSubmatch(h)
		count := func(c string) string {
			if c == "" {
				return ",1"
			}
			return c
		}
		return "@@ -" + m[1] + count(m[2]) + " +" + m[3] + count(m[4]) + " @@"
	})
}

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@`)

// fsCheckArgs checks the top-level arguments against the tool's schema
// as the reference server's validator words the first problem: a missing
// required field or one of the wrong type. "" when they fit.
func fsCheckArgs(schema string, args map[string]any) string {
	var sc struct {
		Properties map[string]struct {
			Type string   `json:"type"`
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &sc) != nil {
		return ""
	}
	names := make([]string, 0, len(sc.Properties))
	for n := range sc.Properties {
		names = append(names, n)
	}
	// The reference server's validator reports in the schema's order,
	// which for these tools puts the path first.
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(strings.Index(schema, `"`+a+`":`), strings.Index(schema, `"`+b+`":`))
	})
	for _, n := range names {
		want := sc.Properties[n].Type
		v, present := args[n]
		if !present {
			if slices.Contains(sc.Required, n) {
				return fmt.Sprintf("Invalid input: expected %s, received undefined at %s", want, n)
			}
			continue
		}
		got := jsKind(v)
		if got != want {
			return fmt.Sprintf("Invalid input: expected %s, received %s at %s", want, got, n)
		}
	}
	return ""
}

func jsKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// fsMediaTypes are the reference server's, by extension.
var fsMediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".bmp": "image/bmp", ".svg": "image/svg+xml",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg", ".flac": "audio/flac",
}

// fsLocate finds the allowed directory of p as the reference server does:
// a relative path against the first directory, an absolute one lexically
// within one. The error texts are the reference server's.
func (s *Server) fsLocate(p string) (dir, rel string, err error) {
	abs := p
	if strings.HasPrefix(abs, "~/") || abs == "~" {
		if home, herr := os.UserHomeDir(); herr == nil {
			abs = filepath.Join(home, strings.TrimPrefix(abs, "~"))
		}
	}
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.fsDirs[0], abs)
	}
	abs = filepath.Clean(abs)
	for _, d := range s.fsDirs {
		if within(d, abs) && len(d) > len(dir) {
			dir = d
		}
	}
	if dir == "" {
		return "", "", fmt.Errorf("Access denied - path outside allowed directories: %s not in %s", abs, strings.Join(s.fsDirs, ", "))
	}
	rel, _ = filepath.Rel(dir, abs)
	return dir, rel, nil
}

// fsResolve is the reference server's validatePath: the path located,
// then its symlinks resolved, each step checked to stay within an allowed
// directory. It returns the directory holding the resolved path and the
// path relative to it. The resolution only chooses the path, with the
// reference server's texts; confinement is enforced where the file is
// opened (an os.Root of the directory) or written (by oriond, confined to
// the directory), so a symlink swapped in between cannot lead out.
func (s *Server) fsResolve(p string) (dir, rel string, err error) {
	dir, rel, err = s.fsLocate(p)
	if err != nil {
		return "", "", err
	}
	abs := filepath.Join(dir, rel)
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		return s.fsInside(real)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	// Part of it does not exist yet: resolve what does.
	cur := dir
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		if _, lerr := os.Lstat(next); lerr != nil {
			return s.fsInside(filepath.Join(append([]string{cur}, parts[i:]...)...))
		}
		r, rerr := filepath.EvalSymlinks(next)
		if rerr != nil {
			if errors.Is(rerr, fs.ErrNotExist) {
				// A dangling symlink: where it points is not known to
				// be inside.
				return "", "", fmt.Errorf("ENOENT: no such file or directory, open '%s'", abs)
			}
			return "", "", rerr
		}
		if _, _, ierr := s.fsInside(r); ierr != nil {
			return "", "", ierr
		}
		cur = r
	}
	return s.fsInside(cur)
}

// fsInside is the allowed directory holding a resolved path.
func (s *Server) fsInside(real string) (string, string, error) {
	best := ""
	for _, d := range s.fsDirs {
		if within(d, real) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return "", "", fmt.Errorf("Access denied - symlink target outside allowed directories: %s not in %s", real, strings.Join(s.fsDirs, ", "))
	}
	rel, _ := filepath.Rel(best, real)
	return best, rel, nil
}

func (s *Server) fsOpenRoot(p string) (*os.Root, string, error) {
	dir, rel, err := s.fsResolve(p)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	return root, rel, nil
}

// fsRead reads p through the root of its directory: os.Root refuses any
// symlink or ".." that leads out of it at open time.
func (s *Server) fsRead(p string) ([]byte, error) {
	root, rel, err := s.fsOpenRoot(p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fsErr(err, p)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fsErr(err, p)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("EISDIR: illegal operation on a directory, read")
	}
	if fi.Size() > fsReadMaxBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a read returns", p, fi.Size(), fsReadMaxBytes)
	}
	buf := make([]byte, 0, fi.Size()+1)
	for {
		n, rerr := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr != nil || len(buf) > fsReadMaxBytes {
			break
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	return buf, nil
}

// fsDecode is a file's text. The reference server reads every file as
// UTF-8, turning a Latin-1 or UTF-16 file into replacement characters (and
// its edit_file writes them back); this one decodes a file whose bytes
// show another encoding, as the daemon does, which writes the edited text
// back in that encoding.
func fsDecode(data []byte) string {
	if _, text, err := charset.DecodeFile(data, "", ""); err == nil {
		return string(text)
	}
	return string(data)
}

// fsWrite writes the whole file through a write session of the daemon,
// which resolves the path confined to the directory and refuses protected
// paths; with expectedSHA, only over that content.
func (s *Server) fsWrite(ctx context.Context, p, content, expectedSHA string) error {
	dir, rel, err := s.fsResolve(p)
	if err != nil {
		return err
	}
	// The reference server creates no directories for a file: neither
	// does this.
	if fi, serr := os.Stat(filepath.Dir(filepath.Join(dir, rel))); serr != nil || !fi.IsDir() {
		return fmt.Errorf("ENOENT: no such file or directory, open '%s'", filepath.Join(dir, rel))
	}
	pl := placement{root: dir, target: filepath.Join(dir, rel)}
	params := protocol.BeginParams{
		Intent:           "write_file " + p,
		TargetFile:       pl.target,
		WorkspaceRoot:    dir,
		Operation:        protocol.OpOverwrite,
		IdleMS:           sessionTimeoutMS,
		AutoFinalizeMS:   sessionTimeoutMS,
		TruncationPolicy: protocol.TruncationKeep,
		ExpectedSHA256:   expectedSHA,
	}
	_, err = s.whole(ctx, params, pl, content, false)
	return err
}

// fsErr words a failed open as Node does, which the reference server
// passes on.
func fsErr(err error, p string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("ENOENT: no such file or directory, open '%s'", p)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("Access denied - symlink target outside allowed directories: %s", p)
	}
	return err
}

// fsReadDir lists a directory sorted by name, byte by byte, as Node's
// readdir does (libuv sorts its scandir).
func fsReadDir(root *os.Root, rel, p string) ([]fs.DirEntry, error) {
	if rel == "" {
		rel = "."
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fsErr(err, p)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("ENOTDIR: not a directory, scandir '%s'", filepath.Join(root.Name(), rel))
	}
	if err != nil {
		return nil, fsErr(err, p)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// formatSize is the reference server's: bytes up to 1 KiB, then two
// decimals of the largest unit.
func formatSize(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	if n <= 0 {
		return "0 B"
	}
	i := int(math.Floor(math.Log(float64(n)) / math.Log(1024)))
	if i <= 0 {
		return fmt.Sprintf("%d B", n)
	}
	i = min(i, len(units)-1)
	return fmt.Sprintf("%.2f %s", float64(n)/math.Pow(1024, float64(i)), units[i])
}

// localeCompare approximates JavaScript's default localeCompare for file
// names: letters compared ignoring case first, then case, lower first.
func localeCompare(a, b string) int {
	if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
		return c
	}
	return -strings.Compare(a, b)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func fsText(text string, structured map[string]any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}

// fsError is a failed call as the reference server's SDK shapes it: the
// message alone, isError set.
func fsError(err error) *mcp.CallToolResult {
	msg := err.Error()
	var pe *protocol.Error
	if errors.As(err, &pe) {
		msg = errorText(err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// firstLines is the reference server's head: the first n lines without
// their newlines, and the unterminated last line if fewer were found.
func firstLines(s string, n int) string {
	var lines []string
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		lines = strings.Split(s[:i], "\n")
		s = s[i+1:]
	}
	if len(lines) > n {
		lines = lines[:n]
	}
	if s != "" && len(lines) < n {
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// lastLines is the reference server's tail: line endings made \n, the
// last n pieces between newlines (an empty one after a final newline
// counts).
func lastLines(s string, n int) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fsAllowedDirs resolves the directories as the reference server does at
// start: absolute, symlinks resolved, each one a directory.
func fsAllowedDirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("directory %s: %w", d, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", d)
		}
		out = append(out, real)
	}
	return out, nil
}
