// Command debdocs stages the documents the Debian package ships, with
// their links fixed for where they are installed, and checks the links of
// an unpacked package. build-deb.sh runs both.
//
// In the repository the README links to CONTRIBUTING.md, LICENSE and
// packaging/README.md, and docs/ links to source directories and to other
// packages' READMEs; /usr/share/doc/oriond holds only the README, docs/,
// the packaging README (as README.packaging.md) and copyright (which
// carries the LICENSE's text). So each link to a document the package
// ships is rewritten to where it is installed, and each link to anything
// else to its page in the repository at the packaged revision.
//
//	debdocs -out DIR -repo URL          stage README.md, docs/*.md and packaging/README.md into DIR
//	debdocs -check DIR                  every relative link of DIR's documents leads to a file, and a heading
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/orion-agent/orion/internal/doctest"
)

func main() {
	out := flag.String("out", "", "stage the packaged documents into this directory")
	repo := flag.String("repo", "", "the repository's URL for files at the packaged revision, such as https://github.com/o/r/blob/v1.2.0")
	check := flag.String("check", "", "check every relative link of the documents under this directory")
	flag.Parse()
	var err error
	switch {
	case *out != "" && *repo != "":
		err = stage(".", *out, *repo)
	case *check != "":
		var broken []string
		broken, err = checkLinks(*check)
		if err == nil && len(broken) > 0 {
			err = fmt.Errorf("%d broken links:\n  %s", len(broken), strings.Join(broken, "\n  "))
		}
	default:
		err = fmt.Errorf("give -out DIR -repo URL, or -check DIR")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "debdocs:", err)
		os.Exit(1)
	}
}

// shipped maps each document the package ships, by its path in the
// repository, to its path under /usr/share/doc/oriond. Files of docs/
// (images too) keep theirs.
func shipped(root string) (map[string]string, error) {
	m := map[string]string{
		"README.md":           "README.md",
		"packaging/README.md": "README.packaging.md",
		"LICENSE":             "copyright",
	}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		m[filepath.ToSlash(rel)] = filepath.ToSlash(rel)
		return err
	})
	return m, err
}

// stage writes every shipped Markdown document of root into out at its
// installed path, its links rewritten.
func stage(root, out, repo string) error {
	files, err := shipped(root)
	if err != nil {
		return err
	}
	for src, dst := range files {
		if path.Ext(src) != ".md" {
			continue
		}
		text, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			return err
		}
		text = rewrite(text, src, dst, files, strings.TrimSuffix(repo, "/"))
		p := filepath.Join(out, filepath.FromSlash(dst))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var linkTarget = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// rewrite returns the document src (installed as dst) with each relative
// link retargeted: to the installed path of a shipped document, or to the
// repository otherwise. Links inside code are left alone (doctest.Links
// says which lines hold real ones).
func rewrite(text []byte, src, dst string, files map[string]string, repo string) []byte {
	real := map[int]map[string]bool{}
	for _, l := range doctest.Links(text) {
		if real[l.Line] == nil {
			real[l.Line] = map[string]bool{}
		}
		real[l.Line][l.Target] = true
	}
	lines := strings.SplitAfter(string(text), "\n")
	for i, line := range lines {
		targets := real[i+1]
		if targets == nil {
			continue
		}
		lines[i] = linkTarget.ReplaceAllStringFunc(line, func(m string) string {
			t := m[2 : len(m)-1]
			if !targets[t] || strings.HasPrefix(t, "#") {
				return m
			}
			file, anchor, _ := strings.Cut(t, "#")
			if anchor != "" {
				anchor = "#" + anchor
			}
			inRepo := path.Clean(path.Join(path.Dir(src), file))
			if to, ok := files[inRepo]; ok {
				rel, err := filepath.Rel(filepath.Dir(filepath.FromSlash(dst)), filepath.FromSlash(to))
				if err != nil {
					return m
				}
				if to == "copyright" {
					anchor = "" // Debian's format has no headings
				}
				return "](" + filepath.ToSlash(rel) + anchor + ")"
			}
			return "](" + repo + "/" + inRepo + anchor + ")"
		})
	}
	return []byte(strings.Join(lines, ""))
}

// checkLinks returns the relative links of the Markdown documents under
// dir that lead nowhere: to no file, or to a heading the document lacks.
func checkLinks(dir string) ([]string, error) {
	var broken []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, l := range doctest.Links(text) {
			file, anchor, _ := strings.Cut(l.Target, "#")
			to := p
			if file != "" {
				to = filepath.Join(filepath.Dir(p), filepath.FromSlash(file))
			}
			rel, _ := filepath.Rel(dir, p)
			where := fmt.Sprintf("%s:%d: %s", rel, l.Line, l.Target)
			target, err := os.ReadFile(to)
			if fi, serr := os.Stat(to); serr == nil && fi.IsDir() {
				err = nil
				if anchor != "" {
					broken = append(broken, where+" (a heading of a directory)")
				}
				continue
			}
			if err != nil {
				broken = append(broken, where+" (no such file)")
				continue
			}
			if anchor != "" && filepath.Ext(to) == ".md" && !doctest.Anchors(target)[anchor] {
				broken = append(broken, where+" (no such heading)")
			}
		}
		return nil
	})
	sort.Strings(broken)
	return broken, err
}
