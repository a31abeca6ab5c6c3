package validate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

// BenchmarkCheckGo checks a real Go file of the standard library the way a
// finalize does: the new content against the file it replaces.
func BenchmarkCheckGo(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip(err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "net", "http", "server.go"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		validate.Check("server.go", src, src, true, validate.CheckOptions{EndMarkerSeen: true})
	}
}

// BenchmarkCheckText checks a new 64 KiB text file of short lines, as a
// whole-file write of one does.
func BenchmarkCheckText(b *testing.B) {
	src := []byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 1024))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		validate.Check("notes.txt", src, nil, false, validate.CheckOptions{EndMarkerSeen: true})
	}
}
