package agentcli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Each pinned CLI installs (or comes from the cache) and reports the
// version the tests rely on. CI runs this first, so the other packages'
// tests find the CLIs cached instead of racing to download them.
func TestInstall(t *testing.T) {
	for _, c := range []CLI{Codex, Gemini} {
		t.Run(c.Name, func(t *testing.T) {
			bin := Install(t, c)
			cmd := exec.Command(bin, "--version")
			cmd.Env = append(os.Environ(), "GEMINI_CLI_NO_RELAUNCH=true")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.Version) {
				t.Errorf("%s --version: %q, %v; want %s", bin, out, err, c.Version)
			}
		})
	}
}
