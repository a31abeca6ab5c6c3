package main

import (
	"os"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// Every reason package protocol declares is in protocol.ErrorReasons, once
// per code it goes with: unsupported_encoding is a validation failure for a
// new file's charset and an edit failure for an existing file's encoding,
// and the table documents each.
func TestEveryReasonIsDocumented(t *testing.T) {
	missing, err := undocumented("../../../protocol", protocol.ErrorReasons)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatal(missingError(missing))
	}
	type codeReason struct {
		code   int
		reason string
	}
	seen := map[codeReason]bool{}
	for _, d := range protocol.ErrorReasons {
		k := codeReason{int(d.Code), d.Reason}
		if seen[k] {
			t.Errorf("%s (code %d) is in protocol.ErrorReasons twice", d.Reason, d.Code)
		}
		seen[k] = true
		if d.Code == 0 || d.Doc == "" {
			t.Errorf("%s has no code or no doc", d.Reason)
		}
	}
}

// The protocol reference's table is the one generated from
// protocol.ErrorReasons.
func TestProtocolDocErrorTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := rewrite(doc, table(protocol.ErrorReasons))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Fatal("the error table of docs/protocol.md differs from protocol.ErrorReasons: run go generate ./protocol")
	}
}

func TestUndocumentedReasonIsNamed(t *testing.T) {
	dir := t.TempDir()
	src := "package protocol\n\nconst (\n\tReasonKnown = \"known\"\n\t// ReasonNew is new.\n\tReasonNew = \"new_reason\"\n\tCodeX = -32099\n)\n"
	if err := os.WriteFile(dir+"/errors.go", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	missing, err := undocumented(dir, []protocol.ReasonDoc{{Code: -32000, Reason: "known", Doc: "d"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(missing, ","), `ReasonNew ("new_reason")`; got != want {
		t.Fatalf("missing %q, want %q", got, want)
	}
}

func TestRewriteNeedsMarkers(t *testing.T) {
	if _, err := rewrite([]byte("# no table\n"), "x"); err == nil {
		t.Fatal("rewrite without markers succeeded")
	}
	in := "a\n" + beginMarker + "\nold\n" + endMarker + "\nb\n"
	got, err := rewrite([]byte(in), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + beginMarker + "\nnew\n" + endMarker + "\nb\n"; string(got) != want {
		t.Fatalf("got %q", got)
	}
}

// The protocol reference's method table is the one generated from
// protocol.MethodSpecs, which the daemon's method table serves exactly.
func TestDocMethodTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := rewriteBetween(doc, methodsBegin, methodsEnd, methodTable(protocol.MethodSpecs))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Fatal("the method table of docs/protocol.md differs from protocol.MethodSpecs: run go generate ./protocol")
	}
	for _, m := range protocol.MethodSpecs {
		if m.Doc == "" || !strings.Contains(m.Doc, "→") {
			t.Errorf("%s: its Doc must say its params → its result, got %q", m.Name, m.Doc)
		}
	}
}
