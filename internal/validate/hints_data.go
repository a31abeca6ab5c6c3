package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file holds the end-of-content hints for YAML and TOML, where a cut
// inside a plain value or between two lines usually leaves a valid
// document. They read the structure the parser built around the last
// node, since the text alone says nothing.

// yamlDocs returns the documents of a YAML stream; nil if it does not
// parse.
func yamlDocs(src []byte) []*yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			return nil
		}
		if len(doc.Content) == 1 {
			docs = append(docs, doc.Content[0])
		}
	}
}

// yamlLastPath returns the nodes from the root of the last document in src
// down to its last node, following the last item of each sequence and the
// last key and value of each mapping; nil if src does not parse.
func yamlLastPath(src []byte) []*yaml.Node {
	docs := yamlDocs(src)
	if len(docs) == 0 {
		return nil
	}
	var path []*yaml.Node
	for n := docs[len(docs)-1]; n != nil; {
		path = append(path, n)
		switch {
		case n.Kind == yaml.MappingNode && len(n.Content) >= 2:
			n = n.Content[len(n.Content)-1]
		case n.Kind == yaml.SequenceNode && len(n.Content) > 0:
			n = n.Content[len(n.Content)-1]
		default:
			n = nil
		}
	}
	return path
}

// valuesUnderKeys counts the plain scalar values of a YAML stream that
// stand on the line under their key ("want:\n  _") rather than after it.
// A file written that way throughout uses it as its style; only when the
// last value is the one such value is it the sign of a cut.
func valuesUnderKeys(src []byte) int {
	count := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.ScalarNode && v.Style == 0 && v.Line > k.Line {
					count++
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range yamlDocs(src) {
		walk(d)
	}
	return count
}

// isPlainWord reports whether n is a plain (unquoted, untagged) string
// scalar of one word: what a cut inside a key leaves of it.
func isPlainWord(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style == 0 && n.Tag == "!!str" && n.Value != "" &&
		!strings.ContainsAny(n.Value, " \t\n")
}

// mappingKeys returns the keys of a mapping node in order.
func mappingKeys(n *yaml.Node) []string {
	keys := make([]string, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// collectionItems returns the items of a sequence, or the values of a
// mapping.
func collectionItems(n *yaml.Node) []*yaml.Node {
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	var vs []*yaml.Node
	for i := 1; i < len(n.Content); i += 2 {
		vs = append(vs, n.Content[i])
	}
	return vs
}

// yamlCutItem flags YAML whose last item breaks the pattern of its
// siblings in the way a cut does. A cut inside the first key of a list
// item leaves a plain word ("- s" where every other item is a mapping
// "- src: ...", or a word on the line under "key:" where a nested mapping
// was coming); a cut between the keys of the last item leaves a mapping
// that has only the first keys its siblings all have ("- name: Test"
// where each other step has "name" then "run"). Hand-written lists are
// uniform, so a complete file rarely ends in either shape.
func yamlCutItem(src []byte, ls *lines) (issue, bool) {
	path := yamlLastPath(src)
	for i := len(path) - 1; i >= 1; i-- {
		parent, n := path[i-1], path[i]
		if parent.Kind == yaml.MappingNode && isPlainWord(n) {
			key := parent.Content[len(parent.Content)-2]
			if n.Line > key.Line && n.Column > key.Column && valuesUnderKeys(src) == 1 {
				return yamlHint(ls, n.Line, fmt.Sprintf("the YAML ends at line %d with the plain value %q on the line under the key %q; a value on its own line there is what a cut inside a nested key leaves (expected \"%s: value\" or a nested mapping): send the rest of the file", n.Line, n.Value, key.Value, n.Value)), true
			}
		}
		items := collectionItems(parent)
		siblings := items[:len(items)-1]
		if len(siblings) == 0 {
			continue
		}
		allMaps := true
		for _, s := range siblings {
			if s.Kind != yaml.MappingNode || len(s.Content) == 0 {
				allMaps = false
				break
			}
		}
		if !allMaps {
			continue
		}
		if parent.Kind == yaml.SequenceNode && isPlainWord(n) && n.Line > siblings[len(siblings)-1].Line {
			return yamlHint(ls, n.Line, fmt.Sprintf("the YAML ends at line %d with the list item %q, a plain value, while every other item of the list is a mapping (such as \"%s: ...\"); it looks cut off inside the item's first key: send the rest of the file", n.Line, n.Value, siblings[0].Content[0].Value)), true
		}
		if n.Kind != yaml.MappingNode || len(n.Content) != 2 || len(siblings) < 2 {
			continue
		}
		keys := mappingKeys(n)
		missing := ""
		for _, s := range siblings {
			sk := mappingKeys(s)
			if len(sk) <= len(keys) || !slices.Equal(sk[:len(keys)], keys) {
				missing = ""
				break
			}
			if missing == "" {
				missing = sk[len(keys)]
			}
		}
		if missing != "" {
			last := n.Content[len(n.Content)-2]
			return yamlHint(ls, last.Line, fmt.Sprintf("the YAML ends with an item that has only the key(s) %s, while each of its %d siblings goes on with more keys (such as %q); the last item looks cut off after line %d: send the rest of the file from there", strings.Join(keys, ", "), len(siblings), missing, last.Line)), true
		}
	}
	return issue{}, false
}

// yamlHint builds a mid_statement hint at line n.
func yamlHint(ls *lines, n int, msg string) issue {
	return hint(CodeMidStatement, ls, n, msg)
}

// tomlEmptyTable flags TOML that ends with a table header ("[tools]",
// "[[servers]]") and no key after it: a header opens the keys that
// follow, so a header at the very end is what a cut after it leaves, like
// a YAML key with no value or a Markdown heading with nothing under it.
func tomlEmptyTable(ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	l := strings.TrimSpace(ls.text(n))
	if i := strings.Index(l, "#"); i > 0 && !strings.ContainsAny(l[:i], "\"'") {
		l = strings.TrimSpace(l[:i])
	}
	if !strings.HasPrefix(l, "[") || !strings.HasSuffix(l, "]") || strings.ContainsAny(l, "=\"'") {
		return issue{}, false
	}
	return hint(CodeMidStatement, ls, n, fmt.Sprintf("the TOML ends at line %d with the table header %s and no key under it (expected \"key = value\" lines); it looks cut off: send the rest of the file", n, quoteLine(l))), true
}

// yamlOpenValue flags YAML whose last scalar stops inside something it
// opened: a block scalar ("run: |") with no text at all, or a last line
// that opens an expression ("${{", "{{", "${", "$(") or a double-quoted
// string and never closes it, as a cut in "go-version: ${{ matrix.go }}"
// or in `run: echo "done"` leaves. The parser cannot see these: inside a
// plain or block scalar they are just text. Only the last line is read,
// and only openers count, so an expression spread over lines of a script
// is not mistaken for a cut unless the cut is in it.
func yamlOpenValue(src []byte, ls *lines) (issue, bool) {
	path := yamlLastPath(src)
	if len(path) == 0 {
		return issue{}, false
	}
	n := path[len(path)-1]
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return issue{}, false
	}
	last := ls.lastNonBlank()
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && n.Value == "" && last == n.Line {
		return hint(CodeMidStatement, ls, last, fmt.Sprintf("the YAML ends at line %d with a block scalar indicator (%s) and no text under it (expected indented lines); it looks cut off: send the rest of the file", last, quoteLine(ls.text(last)))), true
	}
	if n.Line > last || n.Tag != "!!str" {
		return issue{}, false
	}
	text := ls.text(last)
	if last == n.Line {
		// The scalar starts on this line: only its own text counts, not
		// the key or list marker before it.
		text = text[min(len(text), max(n.Column-1, 0)):]
	}
	if what := openConstruct(text); what != "" {
		return hint(CodeMidStatement, ls, last, fmt.Sprintf("the YAML ends at line %d inside %s that is never closed (%s); it looks cut off: send the rest of the file", last, what, quoteLine(ls.text(last)))), true
	}
	return issue{}, false
}

// openConstruct returns what a line of text opens and leaves open: a
// template or shell expression, or a double-quoted string; "" if none.
func openConstruct(s string) string {
	var stack []string
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch {
		case inQuote:
			if s[i] == '\\' {
				i++
			} else if s[i] == '"' {
				inQuote = false
			}
		case s[i] == '"':
			inQuote = true
		case strings.HasPrefix(s[i:], "${{"), strings.HasPrefix(s[i:], "{{"):
			stack = append(stack, "}}")
			i += strings.Index(s[i:], "{{") + 1
		case strings.HasPrefix(s[i:], "${"):
			stack = append(stack, "}")
			i++
		case strings.HasPrefix(s[i:], "$("):
			stack = append(stack, ")")
			i++
		case len(stack) > 0 && strings.HasPrefix(s[i:], stack[len(stack)-1]):
			i += len(stack[len(stack)-1]) - 1
			stack = stack[:len(stack)-1]
		case len(stack) > 0 && s[i] == '(' && stack[len(stack)-1] == ")":
			stack = append(stack, ")")
		case len(stack) > 0 && s[i] == '{' && stack[len(stack)-1] == "}":
			stack = append(stack, "}")
		}
	}
	switch {
	case inQuote:
		return "a double-quoted string"
	case len(stack) == 0:
		return ""
	case stack[0] == "}}":
		return "a {{ expression"
	case stack[0] == "}":
		return "a ${ expansion"
	}
	return "a $( command substitution"
}
