package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestDetectLogTarget(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st := fi.Sys().(*syscall.Stat_t)
	match := strings.Join([]string{itoa(uint64(st.Dev)), itoa(st.Ino)}, ":")
	tests := []struct {
		name     string
		env      map[string]string
		bySystem bool
		want     Target
	}{
		{"Interactive", nil, false, Target{}},
		{"Journal", map[string]string{"JOURNAL_STREAM": match, "INVOCATION_ID": "x"}, true, Target{Manager: "systemd", Journal: true}},
		{"InheritedJournalStream", map[string]string{"JOURNAL_STREAM": "1:2"}, false, Target{}},
		{"SystemdToAFile", map[string]string{"JOURNAL_STREAM": "1:2", "INVOCATION_ID": "x"}, true, Target{Manager: "systemd"}},
		{"ChildOfAService", map[string]string{"INVOCATION_ID": "x"}, false, Target{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := detectTargetWith(func(k string) string { return tt.env[k] }, f, func() bool { return tt.bySystem })
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestJournalLogs(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			h, err := NewHandler(&buf, format, slog.LevelDebug, Target{Manager: "systemd", Journal: true})
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(h).With("k", "v")
			log.Debug("d")
			log.Info("i", "multi", "line\nbreak")
			log.WithGroup("g").Warn("w", "time", "kept in a group")
			log.Error("e")
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("%d lines:\n%s", len(lines), buf.String())
			}
			for i, prefix := range []string{"<7>", "<6>", "<4>", "<3>"} {
				line, ok := strings.CutPrefix(lines[i], prefix)
				if !ok {
					t.Fatalf("line %d lacks %s: %q", i, prefix, lines[i])
				}
				if strings.HasPrefix(line, "time=") || strings.Contains(line, `"time":"2`) {
					t.Fatalf("line %d has a timestamp: %q", i, line)
				}
				if format == "json" && !json.Valid([]byte(line)) {
					t.Fatalf("line %d is not JSON after its prefix: %q", i, line)
				}
			}
		})
	}
	// Not under the journal: the usual handler, with time.
	var buf bytes.Buffer
	h, _ := NewHandler(&buf, "text", slog.LevelInfo, Target{})
	slog.New(h).Info("x")
	if !strings.HasPrefix(buf.String(), "time=") {
		t.Fatalf("interactive log line %q lacks its time", buf.String())
	}
	if _, err := NewHandler(&buf, "xml", slog.LevelInfo, Target{}); err == nil {
		t.Fatal("log format xml accepted")
	}
}
