package validate

// problem is what a syntax checker reports: where the parser stopped and
// what it said.
type problem struct {
	// off is a byte offset into the checked text, or -1 when the parser
	// gives a line (and maybe a byte column) only.
	off       int
	line, col int // used when off < 0; col is a 1-based byte column, 0 if unknown
	// msg is the parser's message, without a position.
	msg string
	// eof is set when the parser ran out of input inside an open construct:
	// the sign of a cut, as opposed to a wrong token in the middle.
	eof bool
}

// syntaxChecker checks the syntax of one file type. check gets the content
// without a BOM and returns nil when the parser accepts it; it reports at
// most a few problems, first one first.
type syntaxChecker struct {
	name  string
	check func(src []byte, path string) []problem
}

// checkers maps each file type with a syntax check to its checker.
var checkers = map[FileType]syntaxChecker{
	TypeJSON:       {"encoding/json", func(src []byte, _ string) []problem { return checkJSON(src) }},
	TypeJSONC:      {"encoding/json (comments and trailing commas allowed)", func(src []byte, _ string) []problem { return checkJSONC(src) }},
	TypeJSONLines:  {"encoding/json (one value per line)", func(src []byte, _ string) []problem { return checkJSONLines(src) }},
	TypeYAML:       {"go.yaml.in/yaml/v3", func(src []byte, _ string) []problem { return checkYAML(src) }},
	TypeTOML:       {"github.com/pelletier/go-toml/v2", func(src []byte, _ string) []problem { return checkTOML(src) }},
	TypeXML:        {"encoding/xml", func(src []byte, _ string) []problem { return checkXML(src) }},
	TypeGo:         {"go/parser", checkGo},
	TypeJavaScript: {"esbuild (js, jsx)", checkESBuild(TypeJavaScript)},
	TypeJSX:        {"esbuild (jsx)", checkESBuild(TypeJSX)},
	TypeTypeScript: {"esbuild (ts)", checkESBuild(TypeTypeScript)},
	TypeTSX:        {"esbuild (tsx)", checkESBuild(TypeTSX)},
	TypeCSS:        {"esbuild (css)", checkESBuild(TypeCSS)},
	TypeShell:      {"mvdan.cc/sh/v3/syntax", checkShell},
}

// maxProblems bounds what a checker reports: the first error is the one
// that matters, later ones are often consequences of it.
const maxProblems = 3
