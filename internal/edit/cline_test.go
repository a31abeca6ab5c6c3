package edit_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// The cases below follow Cline's replace_in_file tool description (SEARCH
// must match exactly, only the first match is replaced, several blocks are
// listed in file order, two blocks move code, an empty REPLACE deletes) and
// what Cline's diff code does (exact, then line-trimmed, then first and
// last line anchors for blocks of three lines or more; an empty SEARCH
// replaces the whole file; an unfinished block is an error). The texts are
// ours.

const todo = `export function add(items, item) {
  items.push(item);
  return items;
}

export function remove(items, item) {
  const i = items.indexOf(item);
  if (i >= 0) {
    items.splice(i, 1);
  }
  return items;
}
`

// cline builds one of Cline's blocks with markers of the given lengths.
func cline(search, replace string) string { return clineN(7, 7, 7, search, replace) }

func clineN(s, d, r int, search, replace string) string {
	return strings.Repeat("-", s) + " SEARCH\n" + search + strings.Repeat("=", d) + "\n" + replace + strings.Repeat("+", r) + " REPLACE\n"
}

func TestClineReplaceInFile(t *testing.T) {
	c := edit.DialectCline
	twice := "log(1);\nstep();\nlog(1);\nstep();\n"
	runDialectCases(t, []dialectCase{
		{name: "OneBlock", target: "todo.js", files: map[string]string{"todo.js": todo}, dialect: c,
			edit:  cline("  items.push(item);\n", "  items.push({ ...item });\n"),
			after: map[string]string{"todo.js": replaceAll(todo, "items.push(item);", "items.push({ ...item });")}, status: []edit.Status{"applied"}},
		{name: "InsideDiffTagWithProse", target: "todo.js", files: map[string]string{"todo.js": todo}, dialect: c,
			edit:  "I'll make add() return a copy.\n\n<replace_in_file>\n<path>todo.js</path>\n<diff>\n" + cline("  return items;\n}\n\nexport function remove(items, item) {\n", "  return [...items];\n}\n\nexport function remove(items, item) {\n") + "</diff>\n</replace_in_file>\n\nThis keeps callers safe.\n",
			after: map[string]string{"todo.js": strings.Replace(todo, "  return items;\n}\n\nexport", "  return [...items];\n}\n\nexport", 1)}},
		{name: "SeveralBlocksInFileOrder", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:   cline("export function add(items, item) {\n", "export function add(items, item) {\n  if (!item) return items;\n") + cline("  if (i >= 0) {\n", "  if (i !== -1) {\n"),
			after:  map[string]string{"todo.js": replaceAll(todo, "export function add(items, item) {\n", "export function add(items, item) {\n  if (!item) return items;\n", "i >= 0", "i !== -1")},
			status: []edit.Status{"applied", "applied"}},
		{name: "SameTextTwiceInOrder", target: "s.js", files: map[string]string{"s.js": twice},
			edit:   cline("log(1);\nstep();\n", "log(1);\nstep(a);\n") + cline("log(1);\nstep();\n", "log(1);\nstep(b);\n"),
			after:  map[string]string{"s.js": "log(1);\nstep(a);\nlog(1);\nstep(b);\n"},
			status: []edit.Status{"applied", "applied"}},
		{name: "OutOfOrderButUnique", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:  cline("    items.splice(i, 1);\n", "    items.splice(i, 1); // drop\n") + cline("  items.push(item);\n", "  items.push(item); // keep\n"),
			after: map[string]string{"todo.js": replaceAll(todo, "items.splice(i, 1);", "items.splice(i, 1); // drop", "items.push(item);", "items.push(item); // keep")}},
		{name: "LineTrimmedMatch", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit: cline("if (i >= 0) {\n  items.splice(i, 1);\n}\n", "if (i >= 0) {\n  items.splice(i, 1);\n  removed++;\n}\n"),
			// Cline keeps the replacement as written, not re-indented.
			after: map[string]string{"todo.js": replaceAll(todo, "  if (i >= 0) {\n    items.splice(i, 1);\n  }\n", "if (i >= 0) {\n  items.splice(i, 1);\n  removed++;\n}\n")}},
		{name: "BlockAnchorMatch", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:  cline("export function remove(items, item) {\n  const i = items.findIndex(item);\n  if (i >= 0) {\n", "export function remove(items, item) {\n  const i = items.lastIndexOf(item);\n  if (i >= 0) {\n"),
			after: map[string]string{"todo.js": replaceAll(todo, "items.indexOf(item)", "items.lastIndexOf(item)")}},
		{name: "ErrBlockAnchorAmbiguous", target: "a.js", files: map[string]string{"a.js": "{\n a\n}\n{\n b\n}\n"},
			edit:   cline("{\n c\n}\n", "{\n d\n}\n"),
			status: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous},
		{name: "ErrNoAnchorForTwoLines", target: "a.js", files: map[string]string{"a.js": "x();\ny();\n"},
			edit:   cline("x();\nz();\n", "x();\nw();\n"),
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"closest lines"}},
		{name: "EmptySearchNewFile", target: "new.js", files: map[string]string{}, dialect: c,
			edit:  cline("", "export const x = 1;\n"),
			after: map[string]string{"new.js": "export const x = 1;\n"}},
		{name: "EmptySearchEmptyFile", target: "e.js", files: map[string]string{"e.js": ""},
			edit:  cline("", "a();\n"),
			after: map[string]string{"e.js": "a();\n"}},
		{name: "EmptySearchReplacesWholeFile", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:  cline("", "export {};\n"),
			after: map[string]string{"todo.js": "export {};\n"}},
		{name: "EmptySearchResent", target: "todo.js", files: map[string]string{"todo.js": "export {};\n"},
			edit:   cline("", "export {};\n"),
			status: []edit.Status{"already_applied"}, already: true},
		{name: "MarkerLengths", target: "m.txt", files: map[string]string{"m.txt": "a\nb\nc\nd\n"},
			edit:  clineN(5, 5, 5, "a\n", "A\n") + clineN(7, 10, 7, "b\n", "B\n") + clineN(10, 7, 12, "c\n", "C\n") + clineN(12, 12, 12, "d\n", "D\n"),
			after: map[string]string{"m.txt": "A\nB\nC\nD\n"}, status: []edit.Status{"applied", "applied", "applied", "applied"}},
		{name: "LegacyMarkers", target: "m.txt", files: map[string]string{"m.txt": "a\n"},
			edit:  "<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n",
			after: map[string]string{"m.txt": "A\n"}},
		{name: "MixedOpenAndCloseMarkers", target: "m.txt", files: map[string]string{"m.txt": "a\n"}, dialect: c,
			edit:  "------- SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n",
			after: map[string]string{"m.txt": "A\n"}},
		{name: "ErrPaddedMarkers", target: "m.txt", files: map[string]string{"m.txt": "a\n"},
			edit: "------- SEARCH  \na\n=======\t\nA\n  +++++++ REPLACE\n",
			err:  edit.ErrSyntax, msg: []string{"line 1", "not a marker Cline takes"}},
		{name: "SearchMarkerWithAngle", target: "m.txt", files: map[string]string{"m.txt": "a\n"},
			edit:  "------- SEARCH>\na\n=======\nA\n+++++++ REPLACE\n",
			after: map[string]string{"m.txt": "A\n"}},
		{name: "DeleteWithEmptyReplace", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:  cline("  return items;\n}\n\nexport function remove(items, item) {\n", "}\n\nexport function remove(items, item) {\n"),
			after: map[string]string{"todo.js": strings.Replace(todo, "  return items;\n}\n\nexport", "}\n\nexport", 1)}},
		{name: "MoveCodeWithTwoBlocks", target: "o.js", files: map[string]string{"o.js": "one();\ntwo();\nthree();\n"},
			edit:  cline("one();\n", "") + cline("three();\n", "three();\none();\n"),
			after: map[string]string{"o.js": "two();\nthree();\none();\n"}},
		{name: "ResentIsAlreadyApplied", target: "todo.js", files: map[string]string{"todo.js": replaceAll(todo, "items.push(item);", "items.push({ ...item });")},
			edit:   cline("  items.push(item);\n", "  items.push({ ...item });\n"),
			status: []edit.Status{"already_applied"}, already: true},
		{name: "CRLFFile", target: "w.js", files: map[string]string{"w.js": "a();\r\nb();\r\n"},
			edit:  cline("b();\n", "b(1);\nc();\n"),
			after: map[string]string{"w.js": "a();\r\nb(1);\r\nc();\r\n"}},
		{name: "CRLFEdit", target: "w.js", files: map[string]string{"w.js": "a();\nb();\n"},
			edit:  "------- SEARCH\r\nb();\r\n=======\r\nB();\r\n+++++++ REPLACE\r\n",
			after: map[string]string{"w.js": "a();\nB();\n"}},
		{name: "NoFinalNewline", target: "n.js", files: map[string]string{"n.js": "a();\nb();"},
			edit:  cline("b();\n", "b(2);\n"),
			after: map[string]string{"n.js": "a();\nb(2);"}},
		{name: "ErrSearchNotInFile", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit:   cline("  items.unshift(item);\n", "  items.add(item);\n"),
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"closest lines", "items.push(item);"}},
		{name: "FirstMatchAfterCursorWins", target: "s.js", files: map[string]string{"s.js": twice},
			edit:  cline("step();\n", "step(1);\n"),
			after: map[string]string{"s.js": "log(1);\nstep(1);\nlog(1);\nstep();\n"}},
		{name: "ErrCutBeforeReplaceMarker", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit: "------- SEARCH\n  items.push(item);\n=======\n  items.push({ ...item });\n",
			err:  edit.ErrSyntax, msg: []string{"+++++++ REPLACE", "may be cut"}},
		{name: "ErrCutAfterSecondBlockStarts", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit: cline("  items.push(item);\n", "  items.push(item); // 1\n") + "------- SEARCH\n  return items;\n",
			err:  edit.ErrSyntax, msg: []string{"line 6", "may be cut"}},
		{name: "ErrStrayReplaceMarker", target: "todo.js", files: map[string]string{"todo.js": todo},
			edit: "  items.push(item);\n+++++++ REPLACE\n", err: edit.ErrSyntax, msg: []string{"outside a block"}},
		{name: "ErrNonEmptySearchOnMissingFile", target: "nope.js", files: map[string]string{},
			edit:   cline("a();\n", "b();\n"),
			status: []edit.Status{"conflict"}, err: edit.ErrConflict, msg: []string{"does not exist"}},
	})
}
