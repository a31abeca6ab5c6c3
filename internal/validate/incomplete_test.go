package validate_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

// codes returns the codes of the new (not pre-existing) findings.
func codes(r validate.Report) []validate.Code {
	var cs []validate.Code
	for _, f := range r.Findings {
		if !f.Preexisting {
			cs = append(cs, f.Code)
		}
	}
	return cs
}

func TestIncompleteness(t *testing.T) {
	tests := []struct {
		name, path, content string
		want                validate.Code // "" for no finding
		line                int
	}{
		{"MarkdownEmptyHeading", "a.md", "# Title\n\nIntro text.\n\n## Install\n", validate.CodeEmptyHeading, 5},
		{"MarkdownSetextHeading", "a.md", "Intro text.\n\nUsage\n-----\n", validate.CodeEmptyHeading, 4},
		{"MarkdownOnlyHeadingsIsASkeleton", "a.md", "## Compiler\n\n## Linker\n", "", 0},
		{"MarkdownMidSentence", "a.md", "# T\n\nThe daemon journals every chunk before it acknowledges it, so that a crash never loses what the model has already\n", validate.CodeMidSentence, 3},
		{"MarkdownConnective", "a.md", "# T\n\nIt writes the file and\n", validate.CodeMidSentence, 3},
		{"MarkdownOpenLink", "a.md", "# T\n\nSee [the docs](https://example.com/do\n", validate.CodeMidSentence, 3},
		{"MarkdownOpenCodeSpan", "a.md", "# T\n\nRun `oriond --sock\n", validate.CodeMidSentence, 3},
		{"MarkdownTableRowCut", "a.md", "| a | b |\n|---|---|\n| 1 | 2\n", validate.CodeMidSentence, 3},
		{"MarkdownShortLastLineIsFine", "a.md", "# T\n\n## License\n\nMIT\n", "", 0},
		{"MarkdownListItemIsFine", "a.md", "# T\n\n- first item\n- second item\n", "", 0},
		{"MarkdownEndsWithURL", "a.md", "# T\n\nMore at https://example.com/some/page\n", "", 0},
		{"MarkdownIndentedCode", "a.md", "# T\n\nExample:\n\n    go run main.go sh\n", "", 0},
		{"MarkdownFenceInsideIsFine", "a.md", "# T\n\n```\n## not a heading\n```\n", "", 0},
		{"MarkdownFrontMatter", "a.md", "---\ntitle: x\n---\n\nText.\n", "", 0},
		{"GoConstWithoutValue", "a.go", "package a\n\nconst Max", validate.CodeTruncated, 3},
		{"GoDocCommentCut", "a.go", "package a\n\n// Max is the largest value that", validate.CodeMidSentence, 3},
		{"GoDirectiveAtEndIsFine", "a.go", "package a\n\n//go:generate stringer -type T\n", "", 0},
		{"GoDirectiveWithOpenParen", "a.go", "package a\n\n//sys\tLstat(pat", validate.CodeMidStatement, 3},
		{"GoDirectiveWithClosedParensIsFine", "a.go", "package a\n\n//sys\tLstat(path string) (err error)\n", "", 0},
		{"GoWordCut", "a.go", "package a\n\nimport \"fmt\"\n\nvar x = fmt.Sprint(1)\n\nvar y = fm", validate.CodeMidWord, 7},
		{"JSIdleStatement", "a.js", "const a = require('a')\nmodule.exp", validate.CodeMidStatement, 2},
		{"JSKeywordPrefix", "a.js", "const a = 1\nconst b = requ", validate.CodeMidWord, 2},
		{"JSMissingSemicolon", "a.js", "a();\nb();\nc();\nd();\nconst e = f;\nconst g = h", validate.CodeMidStatement, 6},
		{"JSSourceMapCut", "a.js", "a();\n//# sourceMappingURL=a.js.m", validate.CodeMidStatement, 2},
		{"JSSourceMapComplete", "a.js", "a();\n//# sourceMappingURL=a.js.map\n", "", 0},
		{"TSTripleSlashCut", "a.d.ts", "/// <reference path=\"a.d.ts\" />\n/// <reference path=\"b.d", validate.CodeMidStatement, 2},
		{"YAMLDanglingKey", "a.yaml", "name: ci\nsteps:\n", validate.CodeMidStatement, 2},
		{"YAMLScalarRoot", "a.yaml", "githu", validate.CodeMidStatement, 1},
		{"YAMLSeparatorCut", "a.yaml", "runs-on: ubuntu-", validate.CodeMidWord, 1},
		{"YAMLCommentedSettingAtEndIsFine", "a.yaml", "a: 1\n# b: 2\n", "", 0},
		{"YAMLProseCommentCut", "a.yaml", "a: 1\n# the next key sets the", validate.CodeMidSentence, 2},
		{"YAMLWordAfterOtherSeparatorIsFine", "a.yaml", "src: ./testdata/fake\ngroup: test\n", "", 0},
		{"YAMLDomainAtEndIsFine", "a.yaml", "commit_message: tidy\nemail: actions@github.com\n", "", 0},
		{"YAMLWordCutAfterSameSeparator", "a.yaml", "a:\n  runs-on: ubuntu-latest\nb:\n  runs-on: ubuntu-lat", validate.CodeMidWord, 4},
		{"YAMLBooleanCut", "a.yaml", "a: true\nb: fals", validate.CodeMidWord, 2},
		{"YAMLListItemCutInFirstKey", "a.yaml", "contents:\n  - src: a\n    dst: b\n  - s", validate.CodeMidStatement, 4},
		{"YAMLListOfMappingsIsFine", "a.yaml", "contents:\n  - src: a\n    dst: b\n  - src: c\n    dst: d\n", "", 0},
		{"YAMLListOfWordsIsFine", "a.yaml", "os:\n  - linux\n  - osx\n", "", 0},
		{"YAMLWordUnderKey", "a.yaml", "version: 2\nlinters:\n  defa", validate.CodeMidStatement, 3},
		{"YAMLWordUnderKeyInLastDocument", "a.yaml", "a:\n  b: 1\n---\nversion: 2\nlinters:\n  defa", validate.CodeMidStatement, 6},
		{"YAMLValuesUnderKeysAsStyleAreFine", "a.yaml", "unify:\n- _\nwant:\n  _\n---\nunify:\n- test\nwant:\n  test\n", "", 0},
		{"YAMLNestedKeyIsFine", "a.yaml", "version: 2\nlinters:\n  default: none\n", "", 0},
		{"YAMLItemCutAfterFirstKey", "a.yaml", "steps:\n  - name: a\n    run: x\n  - name: b\n    run: y\n  - name: c\n", validate.CodeMidStatement, 6},
		{"YAMLItemsAlikeAreFine", "a.yaml", "steps:\n  - name: a\n    run: x\n  - name: b\n    run: y\n  - name: c\n    run: z\n", "", 0},
		{"YAMLOptionalLastKeyIsFine", "a.yaml", "- name: a\n  text: x\n  event: e\n- name: b\n  text: y\n  event: f\n- name: c\n  text: z\n", "", 0},
		{"YAMLEmptyBlockScalar", "a.yaml", "steps:\n  - name: a\n    run: |\n", validate.CodeMidStatement, 3},
		{"YAMLBlockScalarIsFine", "a.yaml", "steps:\n  - name: a\n    run: |\n      make\n", "", 0},
		{"YAMLOpenExpression", "a.yaml", "with:\n  go-version: ${{ matrix.go", validate.CodeMidStatement, 2},
		{"YAMLClosedExpressionIsFine", "a.yaml", "with:\n  go-version: ${{ matrix.go }}\n", "", 0},
		{"YAMLOpenQuoteInPlainValue", "a.yaml", "run: echo \"done", validate.CodeMidStatement, 1},
		{"YAMLQuotesInPlainValueAreFine", "a.yaml", "run: echo \"done\" $(date)\n", "", 0},
		{"YAMLCommentCutOnConnective", "a.yaml", "a: 1\n# set this to the", validate.CodeMidSentence, 2},
		{"TOMLInlineCommentCutOnConnective", "a.toml", "x = 1  # used as a", validate.CodeMidSentence, 1},
		{"TOMLInlineCommentIsFine", "a.toml", "x = 1  # the default\n", "", 0},
		{"TOMLHashInStringIsFine", "a.toml", "x = \"a # the\"\n", "", 0},
		{"TOMLEmptyTableAtEnd", "a.toml", "[a]\nx = 1\n\n[tools]\n", validate.CodeMidStatement, 4},
		{"TOMLTableWithKeysIsFine", "a.toml", "[a]\nx = 1\n\n[tools]\ngo = \"1.22\"\n", "", 0},
		{"ShellDevNullCut", "a.sh", "echo hi > /dev/nul", validate.CodeMidWord, 1},
		{"ShellDevNullIsFine", "a.sh", "echo hi > /dev/null\n", "", 0},
		{"ShellOnlyShebang", "a.sh", "#!/bin/bash\n# Build the binary.\n", validate.CodeMidStatement, 2},
		{"ShellEndsWithFi", "a.sh", "if true; then\n  echo file\nfi\n", "", 0},
		{"ShellVimModeline", "a.sh", "echo shell\n# vim: set ft=sh\n", "", 0},
		{"TextHasNoChecks", "notes.txt", "and then the", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validate.Check(tt.path, []byte(tt.content), nil, false, marked)
			got := codes(r)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("findings %v, want none: %+v", got, r.Findings)
				}
				return
			}
			if len(got) == 0 || got[0] != tt.want || r.Findings[0].Line != tt.line {
				t.Fatalf("findings %+v, want %s at line %d", r.Findings, tt.want, tt.line)
			}
			if r.Findings[0].Message == "" || r.Findings[0].Category == "" {
				t.Fatalf("finding without message or category: %+v", r.Findings[0])
			}
		})
	}
}

func TestNoEndMarker(t *testing.T) {
	r := validate.Check("a.json", []byte("{}\n"), nil, false, validate.CheckOptions{})
	if got := codes(r); len(got) != 1 || got[0] != validate.CodeNoEndMarker {
		t.Fatalf("codes = %v, want [no_end_marker]", got)
	}
	if r.Truncated {
		t.Fatal("no_end_marker alone must not mark the content truncated")
	}
	if !strings.Contains(r.Findings[0].Message, "line 1") {
		t.Fatalf("message %q should say where the content ends", r.Findings[0].Message)
	}
}

func TestEmptyContentReplacingAFile(t *testing.T) {
	r := validate.Check("a.go", []byte("\n"), []byte("package a\n"), true, marked)
	if !r.Has(validate.CodeEmptyContent) {
		t.Fatalf("findings %+v, want empty_content", r.Findings)
	}
	if r := validate.Check("a.txt", nil, nil, false, marked); len(r.Findings) != 0 {
		t.Fatalf("an empty new file is fine, got %+v", r.Findings)
	}
}

// TestBeforeAfter checks that only problems the new content introduces
// count as new.
func TestBeforeAfter(t *testing.T) {
	brokenOrig := "{\n  \"a\": 1,\n  \"b\": 2 \"c\": 3\n}\n"
	tests := []struct {
		name, path, content, original string
		wantNew, wantOld              []validate.Code
	}{
		{"SameErrorMovedDown", "a.json", "{\n  \"z\": 0,\n  \"a\": 1,\n  \"b\": 2 \"c\": 3\n}\n", brokenOrig, nil, []validate.Code{validate.CodeSyntaxError}},
		{"NewErrorInFixedFile", "a.json", "{\n  \"a\": 1,,\n}\n", "{\n  \"a\": 1\n}\n", []validate.Code{validate.CodeSyntaxError}, nil},
		{"DifferentErrorIsNew", "a.json", "{\n  \"a\": 1,\n  \"b\": 2 \"d\": 4\n}\n", brokenOrig, []validate.Code{validate.CodeSyntaxError}, nil},
		{"TruncatedLikeOriginal", "a.go", "package a\n\n// x\nfunc f() {\n", "package a\n\nfunc f() {\n", nil, []validate.Code{validate.CodeTruncated}},
		{"UnclosedFenceInBoth", "a.md", "# New\n\n```\ncode\n", "# Old\n\n```\ncode\n", nil, []validate.Code{validate.CodeUnclosedFence}},
		{"EmptyHeadingInBoth", "a.md", "New text.\n\n## TODO\n", "Old text.\n\n## TODO\n", nil, []validate.Code{validate.CodeEmptyHeading}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validate.Check(tt.path, []byte(tt.content), []byte(tt.original), true, marked)
			var gotNew, gotOld []validate.Code
			for _, f := range r.Findings {
				if f.Preexisting {
					gotOld = append(gotOld, f.Code)
					if f.Severity != validate.SeverityInfo {
						t.Fatalf("pre-existing finding with severity %s", f.Severity)
					}
				} else {
					gotNew = append(gotNew, f.Code)
				}
			}
			if !sameCodes(gotNew, tt.wantNew) || !sameCodes(gotOld, tt.wantOld) {
				t.Fatalf("new %v old %v, want new %v old %v", gotNew, gotOld, tt.wantNew, tt.wantOld)
			}
			if d := validate.Decide(r, validate.Policies{All: validate.PolicyStrict}); d.Blocked != (len(tt.wantNew) > 0) {
				t.Fatalf("Decide blocked = %v with new findings %v", d.Blocked, gotNew)
			}
		})
	}
}

func sameCodes(a, b []validate.Code) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckSurvivesAnyInput(t *testing.T) {
	inputs := []string{"", "\x00\xff", "{", "<", "```", "#", "---\n", "\"", "`", "/*", "<!--", "a: [", "[[", "\xEF\xBB\xBF{}"}
	for _, typ := range []string{"a.json", "tsconfig.json", "a.jsonl", "a.yaml", "a.toml", "a.xml", "a.go", "a.js", "a.jsx", "a.ts", "a.tsx", "a.css", "a.sh", "a.md", "a.txt"} {
		for _, in := range inputs {
			_ = validate.Check(typ, []byte(in), []byte(in), true, validate.CheckOptions{})
		}
	}
}
