package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

const generated = "../../../client/node/src/protocol.ts"

// The Node package's protocol file is the one generated from package
// protocol: a change to a type, a reason, a method or a prompt that was not
// followed by go generate ./protocol fails here.
func TestNodeProtocolIsGenerated(t *testing.T) {
	want, err := generate("../../../protocol")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is stale: run go generate ./protocol", generated)
	}
}

// Every method, reason, stage and prompt of package protocol reaches Node.
func TestNodeProtocolIsComplete(t *testing.T) {
	src, err := generate("../../../protocol")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	var want []string
	for _, m := range protocol.Methods {
		want = append(want, strconv.Quote(m)+": { params: ")
	}
	for _, r := range protocol.ErrorReasons {
		want = append(want, "reason: "+strconv.Quote(r.Reason))
	}
	for _, st := range protocol.Stages {
		want = append(want, strconv.Quote(string(st)))
	}
	for _, ty := range protocol.TraceTypes {
		want = append(want, strconv.Quote(string(ty)))
	}
	want = append(want, "advice: "+jsString(protocol.RefusalAdvice[protocol.ReasonProtected]),
		"resend: "+jsString(protocol.PromptResend), "export function fill(")
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("the generated file lacks %s", w)
		}
	}
}

func TestLowerCamel(t *testing.T) {
	for in, want := range map[string]string{
		"SessionBegin": "sessionBegin", "IO": "io", "InvalidUTF8": "invalidUTF8", "TxID": "txID",
		"UTF8Text": "utf8Text", "X": "x", "already": "already",
	} {
		if got := lowerCamel(in); got != want {
			t.Errorf("lowerCamel(%q) = %q, want %q", in, got, want)
		}
	}
}
