package merge_test

import (
	"bytes"
	"testing"

	"github.com/orion-agent/orion/internal/merge"
)

// FuzzMerge3: any three inputs merge without a panic; a side equal to the
// base yields the other; a clean merge is the same whichever side is ours
// and keeps both sides' additions; a conflicted one returns no content.
func FuzzMerge3(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("A\nb\nc\n"), []byte("a\nb\nC\n"))
	f.Add([]byte("a\r\nb"), []byte("a\r\nB"), []byte("x\r\na\r\nb"))
	f.Add([]byte(""), []byte("new\n"), []byte("other\n"))
	f.Add([]byte("\x00bin"), []byte("\x00bin2"), []byte("\x00bin3"))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		if len(base)+len(ours)+len(theirs) > 1<<16 {
			return
		}
		if r := merge.Merge3(base, ours, base); !r.Clean || !bytes.Equal(r.Merged, ours) {
			t.Fatalf("theirs unchanged: %+v", r)
		}
		if r := merge.Merge3(base, base, theirs); !r.Clean || !bytes.Equal(r.Merged, theirs) {
			t.Fatalf("ours unchanged: %+v", r)
		}
		m, sym := merge.Merge3(base, ours, theirs), merge.Merge3(base, theirs, ours)
		if m.Clean != sym.Clean {
			t.Fatalf("clean %v one way, %v the other", m.Clean, sym.Clean)
		}
		if !m.Clean {
			if m.Merged != nil || len(m.Conflicts) == 0 {
				t.Fatalf("conflicted merge %+v", m)
			}
			return
		}
		if !bytes.Equal(m.Merged, sym.Merged) {
			t.Fatalf("merged %q one way, %q the other", m.Merged, sym.Merged)
		}
		for _, h := range m.OursHunks {
			if !bytes.Contains(m.Merged, h.New) {
				t.Fatalf("ours' hunk %q lost from %q", h.New, m.Merged)
			}
		}
	})
}
