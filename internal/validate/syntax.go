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
	// parse, where set, is check that also returns what it parsed (a Go
	// *ast.File, esbuild's output), so the end-of-content hints read it
	// instead of parsing the content a second time.
	parse func(src []byte, path string) ([]problem, parsed)
}

// parsed is what a checker's parser left for the hints: nil when it has
// nothing to share.
type parsed any

// checkers maps each file type with a syntax check to its checker.
var checkers = map[FileType]syntaxChecker{
	TypeJSON:       {name: "go-json-experiment/json/jsontext", check: func(src []byte, _ string) []problem { return checkJSON(src) }},
	TypeJSONC:      {name: "github.com/tailscale/hujson (comments and trailing commas allowed)", check: func(src []byte, _ string) []problem { return checkJSONC(src) }},
	TypeJSONLines:  {name: "go-json-experiment/json/jsontext (one value per line)", check: func(src []byte, _ string) []problem { return checkJSONLines(src) }},
	TypeYAML:       {name: "go.yaml.in/yaml/v3", check: func(src []byte, _ string) []problem { return checkYAML(src) }},
	TypeTOML:       {name: "github.com/pelletier/go-toml/v2", check: func(src []byte, _ string) []problem { return checkTOML(src) }},
	TypeXML:        {name: "encoding/xml", check: func(src []byte, _ string) []problem { return checkXML(src) }},
	TypeGo:         {name: "go/parser", parse: parseGo},
	TypeJavaScript: {name: "esbuild (js, jsx)", parse: parseESBuild(TypeJavaScript)},
	TypeJSX:        {name: "esbuild (jsx)", parse: parseESBuild(TypeJSX)},
	TypeTypeScript: {name: "esbuild (ts)", parse: parseESBuild(TypeTypeScript)},
	TypeTSX:        {name: "esbuild (tsx)", parse: parseESBuild(TypeTSX)},
	TypeCSS:        {name: "esbuild (css)", check: checkESBuild(TypeCSS)},
	TypeShell:      {name: "mvdan.cc/sh/v3/syntax", check: checkShell},
}

// maxProblems bounds what a checker reports: the first error is the one
// that matters, later ones are often consequences of it.
const maxProblems = 3
