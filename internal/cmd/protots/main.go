// Command protots writes the Node package's protocol file,
// client/node/src/protocol.ts, from package protocol: the methods with
// their params and result types, the notifications, every wire type, the
// stages and other enumerations, the error codes and reasons with what
// each means and the advice a model gets for it, and every prompt.
//
//	go generate ./protocol
//
// runs it (the go:generate line is in protocol/doc.go). It reads the
// package twice: type-checked from its source, for names, constant values
// and doc comments, and as imported, for the values of its tables
// (MethodSpecs, ErrorReasons, RefusalAdvice, the tool's schema). A test
// fails when the file on disk is not what it would write.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/orion-agent/orion/protocol"
)

func main() {
	dir := flag.String("protocol", ".", "the directory of package protocol")
	out := flag.String("out", "../client/node/src/protocol.ts", "the TypeScript file to write")
	flag.Parse()
	src, err := generate(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "protots:", err)
		os.Exit(1)
	}
	if old, err := os.ReadFile(*out); err == nil && bytes.Equal(old, src) {
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "protots:", err)
		os.Exit(1)
	}
}

// pkg is package protocol as the generator reads it.
type pkg struct {
	types *types.Package
	// docs holds the doc comment of each declared name: "Name" for a type,
	// constant or variable, "Type.Field" for a struct field.
	docs map[string]string
	// order is every package-level name in source order (files by name).
	order []string
	// enums are the named string types that have constants, with their
	// values in source order.
	enums map[string][]string
}

func load(dir string) (*pkg, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	tp, err := conf.Check("github.com/orion-agent/orion/protocol", fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("type-checking package protocol: %w", err)
	}
	p := &pkg{types: tp, docs: map[string]string{}, enums: map[string][]string{}}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					p.order = append(p.order, s.Name.Name)
					p.docs[s.Name.Name] = docText(s.Doc, gd.Doc, len(gd.Specs))
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							for _, n := range fld.Names {
								p.docs[s.Name.Name+"."+n.Name] = docText(fld.Doc, fld.Comment, 2)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.order = append(p.order, n.Name)
						p.docs[n.Name] = docText(s.Doc, s.Comment, 2)
						c, ok := tp.Scope().Lookup(n.Name).(*types.Const)
						if !ok {
							continue
						}
						if named, ok := c.Type().(*types.Named); ok && c.Exported() && c.Val().Kind() == constant.String {
							tn := named.Obj().Name()
							p.enums[tn] = append(p.enums[tn], constant.StringVal(c.Val()))
						}
					}
				}
			}
		}
	}
	return p, nil
}

// docText is a declaration's own doc comment, or its group's when it is
// alone in the group.
func docText(own, group *ast.CommentGroup, inGroup int) string {
	if own != nil {
		return strings.TrimSpace(own.Text())
	}
	if group != nil && inGroup == 1 {
		return strings.TrimSpace(group.Text())
	}
	return ""
}

// consts returns the exported constants whose name starts with prefix, in
// source order, as key (the name without prefix, in lowerCamel) and value.
func (p *pkg) consts(prefix string) [][2]string {
	var out [][2]string
	for _, name := range p.order {
		c, ok := p.types.Scope().Lookup(name).(*types.Const)
		if !ok || !c.Exported() || !strings.HasPrefix(name, prefix) || len(name) == len(prefix) {
			continue
		}
		var v string
		switch c.Val().Kind() {
		case constant.String:
			v = strconv.Quote(constant.StringVal(c.Val()))
		case constant.Int:
			v = c.Val().ExactString()
		default:
			continue
		}
		out = append(out, [2]string{lowerCamel(strings.TrimPrefix(name, prefix)), v})
	}
	return out
}

// lowerCamel lowers a Go name's leading capitals: SessionBegin ->
// sessionBegin, IO -> io, UTF8Text -> utf8Text, TxID -> txID.
func lowerCamel(s string) string {
	r := []rune(s)
	i := 0
	for i < len(r) && (unicode.IsUpper(r[i]) || unicode.IsDigit(r[i])) {
		i++
	}
	switch {
	case i == 0:
		return s
	case i == 1 || i == len(r):
		// One capital, or the whole name: lower all of it.
	case unicode.IsLower(r[i]):
		i-- // the last capital starts the next word
	}
	for j := 0; j < i; j++ {
		r[j] = unicode.ToLower(r[j])
	}
	return string(r)
}

// skipped are exported types of package protocol that are not on the
// wire, or that the Node package defines its own way.
var skipped = map[string]bool{
	"Method":     true, // generic; MethodTypes below types each method
	"MethodSpec": true,
	"ReasonDoc":  true, // ErrorReasons below
	"Error":      true, // OrionError in errors.ts; JavaScript's Error keeps its name
	"PatchSpec":  true, // written from the tool's patch_spec schema below
}

type writer struct {
	p   *pkg
	b   bytes.Buffer
	err error
}

func (w *writer) printf(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

func (w *writer) doc(text, indent string) {
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		w.printf("%s/** %s */\n", indent, strings.ReplaceAll(text, "*/", "* /"))
		return
	}
	w.printf("%s/**\n", indent)
	for _, l := range lines {
		l = strings.ReplaceAll(l, "*/", "* /")
		if l == "" {
			w.printf("%s *\n", indent)
		} else {
			w.printf("%s * %s\n", indent, l)
		}
	}
	w.printf("%s */\n", indent)
}

func generate(dir string) ([]byte, error) {
	p, err := load(dir)
	if err != nil {
		return nil, err
	}
	w := &writer{p: p}
	w.printf("// Code generated by internal/cmd/protots from package protocol (go generate ./protocol); DO NOT EDIT.\n")
	w.printf("//\n// The wire contract of oriond for Node: methods, params and results, stages,\n")
	w.printf("// error codes and reasons with their advice, and every text a model reads.\n\n")
	w.printf("/** The protocol version daemon.status reports. */\nexport const ProtocolVersion = %d;\n\n", protocol.Version)

	methods := p.consts("Method")
	sort.SliceStable(methods, func(i, j int) bool {
		return slices.Index(protocol.Methods, unquote(methods[i][1])) < slices.Index(protocol.Methods, unquote(methods[j][1]))
	})
	w.constObject("Methods", "Methods served by oriond, in the order daemon.status lists them.", methods)
	w.methodTypes()
	w.constObject("Notifications", "Notifications oriond sends.", p.consts("Notify"))
	w.printf("/** The one tool the model sees. */\nexport const ToolName = %q;\n\n", protocol.ToolName)
	w.enums()
	w.constObject("ErrorCodes", "JSON-RPC error codes: the standard ones, and the application's (in the implementation range).", p.consts("Code"))
	w.constObject("Reasons", "Stable reasons carried in an error's data.reason.", p.consts("Reason"))
	w.reasonDocs()
	w.patchSpec()
	w.interfaces()
	w.prompts()
	if w.err != nil {
		return nil, w.err
	}
	return w.b.Bytes(), nil
}

func unquote(s string) string {
	v, _ := strconv.Unquote(s)
	return v
}

func (w *writer) constObject(name, doc string, kv [][2]string) {
	w.doc(doc, "")
	w.printf("export const %s = {\n", name)
	for _, e := range kv {
		w.printf("  %s: %s,\n", e[0], e[1])
	}
	w.printf("} as const;\n\n")
}

// methodTypes types each method's params and result, from MethodSpecs.
func (w *writer) methodTypes() {
	w.doc("The params and result of each method, by name.", "")
	w.printf("export interface MethodTypes {\n")
	for _, m := range protocol.MethodSpecs {
		w.doc(m.Doc, "  ")
		w.printf("  %q: { params: %s; result: %s };\n", m.Name, m.Params.Name(), m.Result.Name())
		for _, t := range []string{m.Params.Name(), m.Result.Name()} {
			if w.p.types.Scope().Lookup(t) == nil {
				w.err = fmt.Errorf("method %s: type %s is not declared in package protocol", m.Name, t)
			}
		}
	}
	w.printf("}\n\n/** A method's name. */\nexport type Method = keyof MethodTypes;\n\n")
}

// enums writes each named string type with constants as a union, and the
// package's lists of them (Stages, Operations, ...) as arrays.
func (w *writer) enums() {
	for _, name := range w.p.order {
		vals, ok := w.p.enums[name]
		if !ok || skipped[name] {
			continue
		}
		w.doc(w.p.docs[name], "")
		quoted := make([]string, len(vals))
		for i, v := range vals {
			quoted[i] = strconv.Quote(v)
		}
		w.printf("export type %s = %s;\n\n", name, strings.Join(quoted, " | "))
	}
	for _, name := range w.p.order {
		v, ok := w.p.types.Scope().Lookup(name).(*types.Var)
		if !ok || !v.Exported() {
			continue
		}
		sl, ok := v.Type().(*types.Slice)
		if !ok {
			continue
		}
		elem, ok := sl.Elem().(*types.Named)
		if !ok {
			continue
		}
		if _, isEnum := w.p.enums[elem.Obj().Name()]; !isEnum {
			continue
		}
		vals, err := enumList(name)
		if err != nil {
			w.err = err
			return
		}
		w.doc(w.p.docs[name], "")
		quoted := make([]string, len(vals))
		for i, v := range vals {
			quoted[i] = strconv.Quote(v)
		}
		w.printf("export const %s: readonly %s[] = [%s];\n\n", name, elem.Obj().Name(), strings.Join(quoted, ", "))
	}
}

// enumList is the value of one of package protocol's lists of enum values.
// A list added there must be added here; the generator says so.
func enumList(name string) ([]string, error) {
	strs := func(n int, at func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	switch name {
	case "Operations":
		return strs(len(protocol.Operations), func(i int) string { return string(protocol.Operations[i]) }), nil
	case "WholeFileOperations":
		return strs(len(protocol.WholeFileOperations), func(i int) string { return string(protocol.WholeFileOperations[i]) }), nil
	case "Stages":
		return strs(len(protocol.Stages), func(i int) string { return string(protocol.Stages[i]) }), nil
	case "TxStages":
		return strs(len(protocol.TxStages), func(i int) string { return string(protocol.TxStages[i]) }), nil
	case "TraceTypes":
		return strs(len(protocol.TraceTypes), func(i int) string { return string(protocol.TraceTypes[i]) }), nil
	}
	return nil, fmt.Errorf("protocol.%s: a list of enum values protots does not know; add it to enumList", name)
}

func (w *writer) reasonDocs() {
	w.doc("ReasonDoc documents one reason: the code it travels with, what it means, and what a model should do about it (empty when it cannot fix it).", "")
	w.printf("export interface ReasonDoc {\n  code: number;\n  reason: string;\n  doc: string;\n  advice: string;\n}\n\n")
	w.doc(w.p.docs["ErrorReasons"], "")
	w.printf("export const ErrorReasons: readonly ReasonDoc[] = [\n")
	seen := map[string]bool{}
	for _, d := range protocol.ErrorReasons {
		seen[d.Reason] = true
		w.printf("  { code: %d, reason: %q, doc: %s, advice: %s },\n", d.Code, d.Reason, jsString(d.Doc), jsString(protocol.RefusalAdvice[d.Reason]))
	}
	w.printf("];\n\n")
	w.doc(w.p.docs["RefusalAdvice"], "")
	w.printf("export const RefusalAdvice: Readonly<Record<string, string>> = {\n")
	keys := make([]string, 0, len(protocol.RefusalAdvice))
	for k := range protocol.RefusalAdvice {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.printf("  %s: %s,\n", k, jsString(protocol.RefusalAdvice[k]))
	}
	w.printf("};\n\n")
}

// patchSpec writes PatchSpec from the tool's own JSON schema of
// patch_spec, the one the model is given.
func (w *writer) patchSpec() {
	params := protocol.WritePlanToolBegin().Function.Parameters
	schema := params["properties"].(map[string]any)["patch_spec"].(map[string]any)
	props := schema["properties"].(map[string]any)
	required := schema["required"].([]string)
	typ := props["type"].(map[string]any)
	enum := typ["enum"].([]string)
	quoted := make([]string, len(enum))
	for i, v := range enum {
		quoted[i] = strconv.Quote(v)
	}
	w.doc("The kinds of patch a patch_spec names.", "")
	w.printf("export type PatchType = %s;\n\n", strings.Join(quoted, " | "))
	w.doc(w.p.docs["PatchSpec"], "")
	w.printf("export interface PatchSpec {\n")
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	// "type" first, then the schema's other members by name.
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "type") != (names[j] == "type") {
			return names[i] == "type"
		}
		return names[i] < names[j]
	})
	for _, k := range names {
		prop := props[k].(map[string]any)
		if d, ok := prop["description"].(string); ok {
			w.doc(d, "  ")
		}
		opt := "?"
		if slices.Contains(required, k) {
			opt = ""
		}
		w.printf("  %s%s: %s;\n", k, opt, schemaType(k, prop))
	}
	w.printf("}\n\n")
}

func schemaType(name string, prop map[string]any) string {
	if name == "type" {
		return "PatchType"
	}
	if alts0, ok := prop["anyOf"].([]any); ok {
		var alts []string
		for _, a := range alts0 {
			alts = append(alts, schemaType("", a.(map[string]any)))
		}
		return strings.Join(alts, " | ")
	}
	switch prop["type"] {
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "string":
		if enum, ok := prop["enum"].([]string); ok {
			q := make([]string, len(enum))
			for i, v := range enum {
				q[i] = strconv.Quote(v)
			}
			return strings.Join(q, " | ")
		}
		return "string"
	}
	return "unknown"
}

// interfaces writes every exported struct type, in source order.
func (w *writer) interfaces() {
	for _, name := range w.p.order {
		tn, ok := w.p.types.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() || skipped[name] || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok || named.TypeParams().Len() > 0 {
			continue
		}
		st, ok := named.Underlying().(*types.Struct)
		if !ok {
			continue
		}
		w.doc(w.p.docs[name], "")
		if st.NumFields() == 0 {
			w.printf("export type %s = Record<string, never>;\n\n", name)
			continue
		}
		w.printf("export interface %s {\n", name)
		w.fields(name, st)
		w.printf("}\n\n")
	}
}

// fields writes st's fields as encoding/json marshals them: embedded
// structs without a name flattened, "-" skipped, omitempty optional.
func (w *writer) fields(owner string, st *types.Struct) {
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() {
			continue
		}
		tag := reflectTag(st.Tag(i))
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Embedded() && name == "" {
			if inner, ok := f.Type().Underlying().(*types.Struct); ok {
				embedded := f.Type().(*types.Named).Obj().Name()
				w.fields(embedded, inner)
				continue
			}
		}
		if name == "" {
			name = f.Name()
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		ts, nullable := w.tsType(f.Type())
		w.doc(w.p.docs[owner+"."+f.Name()], "  ")
		switch {
		case omit:
			w.printf("  %s?: %s;\n", name, ts)
		case nullable:
			w.printf("  %s: %s | null;\n", name, ts)
		default:
			w.printf("  %s: %s;\n", name, ts)
		}
	}
}

// reflectTag is the json key of a struct tag.
func reflectTag(tag string) string {
	for tag != "" {
		i := strings.IndexByte(tag, ':')
		if i < 0 {
			return ""
		}
		key := strings.TrimSpace(tag[:i])
		rest := tag[i+1:]
		v, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return ""
		}
		tag = rest[len(v):]
		if key == "json" {
			s, _ := strconv.Unquote(v)
			return s
		}
	}
	return ""
}

// tsType is the TypeScript type of a Go type as encoding/json writes it;
// nullable is true when it may be written as null.
func (w *writer) tsType(t types.Type) (ts string, nullable bool) {
	if a, ok := t.(*types.Alias); ok {
		if a.Obj().Pkg() == w.p.types && a.Obj().Name() == "PatchSpec" {
			return "PatchSpec", false
		}
		return w.tsType(types.Unalias(a))
	}
	switch t := t.(type) {
	case *types.Pointer:
		ts, _ := w.tsType(t.Elem())
		return ts, true
	case *types.Slice:
		if b, ok := t.Elem().(*types.Basic); ok && b.Kind() == types.Byte {
			return "string", false
		}
		// A nil slice or map is written as null; clients treat it as
		// empty, so it is typed as the empty value's type.
		ts, _ := w.tsType(t.Elem())
		if strings.Contains(ts, " ") {
			ts = "(" + ts + ")"
		}
		return ts + "[]", false
	case *types.Map:
		ts, _ := w.tsType(t.Elem())
		return "Record<string, " + ts + ">", false
	case *types.Interface:
		return "unknown", true
	case *types.Named:
		obj := t.Obj()
		switch {
		case obj.Pkg() != nil && obj.Pkg().Path() == "time" && obj.Name() == "Time":
			return "string", false
		case obj.Pkg() != nil && obj.Pkg().Path() == "time" && obj.Name() == "Duration":
			return "number", false
		case obj.Pkg() != nil && obj.Pkg().Path() == "encoding/json" && obj.Name() == "RawMessage":
			return "unknown", true
		case obj.Pkg() == w.p.types:
			if _, isEnum := w.p.enums[obj.Name()]; isEnum {
				return obj.Name(), false
			}
			if _, isStruct := t.Underlying().(*types.Struct); isStruct {
				return obj.Name(), false
			}
		}
		return w.tsType(t.Underlying())
	case *types.Basic:
		switch {
		case t.Info()&types.IsString != 0:
			return "string", false
		case t.Info()&types.IsBoolean != 0:
			return "boolean", false
		case t.Info()&types.IsNumeric != 0:
			return "number", false
		}
	}
	w.err = fmt.Errorf("no TypeScript type for Go type %s", t)
	return "unknown", false
}

// prompts writes every Prompt constant and fill, Fill's counterpart.
func (w *writer) prompts() {
	w.doc("Every text a model reads, as protocol/prompts.go holds it: templates whose {name} placeholders fill() fills.", "")
	w.printf("export const Prompts = {\n")
	for _, name := range w.p.order {
		c, ok := w.p.types.Scope().Lookup(name).(*types.Const)
		if !ok || !c.Exported() || !strings.HasPrefix(name, "Prompt") || c.Val().Kind() != constant.String {
			continue
		}
		w.doc(w.p.docs[name], "  ")
		w.printf("  %s: %s,\n", lowerCamel(strings.TrimPrefix(name, "Prompt")), jsString(constant.StringVal(c.Val())))
	}
	w.printf("} as const;\n\n")
	w.printf(`/**
 * fill returns template with each {name} replaced by values[name]. Placeholders
 * without a value stay as they are, and a value is never scanned for
 * placeholders itself (protocol.Fill).
 */
export function fill(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (m: string, k: string) => (Object.hasOwn(values, k) ? String(values[k]) : m));
}
`)
}

// jsString quotes s for TypeScript source: JSON's quoting, which is valid
// JavaScript (U+2028 and U+2029 included since ES2019).
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x2028 || r == 0x2029 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
