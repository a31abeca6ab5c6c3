package validate

// Code identifies a kind of finding. Codes are stable: clients and models
// may match on them.
type Code string

// Finding codes.
const (
	// CodeSyntaxError: the parser for the file's type rejected the content
	// somewhere before its end.
	CodeSyntaxError Code = "syntax_error"
	// CodeTruncated: the content ends inside an open bracket, string, block,
	// element or the like; the parser failed at the end of the input.
	CodeTruncated Code = "truncated"
	// CodeUnclosedFence: a Markdown code fence is opened and never closed.
	CodeUnclosedFence Code = "unclosed_fence"
	// CodeMidSentence: Markdown prose stops in the middle of a sentence or of
	// an inline construct (link, code span, parenthesis).
	CodeMidSentence Code = "mid_sentence"
	// CodeMidWord: the content ends with a word cut short, one that occurs
	// nowhere else in the content while a longer word starting with it does.
	CodeMidWord Code = "mid_word"
	// CodeMidStatement: code that parses ends in a way the rest of the file
	// never does: a last statement without the ';' every other statement
	// has, a YAML key with no value.
	CodeMidStatement Code = "mid_statement"
	// CodeEmptyHeading: the content ends with a heading that has nothing
	// under it.
	CodeEmptyHeading Code = "empty_heading"
	// CodeLazyPlaceholder: a line stands for code or text the model left out
	// ("// ... rest of code unchanged").
	CodeLazyPlaceholder Code = "lazy_placeholder"
	// CodeNoEndMarker: the stream ended without the session's end marker, so
	// nothing but the content itself says it is complete.
	CodeNoEndMarker Code = "no_end_marker"
	// CodeEmptyContent: the content is empty (or only whitespace) while the
	// file it replaces was not.
	CodeEmptyContent Code = "empty_content"
)

// Category groups codes for policy decisions: a [Policies] sets one
// [Policy] per category.
type Category string

// Categories, with their default policy in [DefaultPolicy].
const (
	// CategoryDataSyntax: syntax errors in JSON, YAML, TOML and XML.
	CategoryDataSyntax Category = "data_syntax"
	// CategoryCodeSyntax: syntax errors in code, style sheets and Markdown.
	CategoryCodeSyntax Category = "code_syntax"
	// CategoryTruncation: structural evidence that the content was cut off
	// (truncated, unclosed_fence).
	CategoryTruncation Category = "truncation"
	// CategoryTruncationHint: heuristic signs of a cut (mid_sentence,
	// mid_word, mid_statement, empty_heading, empty_content); they misfire on a few real files, so they
	// warn by default.
	CategoryTruncationHint Category = "truncation_hint"
	// CategoryPlaceholder: lazy placeholders that stand for omitted code.
	CategoryPlaceholder Category = "placeholder"
	// CategoryEndMarker: the end marker was not seen.
	CategoryEndMarker Category = "end_marker"
)

// Severity says how sure a finding is that the content is wrong. It is
// informative; whether a finding blocks a write is the policy's decision.
type Severity string

// Severities.
const (
	// SeverityError: the content is broken (the parser says so).
	SeverityError Severity = "error"
	// SeverityWarning: the content is probably incomplete or wrong.
	SeverityWarning Severity = "warning"
	// SeverityInfo: a problem the original file already had; reported, never
	// blocking.
	SeverityInfo Severity = "info"
)

// Finding is one problem found in the content.
type Finding struct {
	Code     Code     `json:"code"`
	Category Category `json:"category"`
	Severity Severity `json:"severity"`
	// Line and Column are 1-based; Column counts characters (runes), not
	// bytes. Both are 0 when the finding is about the whole content.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Message says what is wrong and what was expected, for a model to act
	// on.
	Message string `json:"message"`
	// Snippet is the offending line, shortened if long.
	Snippet string `json:"snippet,omitempty"`
	// Preexisting is set when the original file has the same problem: the
	// new content did not introduce it, so it never blocks a write.
	Preexisting bool `json:"preexisting,omitempty"`
}

// Report is the result of [Check].
type Report struct {
	// FileType is the type the content was checked as, and Checker the
	// parser that checked its syntax ("" when the type has none).
	FileType FileType `json:"file_type"`
	Checker  string   `json:"checker,omitempty"`
	// SyntaxOK is false when the parser rejected the content, whether or not
	// the original had the same error.
	SyntaxOK bool `json:"syntax_ok"`
	// Truncated is set when a new finding of category truncation says the
	// content was cut off; the daemon's continuation flow keys on it.
	Truncated bool `json:"truncated"`
	// Findings lists everything found, new problems first, each group in
	// file order.
	Findings []Finding `json:"findings"`
}

// Has reports whether r has a finding with code c that the new content
// introduced.
func (r Report) Has(c Code) bool {
	for _, f := range r.Findings {
		if f.Code == c && !f.Preexisting {
			return true
		}
	}
	return false
}
