package protocol_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orion-agent/orion/protocol"
)

func TestSplitChunksCutsOnCharacterBoundaries(t *testing.T) {
	valid := strings.Repeat("aé日🚀", 500)
	for _, text := range []string{valid, valid + "\xff\xfe tail"} {
		for _, size := range []int{1, 2, 3, 4, 5, 7, 64, 1000} {
			var got strings.Builder
			err := protocol.SplitChunks(strings.NewReader(text), size, func(c []byte) error {
				if len(c) > max(size, utf8.UTFMax) {
					t.Fatalf("size %d: chunk of %d bytes", size, len(c))
				}
				if utf8.ValidString(text) && !utf8.Valid(c) {
					t.Fatalf("size %d: chunk %q cut inside a character", size, c)
				}
				got.Write(c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != text {
				t.Fatalf("size %d: chunks do not reassemble the input", size)
			}
		}
	}
}

func TestCharBoundary(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"abc", 3},
		{"ab\xe6\x97", 2},     // first two bytes of 日
		{"ab\xe6\x97\xa5", 5}, // all of 日
		{"\xf0\x9f\x9a", 0},   // three bytes of 🚀
		{"a\x80\x80\x80", 4},  // stray continuation bytes are not held
		{"", 0},
	}
	for _, tt := range tests {
		if got := protocol.CharBoundary([]byte(tt.in)); got != tt.want {
			t.Errorf("CharBoundary(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
