package jsonstr_test

import (
	"fmt"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orion-agent/orion/internal/jsonstr"
)

// text is 1 MiB of source-like lines, as orionbench writes.
func text() string {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "line %09d: the \"quick\" brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:1<<20]
}

func BenchmarkUnquote(b *testing.B) {
	q, _ := jsontext.AppendQuote(nil, text())
	b.Run("jsonstr", func(b *testing.B) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			if _, _, ok := jsonstr.Unquote(make([]byte, 0, len(q)), q); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("jsonstr-reused", func(b *testing.B) {
		// The loop alone: a streamer reuses its buffer for every chunk.
		b.SetBytes(int64(len(q)))
		buf := make([]byte, 0, len(q))
		for b.Loop() {
			if _, _, ok := jsonstr.Unquote(buf, q); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("jsonv2", func(b *testing.B) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			var s string
			if err := jsonv2.Unmarshal(q, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkQuote(b *testing.B) {
	t := []byte(text())
	b.Run("jsonstr", func(b *testing.B) {
		b.SetBytes(int64(len(t)))
		for b.Loop() {
			jsonstr.Quote(make([]byte, 0, len(t)+len(t)/8), t)
		}
	})
	b.Run("jsonstr-reused", func(b *testing.B) {
		b.SetBytes(int64(len(t)))
		buf := make([]byte, 0, len(t)+len(t)/8)
		for b.Loop() {
			buf = jsonstr.Quote(buf[:0], t)
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(t)))
		for b.Loop() {
			jsontext.AppendQuote(make([]byte, 0, len(t)+len(t)/8), t)
		}
	})
}

func BenchmarkSkip(b *testing.B) {
	q, _ := jsontext.AppendQuote(nil, text())
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		if n, ok := jsonstr.Skip(q); !ok || n != len(q) {
			b.Fatal("refused")
		}
	}
}

// BenchmarkScanUnescape is the daemon's reading of a chunk: the frame
// reader's checking pass (Scan), then the text written over its JSON
// (Unescape), against Skip then Unquote, what it did before.
func BenchmarkScanUnescape(b *testing.B) {
	q, _ := jsontext.AppendQuote(nil, text())
	buf := make([]byte, len(q))
	b.Run("scan+unescape", func(b *testing.B) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			copy(buf, q)
			n, s, ok := jsonstr.Scan(buf)
			if !ok || n != len(q) || !s.Valid {
				b.Fatal("refused")
			}
			jsonstr.Unescape(buf[:0], buf)
		}
	})
	b.Run("skip+skip+unquote", func(b *testing.B) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			copy(buf, q)
			jsonstr.Skip(buf)
			jsonstr.Skip(buf)
			if _, _, ok := jsonstr.Unquote(buf[:0], buf); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			copy(buf, q)
		}
	})
}
