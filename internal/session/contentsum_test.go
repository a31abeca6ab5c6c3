package session

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// The running sum of a session's content is the SHA-256 of exactly the
// bytes a finalize writes (everything before the marker line, nothing
// after it), however the stream was cut into chunks; where it cannot
// tell, it says so ("") and the finalize hashes as before.
func TestContentSum(t *testing.T) {
	const marker = "<<END-1f2e>>"
	long := strings.Repeat("x", 3000) + "\n"
	for _, tc := range []struct {
		name, stream string
		// unknown: the sum gives up where a chunk ends inside the line
		// of blanks (the finalize then hashes the file).
		unknown bool
	}{
		{name: "Lines", stream: "a\nbb\nccc\n" + long + long},
		{name: "NoFinalNewline", stream: "a\nbb\nlast line"},
		{name: "Empty", stream: ""},
		{name: "Marker", stream: "a\nbb\n" + marker + "\n"},
		{name: "MarkerThenText", stream: long + "a\n  \t" + marker + " \r\ntext after\nmore\n"},
		{name: "MarkerUnterminated", stream: "a\nbb\n" + marker},
		{name: "MarkerPrefixAtEnd", stream: "a\nbb\n  " + marker[:5]},
		{name: "MarkerInsideLine", stream: "a " + marker + "\nb\n"},
		{name: "MarkerLookAlike", stream: marker + "x\n" + marker[:4] + "\n"},
		{name: "OnlyBlanks", stream: "a\n" + strings.Repeat(" ", 100)},
		{name: "BlanksOverHeld", stream: "a\n" + strings.Repeat(" ", maxHeld+10) + "b\n", unknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, uint64(len(tc.stream))))
			gaveUp := false
			for cut := range 50 {
				s := NewScanner(marker)
				// Started here: sumChunk starts one only with a large
				// first chunk.
				sum := newContentSum()
				ok := true
				rest := tc.stream
				for first := true; first || len(rest) > 0; first = false {
					n := len(rest)
					if cut > 0 && n > 0 {
						n = 1 + rnd.IntN(min(n, 1+cut*97))
					}
					chunk := []byte(rest[:n])
					rest = rest[n:]
					r := &record{Scanner: s, sum: sum}
					after := s
					after.Feed(chunk)
					got := r.sumChunk(chunk, after, nil, false).wait()
					if got == nil {
						ok = false
					}
					s, sum = after, got
					if !ok {
						sum = nil
					}
				}
				n := s.ContentLen()
				want := sha256.Sum256([]byte(tc.stream[:n]))
				got := sum.sum(n, s.Total)
				switch {
				case got == "" && !tc.unknown:
					t.Fatalf("cut %d: no sum of the first %d bytes", cut, n)
				case got == "":
					gaveUp = true
				case got != hex.EncodeToString(want[:]):
					t.Fatalf("cut %d: sum of the first %d bytes = %s, want %x", cut, n, got, want)
				}
			}
			if tc.unknown && !gaveUp {
				t.Errorf("the sum never gave up, holding more than %d bytes", maxHeld)
			}
		})
	}
}

// A chunk that is not the next of the stream the sum saw (something else
// fed the scanner) ends the sum, and a sum that did not see the whole
// stream gives nothing.
func TestContentSumGaps(t *testing.T) {
	s := NewScanner("END")
	c := newContentSum()
	s.Feed([]byte("a\n"))
	if !c.add(0, []byte("a\n"), &s) {
		t.Fatal("the first chunk was refused")
	}
	s.Feed([]byte("b\n"))
	if c.add(4, []byte("c\n"), &s) {
		t.Error("a chunk past a gap was taken")
	}
	c = newContentSum()
	s = NewScanner("END")
	s.Feed([]byte("a\n"))
	c.add(0, []byte("a\n"), &s)
	s.Feed([]byte("b\n")) // fed around the sum
	if got := c.sum(2, s.Total); got != "" {
		t.Errorf("sum over a stream it did not see whole = %q", got)
	}
}

// A session that starts with a small chunk (a model's stream, or a
// client's of 64 KiB) keeps no running sum: its appends do not hash what
// its finalize hashes anyway. One that starts as a file streamed whole
// does.
func TestContentSumStartsWithLargeChunk(t *testing.T) {
	for _, tc := range []struct {
		size int
		want bool
	}{{64 << 10, false}, {streamFirstChunk - 1, false}, {streamFirstChunk, true}} {
		chunk := []byte(strings.Repeat("x", tc.size))
		r := &record{Scanner: NewScanner("END")}
		after := r.Scanner
		after.Feed(chunk)
		if got := r.sumChunk(chunk, after, nil, false).wait() != nil; got != tc.want {
			t.Errorf("first chunk of %d bytes: running sum %v, want %v", tc.size, got, tc.want)
		}
	}
}
