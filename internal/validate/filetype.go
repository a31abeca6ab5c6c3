package validate

import (
	"bytes"
	"path/filepath"
	"strings"
)

// FileType names how a file's content is checked. It is chosen from the
// target's name and, for files without a known extension, from a shebang.
type FileType string

// File types with a syntax check. TypeText is everything else: it gets the
// checks that need no parser (placeholders, end marker).
const (
	TypeJSON       FileType = "json"       // encoding/json
	TypeJSONC      FileType = "jsonc"      // JSON with comments and trailing commas (tsconfig.json, .jsonc)
	TypeJSONLines  FileType = "jsonl"      // one JSON value per line
	TypeYAML       FileType = "yaml"       // go.yaml.in/yaml/v3
	TypeTOML       FileType = "toml"       // github.com/pelletier/go-toml/v2
	TypeXML        FileType = "xml"        // encoding/xml, also SVG, plist, XSD...
	TypeGo         FileType = "go"         // go/parser
	TypeJavaScript FileType = "javascript" // esbuild, JS loader (JSX accepted as a fallback)
	TypeJSX        FileType = "jsx"        // esbuild, JSX loader
	TypeTypeScript FileType = "typescript" // esbuild, TS loader
	TypeTSX        FileType = "tsx"        // esbuild, TSX loader
	TypeCSS        FileType = "css"        // esbuild, CSS loader
	TypeShell      FileType = "shell"      // mvdan.cc/sh/v3/syntax
	TypeMarkdown   FileType = "markdown"   // code fences and prose endings, scanned here
	TypeText       FileType = "text"       // no syntax check
)

// Class groups file types by what a syntax error in them means, which is
// what the default policy depends on.
type Class string

// File type classes.
const (
	// ClassData is structured data (JSON, YAML, TOML, XML): a syntax error
	// makes the whole file unreadable for the program that loads it.
	ClassData Class = "data"
	// ClassCode is source code and style sheets.
	ClassCode Class = "code"
	// ClassProse is Markdown.
	ClassProse Class = "prose"
	// ClassText is anything without a syntax check.
	ClassText Class = "text"
)

// Class returns the class of t.
func (t FileType) Class() Class {
	switch t {
	case TypeJSON, TypeJSONC, TypeJSONLines, TypeYAML, TypeTOML, TypeXML:
		return ClassData
	case TypeGo, TypeJavaScript, TypeJSX, TypeTypeScript, TypeTSX, TypeCSS, TypeShell:
		return ClassCode
	case TypeMarkdown:
		return ClassProse
	default:
		return ClassText
	}
}

// extTypes maps lower-case extensions to file types.
var extTypes = map[string]FileType{
	".json":        TypeJSON,
	".geojson":     TypeJSON,
	".webmanifest": TypeJSON,
	".jsonc":       TypeJSONC,
	".jsonl":       TypeJSONLines,
	".ndjson":      TypeJSONLines,
	".yaml":        TypeYAML,
	".yml":         TypeYAML,
	".toml":        TypeTOML,
	".xml":         TypeXML,
	".svg":         TypeXML,
	".xsd":         TypeXML,
	".xsl":         TypeXML,
	".xslt":        TypeXML,
	".xhtml":       TypeXML,
	".plist":       TypeXML,
	".rss":         TypeXML,
	".atom":        TypeXML,
	".wsdl":        TypeXML,
	".csproj":      TypeXML,
	".props":       TypeXML,
	".targets":     TypeXML,
	".go":          TypeGo,
	".js":          TypeJavaScript,
	".mjs":         TypeJavaScript,
	".cjs":         TypeJavaScript,
	".jsx":         TypeJSX,
	".ts":          TypeTypeScript,
	".mts":         TypeTypeScript,
	".cts":         TypeTypeScript,
	".tsx":         TypeTSX,
	".css":         TypeCSS,
	".sh":          TypeShell,
	".bash":        TypeShell,
	".ksh":         TypeShell,
	".mksh":        TypeShell,
	".bats":        TypeShell,
	".md":          TypeMarkdown,
	".markdown":    TypeMarkdown,
	".mdx":         TypeMarkdown,
}

// jsoncNames are JSON files whose consumers accept comments and trailing
// commas, so a strict JSON parser would reject valid files.
var jsoncNames = map[string]bool{
	"tsconfig.json":     true,
	"jsconfig.json":     true,
	"devcontainer.json": true,
	".eslintrc.json":    true,
	"settings.json":     true, // VS Code
	"launch.json":       true, // VS Code
	"tasks.json":        true, // VS Code
	"extensions.json":   true, // VS Code
	"keybindings.json":  true, // VS Code
	"argv.json":         true, // VS Code
}

// Detect returns the file type of a target from its name, falling back to a
// shebang on the content's first line for names without a known extension.
func Detect(path string, content []byte) FileType {
	base := strings.ToLower(filepath.Base(path))
	ext := filepath.Ext(base)
	if ext == ".json" && (jsoncNames[base] || strings.HasPrefix(base, "tsconfig.") || strings.HasPrefix(base, "jsconfig.")) {
		return TypeJSONC
	}
	if t, ok := extTypes[ext]; ok {
		return t
	}
	return shebangType(content)
}

// shebangType reads "#!/bin/sh", "#!/usr/bin/env bash" and the like.
func shebangType(content []byte) FileType {
	content = bytes.TrimPrefix(content, bom)
	if !bytes.HasPrefix(content, []byte("#!")) {
		return TypeText
	}
	line := content[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return TypeText
	}
	interp := filepath.Base(fields[0])
	if interp == "env" {
		// Skip env's own options ("env -S node --flag").
		interp = ""
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				interp = filepath.Base(f)
				break
			}
		}
	}
	switch interp {
	case "sh", "bash", "dash", "ash", "ksh", "mksh", "bats":
		return TypeShell
	case "node", "nodejs", "deno", "bun":
		return TypeJavaScript
	}
	return TypeText
}
