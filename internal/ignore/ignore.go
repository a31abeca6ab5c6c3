// Package ignore decides which paths of a workspace git would ignore: the
// patterns of .gitignore files (each applying below its own directory),
// .git/info/exclude, the person's global excludes file, and .orionignore
// files, which use the same syntax for what Orion should not record but
// git should still track.
//
// The rules are gitignore(5)'s: the last matching pattern wins, deeper
// files override shallower ones, then .git/info/exclude, then the global
// file; "!" re-includes, but nothing below an excluded directory can be
// re-included, because git never looks inside it (the walker does not
// either). Patterns are compiled to regular expressions once.
package ignore

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// MaxFileBytes bounds one ignore file read; the rest is not read.
const MaxFileBytes = 1 << 20

// Rule is one pattern of an ignore file.
type Rule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
	// base is the directory (relative, slash-separated, "" for the
	// workspace) the pattern's file lives in.
	base string
}

// Parse reads the patterns of one ignore file living in base (relative to
// the workspace, "" for its root).
func Parse(r io.Reader, base string) []Rule {
	var rules []Rule
	sc := bufio.NewScanner(io.LimitReader(r, MaxFileBytes))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for sc.Scan() {
		if rule, ok := parseLine(sc.Text(), base); ok {
			rules = append(rules, rule)
		}
	}
	return rules
}

func parseLine(line, base string) (Rule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return Rule{}, false
	}
	r := Rule{base: base}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return Rule{}, false
	}
	// A slash at the start or in the middle anchors the pattern to base;
	// without one it matches a name at any depth.
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	expr := translate(line)
	if !anchored {
		expr = "(?:.*/)?" + expr
	}
	re, err := regexp.Compile("^" + expr + "$")
	if err != nil {
		return Rule{}, false
	}
	r.re = re
	return r, true
}

// translate turns a glob into a regular expression: * and ? stop at a
// slash, ** spans directories where it stands alone between slashes,
// [...] is a class ([!...] negated), a backslash quotes.
func translate(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '*' && strings.HasPrefix(p[i:], "**") && (i == 0 || p[i-1] == '/') && (i+2 == len(p) || p[i+2] == '/'):
			switch {
			case i+2 == len(p) && i == 0:
				b.WriteString(".*")
			case i+2 == len(p):
				// "a/**": everything inside a, not a itself.
				b.WriteString(".+")
			default:
				// "**/" at the start or "/**/" inside: zero or more
				// directories.
				b.WriteString("(?:.*/)?")
				i++ // the slash
			}
			i++
		case c == '*':
			for i+1 < len(p) && p[i+1] == '*' {
				i++
			}
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end, class := bracket(p, i)
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i = end
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	return b.String()
}

// bracket translates the class starting at p[i] == '[' and returns the
// index of its closing bracket, or -1 when it does not close.
func bracket(p string, i int) (int, string) {
	j := i + 1
	var b strings.Builder
	b.WriteByte('[')
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		b.WriteByte('^')
		j++
	}
	first := true
	for ; j < len(p); j++ {
		c := p[j]
		if c == ']' && !first {
			b.WriteString("]")
			return j, b.String()
		}
		first = false
		switch {
		case c == '\\' && j+1 < len(p):
			j++
			b.WriteString(classChar(p[j]))
		case c == '[' && strings.HasPrefix(p[j:], "[:"):
			end := strings.Index(p[j:], ":]")
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(p[j : j+end+2])
			j += end + 1
		case c == '-':
			b.WriteByte('-')
		default:
			b.WriteString(classChar(c))
		}
	}
	return -1, ""
}

// classChar quotes c for use inside a regular expression's class.
func classChar(c byte) string {
	if c < 0x80 && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
		return `\` + string(rune(c))
	}
	return string([]byte{c})
}

// match reports whether r matches rel (slash-separated, relative to the
// workspace), and whether it decided anything.
func (r Rule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	return r.re.MatchString(rel)
}

// Matcher holds the rules of a workspace: the global and repository-wide
// ones, and each directory's own.
type Matcher struct {
	// outer are the global excludes and .git/info/exclude, lowest first.
	outer []Rule
	dirs  map[string][]Rule
}

// FileNames are the per-directory ignore files, in the order their rules
// apply (a later one wins).
var FileNames = []string{".gitignore", ".orionignore"}

// New returns a matcher for the workspace root: the global excludes file
// (globalFile, "" for none) and root/.git/info/exclude. Per-directory files
// are added with Load as the walk reaches each directory.
func New(root, globalFile string) *Matcher {
	m := &Matcher{dirs: map[string][]Rule{}}
	for _, f := range []string{globalFile, filepath.Join(root, ".git", "info", "exclude")} {
		if f == "" {
			continue
		}
		if b, err := readBounded(f); err == nil {
			m.outer = append(m.outer, Parse(bytes.NewReader(b), "")...)
		}
	}
	return m
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes))
}

// Load reads the ignore files of the directory dir (absolute) whose path
// relative to the workspace is rel, replacing what was loaded for it, and
// reports whether it has any.
func (m *Matcher) Load(dir, rel string) bool {
	var rules []Rule
	for _, name := range FileNames {
		if b, err := readBounded(filepath.Join(dir, name)); err == nil {
			rules = append(rules, Parse(bytes.NewReader(b), rel)...)
		}
	}
	if len(rules) == 0 {
		delete(m.dirs, rel)
		return false
	}
	m.dirs[rel] = rules
	return true
}

// Has reports whether rules were loaded for the directory rel.
func (m *Matcher) Has(rel string) bool { return m.dirs[rel] != nil }

// Forget drops the rules of rel and of every directory below it.
func (m *Matcher) Forget(rel string) {
	for d := range m.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			delete(m.dirs, d)
		}
	}
}

// Ignored reports whether rel (slash-separated, relative to the workspace)
// is ignored, given that no directory above it is. The rules of rel's
// ancestors must have been loaded.
func (m *Matcher) Ignored(rel string, isDir bool) bool {
	ignored := false
	apply := func(rules []Rule) {
		for _, r := range rules {
			if r.match(rel, isDir) {
				ignored = !r.negate
			}
		}
	}
	apply(m.outer)
	// Shallow to deep, so a deeper file's rule wins.
	apply(m.dirs[""])
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' {
			apply(m.dirs[rel[:i]])
		}
	}
	return ignored
}

// IsIgnoreFile reports whether name is one of the per-directory ignore
// files.
func IsIgnoreFile(name string) bool {
	for _, n := range FileNames {
		if name == n {
			return true
		}
	}
	return false
}
