package validate_test

import (
	"flag"
	"os"
	"path/filepath"
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
