package proxy

import "testing"

// The User-Agents the tested CLIs send name them in session listings.
func TestAgentName(t *testing.T) {
	for ua, want := range map[string]string{
		"codex_exec/0.169.0 (Debian 12; x86_64) dumb (codex-exec; 0.169.0)": "codex",
		"GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64)":                    "gemini",
		"claude-cli/2.1.332 (external, cli)":                                "claude",
		"OpenAI/Python 1.99.0":                                              "",
		"":                                                                  "",
	} {
		if got := agentName(ua); got != want {
			t.Errorf("agentName(%q) = %q, want %q", ua, got, want)
		}
	}
}
