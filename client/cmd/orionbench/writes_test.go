package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Scripts read the --write-rounds rows by name: the creates' names stay as
// they were, the added cases follow them.
func TestWriteCaseNames(t *testing.T) {
	var got []string
	for _, w := range writeCases {
		got = append(got, w.name())
	}
	want := []string{
		"session.write 1 KiB", "session.write 64 KiB",
		"session.write 1 KiB overwrite", "session.write 64 KiB overwrite",
		"streamed 64 KiB (begin, append, finalize)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("write-rounds cases = %q, want %q", got, want)
	}
}

// An overwrite round must replace files that exist on both sides, with
// content they do not already hold; a create round must find none.
func TestWriteCaseFilesExistBeforeEachRound(t *testing.T) {
	const n, rounds = 3, 3
	for _, w := range writeCases {
		t.Run(w.name(), func(t *testing.T) {
			oriond, hand := t.TempDir(), t.TempDir()
			content := w.contents()
			if content[0] == content[1] || len(content[0]) != w.size || len(content[1]) != w.size {
				t.Fatalf("contents are equal or not %d bytes", w.size)
			}
			if err := w.seed(n, content[1], oriond, hand); err != nil {
				t.Fatal(err)
			}
			for r := range rounds {
				for _, dir := range []string{oriond, hand} {
					for i := range n {
						path := filepath.Join(dir, w.file(r, i))
						old, err := os.ReadFile(path)
						if w.kind != writeOverwrite {
							if !os.IsNotExist(err) {
								t.Fatalf("round %d: %s exists before a create (err %v)", r, path, err)
							}
						} else if err != nil {
							t.Fatalf("round %d: %s, to overwrite: %v", r, path, err)
						} else if string(old) == content[r%2] {
							t.Fatalf("round %d: %s already holds what the round writes", r, path)
						}
						// The round's write, as the by-hand side does it.
						if err := durableWrite(dir, w.file(r, i), content[r%2]); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			// No temp file is left behind, and each side has the same files.
			for _, dir := range []string{oriond, hand} {
				ents, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				want := n * rounds
				if w.kind == writeOverwrite {
					want = n
				}
				if len(ents) != want {
					t.Fatalf("%d files in %s after %d rounds of %d, want %d", len(ents), dir, rounds, n, want)
				}
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), ".") {
						t.Fatalf("temp file %s left behind", e.Name())
					}
				}
			}
		})
	}
}

func TestReportWriteRow(t *testing.T) {
	r := sideBySide{Name: writeCase{writeOverwrite, 64 << 10}.name(), Unit: "files/s",
		OtherName: "temp + fsync + rename over the file + directory fsync, by hand",
		Oriond:    spreadOf([]float64{100, 80, 120}), Other: spreadOf([]float64{200, 190}),
		Ratio: spreadOf([]float64{0.5, 0.4, 0.6}), CPUms: spreadOf([]float64{0.3}), PeakRSSMiB: 21.04}
	var out bytes.Buffer
	reportSideBySide(&out, r)
	want := `session.write 64 KiB overwrite, medians [min-max] of interleaved rounds:
  oriond: 100.00 [80.00-120.00] files/s, daemon CPU 0.30 [0.30-0.30] ms per op, daemon peak RSS 21.0 MiB
  temp + fsync + rename over the file + directory fsync, by hand: 195.00 [190.00-200.00] files/s
  ratio oriond / other: 0.50 [0.40-0.60]x
`
	if out.String() != want {
		t.Fatalf("row printed as\n%s\nwant\n%s", out.String(), want)
	}
}
