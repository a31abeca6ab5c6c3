package validate_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
	}{
		{"Change", "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n"},
		{"NewFile", "", "package a\n"},
		{"NoFinalNewline", "x\ny\n", "x\ny"},
		{"CRLF", "x\r\ny\r\n", "x\ny\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validate.Diff("/src/app/main.go", []byte(tt.old), []byte(tt.new))
			golden := filepath.Join("testdata", "diff", tt.name+".diff")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("Diff =\n%s\nwant\n%s", got, want)
			}
		})
	}
	if d := validate.Diff("a", []byte("same\n"), []byte("same\n")); d != "" {
		t.Fatalf("Diff of equal contents = %q", d)
	}
}

// TestDiffIsMinimal: a review shows the lines that changed, not a region
// deleted and re-added around them. A 360-line file with every third
// line changed is 120 lines out and 120 in, as diff -u shows it.
func TestDiffIsMinimal(t *testing.T) {
	var old, new strings.Builder
	for i := range 360 {
		line := fmt.Sprintf("line %d of the file\n", i)
		old.WriteString(line)
		if i%3 == 0 {
			line = fmt.Sprintf("line %d changed\n", i)
		}
		new.WriteString(line)
	}
	d := validate.Diff("/src/f.txt", []byte(old.String()), []byte(new.String()))
	del, ins := 0, 0
	for _, l := range strings.Split(d, "\n")[2:] {
		switch {
		case strings.HasPrefix(l, "-"):
			del++
		case strings.HasPrefix(l, "+"):
			ins++
		}
	}
	if del != 120 || ins != 120 {
		t.Fatalf("dry-run diff removes %d and adds %d lines; want 120 and 120", del, ins)
	}
}
