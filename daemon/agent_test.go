package daemon

import "testing"

// The agent's name is the caller's word: listings keep only a short,
// plain name of it, so a caller cannot forge a listing's layout or
// another client's name.
func TestWithAgent(t *testing.T) {
	for _, c := range []struct{ client, agent, want string }{
		{"orionctl", "codex", "orionctl (codex)"},
		{"orionctl", "", "orionctl"},
		{"", "gemini", "(gemini)"},
		{"orionctl", "x\n\tSESSION\x1b[2J", "orionctl (xSESSION2J)"},
		{"orionctl", "()/ ", "orionctl"},
		{"orionctl", "a234567890123456789012345678901234567890", "orionctl (a2345678901234567890123456789012)"},
	} {
		if got := withAgent(c.client, c.agent); got != c.want {
			t.Errorf("withAgent(%q, %q) = %q, want %q", c.client, c.agent, got, c.want)
		}
	}
}
