package mcpserver

//lint:file-ignore ST1005 the error texts are the reference filesystem server's, word for word.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fsWalkMaxEntries bounds what a tree or a search walks, so a model
// pointing either at a huge directory cannot exhaust the server.
const fsWalkMaxEntries = 200_000

var errFSWalkTooBig = fmt.Errorf("more than %d entries under the path: name a smaller directory", fsWalkMaxEntries)

// addFSWalkTools adds the reference server's tree, search, file-info and
// move tools. The reads walk through an os.Root of the allowed directory,
// as the other reads open through one.
func (s *Server) addFSWalkTools(add func(name, title, desc, schema string, ann *mcp.ToolAnnotations, fn fsHandler), ro func() *mcp.ToolAnnotations) {
	add("directory_tree", "Directory Tree", "Get a recursive tree view of files and directories as a JSON structure. "+
		"Each entry includes 'name', 'type' (file/directory), and 'children' for directories. "+
		"Files have no children array, while directories always have a children array (which may be empty). "+
		"The output is formatted with 2-space indentation for readability. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"},"excludePatterns":{"type":"array","items":{"type":"string"},"default":[]}},"required":["path"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			excl, err := fsPatterns(args["excludePatterns"])
			if err != nil {
				return nil, err
			}
			root, rel, err := s.fsOpenRoot(p)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			seen := 0
			var build func(relDir, shown string) ([]any, error)
			build = func(relDir, shown string) ([]any, error) {
				entries, err := fsReadDir(root, relDir, shown)
				if err != nil {
					return nil, err
				}
				out := []any{}
				for _, e := range entries {
					if seen++; seen > fsWalkMaxEntries {
						return nil, errFSWalkTooBig
					}
					// Relative to the path as given, as the reference
					// server matches its patterns.
					r, _ := filepath.Rel(p, filepath.Join(shown, e.Name()))
					if fsExcludedTree(r, excl) {
						continue
					}
					if e.IsDir() {
						kids, err := build(filepath.Join(relDir, e.Name()), filepath.Join(shown, e.Name()))
						if err != nil {
							return nil, err
						}
						out = append(out, fsTreeEntry{Name: e.Name(), Type: "directory", Children: kids})
						continue
					}
					out = append(out, fsTreeEntry{Name: e.Name(), Type: "file"})
				}
				return out, nil
			}
			tree, err := build(rel, p)
			if err != nil {
				return nil, err
			}
			b, err := json.MarshalIndent(tree, "", "  ")
			if err != nil {
				return nil, err
			}
			text := string(b)
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("search_files", "Search Files", "Recursively search for files and directories matching a pattern. "+
		"The patterns should be glob-style patterns that match paths relative to the working directory. "+
		"Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all subdirectories. "+
		"Returns full paths to all matching items. Great for finding files when you don't know their exact location. "+
		"Only searches within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"},"excludePatterns":{"type":"array","items":{"type":"string"},"default":[]}},"required":["path","pattern"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			pattern, _ := args["pattern"].(string)
			excl, err := fsPatterns(args["excludePatterns"])
			if err != nil {
				return nil, err
			}
			match, err := globRegexp(pattern)
			if err != nil {
				return nil, err
			}
			dir, rel, err := s.fsResolve(p)
			if err != nil {
				return nil, err
			}
			base := filepath.Join(dir, rel)
			root, err := os.OpenRoot(dir)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			var results []string
			seen := 0
			var search func(relDir, full string) error
			search = func(relDir, full string) error {
				entries, err := fsReadDir(root, relDir, full)
				if err != nil {
					return err
				}
				for _, e := range entries {
					if seen++; seen > fsWalkMaxEntries {
						return errFSWalkTooBig
					}
					entryFull := filepath.Join(full, e.Name())
					// The reference server skips whatever its path
					// check refuses: symlinks leading out.
					if _, _, err := s.fsResolve(entryFull); err != nil {
						continue
					}
					r, _ := filepath.Rel(base, entryFull)
					if fsExcluded(r, excl) {
						continue
					}
					if match.MatchString(r) {
						results = append(results, entryFull)
					}
					if e.IsDir() {
						// An unreadable subdirectory is skipped, as
						// the reference server skips it.
						_ = search(filepath.Join(relDir, e.Name()), entryFull)
					}
				}
				return nil
			}
			if err := search(rel, base); err != nil {
				return nil, err
			}
			text := "No matches found"
			if len(results) > 0 {
				text = strings.Join(results, "\n")
			}
			return fsText(text, map[string]any{"content": text}), nil
		})
	add("get_file_info", "Get File Info", "Retrieve detailed metadata about a file or directory. Returns comprehensive "+
		"information including size, creation time, last modified time, permissions, "+
		"and type. This tool is perfect for understanding file characteristics "+
		"without reading the actual content. Only works within allowed directories.",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, ro(),
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			p, _ := args["path"].(string)
			root, rel, err := s.fsOpenRoot(p)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			// Non-blocking, so a FIFO does not hang the call; opened
			// through the root, so a symlink swapped in cannot lead out.
			f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return nil, fsStatErr(err, filepath.Join(root.Name(), rel))
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return nil, err
			}
			born := fileBirth(f, fi)
			lines := []string{
				fmt.Sprintf("size: %d", fi.Size()),
				"created: " + jsDate(born),
				"modified: " + jsDate(fi.ModTime()),
				"accessed: " + jsDate(fileAccess(fi)),
				fmt.Sprintf("isDirectory: %t", fi.IsDir()),
				fmt.Sprintf("isFile: %t", fi.Mode().IsRegular()),
				"permissions: " + fmt.Sprintf("%03o", fi.Mode().Perm()),
			}
			text := strings.Join(lines, "\n")
			return fsText(text, map[string]any{"content": text}), nil
		})
	yes := true
	add("move_file", "Move File", "Move or rename files and directories. Can move files between directories "+
		"and rename them in a single operation. If the destination exists, the "+
		"operation will fail. Works across different directories and can be used "+
		"for simple renaming within the same directory. Both source and destination must be within allowed directories.",
		`{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},"required":["source","destination"]}`,
		&mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: new(bool)},
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			src, _ := args["source"].(string)
			dst, _ := args["destination"].(string)
			// The paths are checked as the reference server checks them,
			// so a path outside or a taken destination fails with its
			// text; a move that would happen is then refused: the
			// daemon journals writes of files, not renames or removals,
			// so a move could be neither recorded nor undone.
			sdir, srel, err := s.fsResolve(src)
			if err != nil {
				return nil, err
			}
			ddir, drel, err := s.fsResolve(dst)
			if err != nil {
				return nil, err
			}
			if _, err := os.Lstat(filepath.Join(ddir, drel)); err == nil {
				return nil, fmt.Errorf("Destination already exists: %s", filepath.Join(ddir, drel))
			}
			if _, err := os.Lstat(filepath.Join(sdir, srel)); err != nil {
				return nil, fmt.Errorf("ENOENT: no such file or directory, rename '%s' -> '%s'", filepath.Join(sdir, srel), filepath.Join(ddir, drel))
			}
			return nil, fmt.Errorf("move_file is refused by Orion: a move cannot be journaled or undone. " +
				"To move a file, write its content to the destination with write_file; removing the source is left to the person")
		})
}

type fsTreeEntry struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Children []any  `json:"children,omitempty"`
}

// MarshalJSON keeps a directory's empty children array, which the
// reference server always writes.
func (e fsTreeEntry) MarshalJSON() ([]byte, error) {
	if e.Type == "directory" {
		kids := e.Children
		if kids == nil {
			kids = []any{}
		}
		return json.Marshal(struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Children []any  `json:"children"`
		}{e.Name, e.Type, kids})
	}
	return json.Marshal(struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}{e.Name, e.Type})
}

func fsStatErr(err error, p string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ENOENT: no such file or directory, stat '%s'", p)
	}
	return fsErr(err, p)
}

// fsPatterns is excludePatterns, each compiled.
func fsPatterns(v any) ([]*regexp.Regexp, error) {
	list, _ := v.([]any)
	var out []*regexp.Regexp
	for _, it := range list {
		p, ok := it.(string)
		if !ok {
			return nil, errors.New("excludePatterns must be strings")
		}
		re, err := globRegexp(p)
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

func fsExcluded(rel string, excl []*regexp.Regexp) bool {
	for _, re := range excl {
		if re.MatchString(rel) {
			return true
		}
	}
	return false
}

// fsExcludedTree is directory_tree's exclusion: a pattern with no "*"
// also matches as a name anywhere and as a directory holding the path.
func fsExcludedTree(rel string, excl []*regexp.Regexp) bool {
	for _, re := range excl {
		if re.MatchString(rel) {
			return true
		}
		src := re.String()
		if strings.Contains(src, "[^/]*") { // the pattern had a "*"
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(src, "^"), "$")
		for _, extra := range []string{"^(?:.*/)?" + name + "$", "^(?:.*/)?" + name + "/.*$"} {
			if m, err := regexp.MatchString(extra, rel); err == nil && m {
				return true
			}
		}
	}
	return false
}

// globRegexp is minimatch's glob with dot files matched: "**" as a whole
// segment spans any number of segments, "*" and "?" stay within one,
// "[…]" a class, "{a,b}" alternatives.
func globRegexp(glob string) (*regexp.Regexp, error) {
	if len(glob) > 4096 {
		return nil, errors.New("pattern longer than 4096 bytes")
	}
	var b strings.Builder
	b.WriteString("^")
	segs := strings.Split(glob, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "**" {
			if last {
				b.WriteString(".*")
			} else {
				b.WriteString("(?:[^/]*/)*")
			}
			continue
		}
		depth := 0
		for j := 0; j < len(seg); j++ {
			c := seg[j]
			switch {
			case c == '*':
				b.WriteString("[^/]*")
			case c == '?':
				b.WriteString("[^/]")
			case c == '[':
				end := strings.IndexByte(seg[j+1:], ']')
				if end < 0 {
					b.WriteString(`\[`)
					continue
				}
				class := seg[j+1 : j+1+end]
				if strings.HasPrefix(class, "!") {
					class = "^" + class[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
				j += end + 1
			case c == '{':
				depth++
				b.WriteString("(?:")
			case c == '}' && depth > 0:
				depth--
				b.WriteString(")")
			case c == ',' && depth > 0:
				b.WriteString("|")
			case c == '\\' && j+1 < len(seg):
				j++
				b.WriteString(regexp.QuoteMeta(seg[j : j+1]))
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		for ; depth > 0; depth-- {
			b.WriteString(")")
		}
		if !last {
			b.WriteString("/")
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("invalid pattern %q: %v", glob, err)
	}
	return re, nil
}

// jsDate is a time as JavaScript's Date writes itself into a string.
func jsDate(t time.Time) string {
	t = t.Local()
	name, _ := t.Zone()
	if name == "UTC" {
		name = "Coordinated Universal Time"
	}
	return t.Format("Mon Jan 02 2006 15:04:05 GMT-0700") + " (" + name + ")"
}
