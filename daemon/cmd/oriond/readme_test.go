package main

import (
	"os"
	"strings"
	"testing"
)

// The README's quick start runs the built binary, which stops on SIGTERM
// (client.TestGracefulStopOnSIGTERM), not `go run`, whose process passes
// no signal on; and it allows the directory it runs in, so that a clone
// outside the home directory works as written.
func TestREADMEQuickStart(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "## On a fresh machine")
	end := strings.Index(s, "## Configuration")
	if start < 0 || end < start {
		t.Fatal("no \"On a fresh machine\" section before \"Configuration\"")
	}
	quick := s[start:end]
	for _, want := range []string{`go build -o bin/ ./... && bin/oriond run --allow-root "$PWD"`} {
		if !strings.Contains(quick, "\n"+want) {
			t.Errorf("the quick start lacks the command %q", want)
		}
	}
	for _, line := range strings.Split(quick, "\n") {
		if strings.HasPrefix(line, "go run ./daemon/cmd/oriond") {
			t.Errorf("the quick start runs the daemon with go run, which SIGTERM does not stop: %q", line)
		}
	}
}
