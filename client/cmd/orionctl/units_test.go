package main

import (
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

func TestMatchPrefix(t *testing.T) {
	ids := []string{
		"1b4e28ba-2fa1-11d2-883f-0016d3cca427",
		"1b4e28ba-9999-11d2-883f-0016d3cca427",
		"7a567b37-ef04-4b64-aa0a-6438569d1b68",
	}
	tests := []struct {
		name, prefix, want, err string
	}{
		{"Unique", "7a567b37", ids[2], ""},
		{"UniqueLonger", "1b4e28ba-2f", ids[0], ""},
		{"Full", ids[1], ids[1], ""},
		{"TooShortPassedOn", "7a56", "7a56", ""},
		{"UnknownPassedOn", "deadbeef", "deadbeef", ""},
		{"Ambiguous", "1b4e28ba", "", `session prefix "1b4e28ba" is ambiguous: it matches ` +
			"1b4e28ba-2fa1-11d2-883f-0016d3cca427, 1b4e28ba-9999-11d2-883f-0016d3cca427; give more characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := matchPrefix("session", tt.prefix, ids)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		total int64
		sent  int64
		after time.Duration
		want  string
	}{
		// The first frames come before a rate means anything.
		{"PipeFirstFrame", -1, 65536, time.Millisecond, "writing: 64.0 KiB sent"},
		{"PipeAfterASecond", -1, 3 << 20, 2 * time.Second, "writing: 3.0 MiB sent, 1.5 MiB/s"},
		{"FileFirstFrame", 8 << 20, 1 << 20, time.Millisecond, "writing: 1.0 MiB of 8.0 MiB (12%) sent"},
		{"FileAfterASecond", 8 << 20, 4 << 20, time.Second, "writing: 4.0 MiB of 8.0 MiB (50%) sent, 4.0 MiB/s"},
		{"Bytes", -1, 12, time.Second, "writing: 12 B sent, 12 B/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProgressLine(&strings.Builder{}, tt.total, func() time.Time { return start })
			if got := p.line(tt.sent, start.Add(tt.after)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProgressRedrawsAndClears(t *testing.T) {
	var b strings.Builder
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgressLine(&b, -1, func() time.Time { return now })
	p.Set(2048)
	p.Set(4096) // within progressEvery: not drawn
	now = now.Add(time.Second)
	p.Set(1 << 20)
	p.Finish()
	want := "\rwriting: 2.0 KiB sent" + "\rwriting: 1.0 MiB sent, 1.0 MiB/s" + "\r" + strings.Repeat(" ", 32) + "\r"
	if got := b.String(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestAlreadyApplied(t *testing.T) {
	block := func(s string) protocol.EditBlock { return protocol.EditBlock{Status: s} }
	tests := []struct {
		name string
		edit *protocol.EditResult
		want bool
	}{
		{"NoEdit", nil, false},
		{"AllApplied", &protocol.EditResult{Blocks: []protocol.EditBlock{block("already_applied"), block("already_applied")}}, true},
		{"SomeNew", &protocol.EditResult{Changed: true, Blocks: []protocol.EditBlock{block("already_applied"), block("applied")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := alreadyApplied(protocol.FinalizeResult{Edit: tt.edit}); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestStartCommand(t *testing.T) {
	t.Setenv("ORION_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if got, want := client.StartCommand("/run/user/1000/orion/oriond.sock"), "oriond run"; got != want {
		t.Errorf("default socket: %q, want %q", got, want)
	}
	if got, want := client.StartCommand("/tmp/my dir/o.sock"), "oriond run --socket '/tmp/my dir/o.sock'"; got != want {
		t.Errorf("custom socket: %q, want %q", got, want)
	}
	// A socket the client found in $ORION_SOCKET is not the daemon's default:
	// a daemon started elsewhere may not see the variable.
	t.Setenv("ORION_SOCKET", "/tmp/o.sock")
	if got, want := client.StartCommand("/tmp/o.sock"), "oriond run --socket /tmp/o.sock"; got != want {
		t.Errorf("env socket: %q, want %q", got, want)
	}
}

func TestToolsPrintsReadableJSON(t *testing.T) {
	code, out, _ := orionctl(t, "/nonexistent.sock", "", "tools")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u003e`) || strings.Contains(out, `\u0026`) {
		t.Fatalf("tools output escapes <, > or &:\n%s", out)
	}
}
