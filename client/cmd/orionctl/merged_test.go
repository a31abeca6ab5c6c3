package main

import (
	"bytes"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// TestPrintMerged: a person reads which of their changes a merged write
// or undo kept, by line, and nothing when there was no merge.
func TestPrintMerged(t *testing.T) {
	var out bytes.Buffer
	printMerged(&out, "kept", false, nil)
	if out.Len() != 0 {
		t.Fatalf("no merge printed %q", out.String())
	}
	printMerged(&out, "kept", true, []protocol.MergeHunk{{StartLine: 3, EndLine: 3}, {StartLine: 7, EndLine: 6}, {StartLine: 9, EndLine: 12}})
	if got, want := out.String(), "kept 3 changes made meanwhile (line 3, before line 7, lines 9-12)\n"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
}
