package controller

import (
	"testing"

	"github.com/orion-agent/orion/protocol"
)

func TestSessionScan(t *testing.T) {
	const m = "__END_WRITE_0123456789ab__"
	tests := []struct {
		name   string
		pieces []string
		// want: the marker found, the content pending before the marker
		// line, and what remained unscanned after it.
		marker string
		before string
		rest   string
	}{
		{"MarkerLine", []string{"a\nb\n" + m + "\nafter"}, m, "a\nb\n", "after"},
		{"SplitAcrossPieces", []string{"a\n__END_", "WRITE_0123", "456789ab__", " \t\r", "\nafter"}, m, "a\n", "after"},
		{"LeadingBlanks", []string{"x\n \t" + m + "\n"}, m, "x\n", ""},
		{"QuotedInLine", []string{"say " + m + "\n", m + "x\n"}, "", "say " + m + "\n" + m + "x\n", ""},
		{"FirstLine", []string{m + "\nrest"}, m, "", "rest"},
		{"NoNewlineYet", []string{"a\n" + m}, "", "a\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(protocol.BeginResult{SessionID: "id", EndMarker: m}, "f")
			var marker, rest string
			for i, p := range tt.pieces {
				n, got := s.scan(p)
				if got != "" {
					marker = got
					rest = p[n:]
					if i != len(tt.pieces)-1 {
						rest += tt.pieces[i+1]
					}
					break
				}
			}
			if marker != tt.marker || rest != tt.rest {
				t.Fatalf("marker %q rest %q; want %q, %q", marker, rest, tt.marker, tt.rest)
			}
			if got := string(s.pend[:s.sendable()]); got != tt.before {
				t.Fatalf("sendable %q, want %q", got, tt.before)
			}
		})
	}
}

// A line that may still become the marker is held back, so a marker the
// daemon does not know can be dropped; anything else may be sent at once.
func TestSessionHoldsBackOnlyPossibleMarkers(t *testing.T) {
	const m = "__END_WRITE_0123456789ab__"
	s := newSession(protocol.BeginResult{SessionID: "id", EndMarker: m}, "f")
	s.scan("line one\n__END_WR")
	if got := string(s.pend[:s.sendable()]); got != "line one\n" {
		t.Fatalf("sendable %q", got)
	}
	s.scan("ONG\n")
	if s.sendable() != len(s.pend) {
		t.Fatalf("a look-alike is held back: sendable %d of %d", s.sendable(), len(s.pend))
	}
	s.sent(s.sendable())
	s.continued(protocol.BeginResult{SessionID: "id2", EndMarker: "__END_WRITE_ffffffffffff__"})
	_, got := s.scan(m + "\n")
	if got != m {
		t.Fatalf("the first marker no longer ends the file after a continuation: %q", got)
	}
	s.dropLine()
	if len(s.pend) != 0 {
		t.Fatalf("marker line kept: %q", s.pend)
	}
}

func TestReplay(t *testing.T) {
	const m = "__END_WRITE_0123456789ab__"
	for in, want := range map[string]string{
		"a {{marker}} b":                      "a " + m + " b",
		"{{marker:0:3}}|{{marker:3:26}}":      "__E|ND_WRITE_0123456789ab__",
		"{{marker:20:99}}":                    "89ab__",
		"{{marker:30:40}} {{other}} {marker}": " {{other}} {marker}",
	} {
		if got := Replay(in, m); got != want {
			t.Errorf("Replay(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSSELine(t *testing.T) {
	tests := []struct {
		line    string
		kind    int
		payload string
	}{
		{"data: {\"a\":1}", lineData, `{"a":1}`},
		{"data:{\"a\":1}\r", lineData, `{"a":1}`},
		{"data: [DONE]", lineDone, ""},
		{"data:[DONE]\r", lineDone, ""},
		{"", lineBlank, ""},
		{"\r", lineBlank, ""},
		{": orion-test drop-connection", lineComment, "orion-test drop-connection"},
		{"event: message", lineOther, ""},
		{"id: 7", lineOther, ""},
	}
	for _, tt := range tests {
		if got := parseSSELine(tt.line); got.kind != tt.kind || got.payload != tt.payload {
			t.Errorf("parseSSELine(%q) = %+v, want kind %d payload %q", tt.line, got, tt.kind, tt.payload)
		}
	}
}

func TestEventData(t *testing.T) {
	var e eventData
	// Data lines of one event join with a newline until a blank line.
	if _, ok := e.add(`{"a":`); ok {
		t.Fatal("incomplete JSON ended the event")
	}
	if _, ok := e.add(`1}`); ok {
		t.Fatal("a continuation line ended the event")
	}
	// Without the blank line, the next data line after complete JSON starts
	// a new event.
	if d, ok := e.add(`{"b":2}`); !ok || d != "{\"a\":\n1}" {
		t.Fatalf("got %q, %v", d, ok)
	}
	if d, ok := e.take(); !ok || d != `{"b":2}` {
		t.Fatalf("take %q, %v", d, ok)
	}
	if _, ok := e.take(); ok {
		t.Fatal("take after take")
	}
}
