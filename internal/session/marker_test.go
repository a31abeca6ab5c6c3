package session

import (
	"strings"
	"testing"
)

const testMarker = "__END_WRITE_1a2b3c4d__"

func feedAll(chunks ...string) Scanner {
	s := NewScanner(testMarker)
	for _, c := range chunks {
		s.Feed([]byte(c))
	}
	return s
}

func TestScanner(t *testing.T) {
	tests := []struct {
		name     string
		chunks   []string
		seen     bool
		content  string
		lines    int64
		trailing int64
	}{
		{"NoMarker", []string{"a\nb\n"}, false, "a\nb\n", 2, 0},
		{"NoMarkerNoFinalNewline", []string{"a\nb"}, false, "a\nb", 2, 0},
		{"Empty", nil, false, "", 0, 0},
		{"MarkerOnly", []string{testMarker + "\n"}, true, "", 0, 0},
		{"MarkerAtEndNoNewline", []string{"x\n" + testMarker}, true, "x\n", 1, 0},
		{"MarkerWithCRLF", []string{"x\r\n" + testMarker + "\r\n"}, true, "x\r\n", 1, 0},
		{"MarkerIndentedAndTrailingBlanks", []string{"x\n  \t" + testMarker + " \t\n"}, true, "x\n", 1, 0},
		{"TrailingTextReported", []string{"x\n" + testMarker + "\nthanks!\n"}, true, "x\n", 1, 8},
		{"TrailingInLaterChunk", []string{"x\n" + testMarker + "\n", "more"}, true, "x\n", 1, 4},
		{"MarkerInsideLineIsContent", []string{"echo " + testMarker + "\n"}, false, "echo " + testMarker + "\n", 1, 0},
		{"MarkerFollowedByTextIsContent", []string{testMarker + "x\n"}, false, testMarker + "x\n", 1, 0},
		{"LookAlikeIsContent", []string{"__END_WRITE_1a2b3c4e__\n"}, false, "__END_WRITE_1a2b3c4e__\n", 1, 0},
		{"PrefixOfMarkerIsContent", []string{"__END_WRITE_\n"}, false, "__END_WRITE_\n", 1, 0},
		{"DONEIsContent", []string{"DONE\nmore\nDONE\n"}, false, "DONE\nmore\nDONE\n", 3, 0},
		{"ProvisionalMarkerRevoked", []string{"x\n" + testMarker, "tail\n"}, false, "x\n" + testMarker + "tail\n", 2, 0},
		{"MarkerSplitAcrossManyChunks", strings.SplitAfter("x\n"+testMarker+"\n", ""), true, "x\n", 1, 0},
		{"SecondMarkerIsTrailing", []string{"x\n" + testMarker + "\n" + testMarker + "\n"}, true, "x\n", 1, int64(len(testMarker) + 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := feedAll(tt.chunks...)
			all := strings.Join(tt.chunks, "")
			if got, want := s.MarkerSeen(), tt.seen; got != want {
				t.Fatalf("MarkerSeen() = %v, want %v", got, want)
			}
			if got, want := all[:s.ContentLen()], tt.content; got != want {
				t.Fatalf("content = %q, want %q", got, want)
			}
			if got, want := s.Lines(), tt.lines; got != want {
				t.Fatalf("Lines() = %d, want %d", got, want)
			}
			if got, want := s.TrailingLen(), tt.trailing; got != want {
				t.Fatalf("TrailingLen() = %d, want %d", got, want)
			}
		})
	}
}

// TestScannerMarkerSplitAtEveryByte splits the stream in two at every byte
// position, including inside the marker and its newline.
func TestScannerMarkerSplitAtEveryByte(t *testing.T) {
	for _, tail := range []string{"\n", "", "\r\n", "\nafter\n"} {
		stream := "line one\nline two\n" + testMarker + tail
		for i := 0; i <= len(stream); i++ {
			s := feedAll(stream[:i], stream[i:])
			if !s.MarkerSeen() {
				t.Fatalf("tail %q split at %d: marker not seen", tail, i)
			}
			if got, want := stream[:s.ContentLen()], "line one\nline two\n"; got != want {
				t.Fatalf("tail %q split at %d: content %q, want %q", tail, i, got, want)
			}
		}
	}
}

func FuzzScannerMatchesWholeFeed(f *testing.F) {
	f.Add("a\n"+testMarker+"\nb", 3)
	f.Add(testMarker, 5)
	f.Fuzz(func(t *testing.T, stream string, cut int) {
		if cut < 0 || cut > len(stream) {
			cut = len(stream) / 2
		}
		whole := feedAll(stream)
		split := feedAll(stream[:cut], stream[cut:])
		if whole != split {
			t.Fatalf("feeding in two chunks differs from one chunk:\n%+v\n%+v", whole, split)
		}
		if whole.ContentLen() > int64(len(stream)) {
			t.Fatalf("content length %d beyond input %d", whole.ContentLen(), len(stream))
		}
	})
}

// FuzzScannerMatchesByteLoop checks Feed, which skips ahead within lines that
// cannot be the marker, against the plain byte-by-byte state machine it
// replaced.
func FuzzScannerMatchesByteLoop(f *testing.F) {
	f.Add("a\n"+testMarker+"\nb", 3)
	f.Add("  "+testMarker+" \r\nafter", 0)
	f.Add("x"+testMarker+"\n"+testMarker, 7)
	f.Add("one\ntwo\n\n  three\n"+testMarker+" x\n four "+testMarker+"\n \t"+testMarker+" \r\nafter\n", 9)
	f.Add("a\nb\n"+testMarker[:5]+"\n"+testMarker[:9], 12)
	f.Fuzz(func(t *testing.T, stream string, cut int) {
		if cut < 0 || cut > len(stream) {
			cut = len(stream) / 2
		}
		got := feedAll(stream[:cut], stream[cut:])
		want := NewScanner(testMarker)
		byteLoopFeed(&want, []byte(stream[:cut]))
		byteLoopFeed(&want, []byte(stream[cut:]))
		if got != want {
			t.Fatalf("Feed differs from the byte loop:\n%+v\n%+v", got, want)
		}
	})
}

// BenchmarkScannerFeed feeds a MiB of text lines, as a chunk of a file
// streamed whole: the end marker's scan on every large append's path.
func BenchmarkScannerFeed(b *testing.B) {
	var text strings.Builder
	for i := 0; text.Len() < 1<<20; i++ {
		text.WriteString("line: the quick brown fox jumps over the lazy dog, ")
		text.WriteString(strings.Repeat("x", i%40))
		text.WriteString("\n")
	}
	chunk := []byte(text.String())
	s := NewScanner(EndMarker("00000000-0000-4000-8000-000000000001"))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		s.Feed(chunk)
	}
}

// byteLoopFeed is the scanner's reference: every byte through step.
func byteLoopFeed(s *Scanner, chunk []byte) {
	if s.Found {
		s.Total += int64(len(chunk))
		return
	}
	for i, b := range chunk {
		pos := s.Total + int64(i)
		if b == '\n' {
			if s.Match == len(s.Marker) {
				s.Found = true
				s.ContentEnd = s.LineStart
				s.TrailStart = pos + 1
				s.Total += int64(len(chunk))
				return
			}
			s.Newlines++
			s.LineStart = pos + 1
			s.Match = 0
			s.LinePending = false
			continue
		}
		s.LinePending = true
		s.Match = s.step(b)
	}
	s.Total += int64(len(chunk))
}
