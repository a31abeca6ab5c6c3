package testdaemon

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// SessionClient is the client `orionctl sessions list` shows for the
// session that wrote target (a path ending in /target): the process's
// name, then the agent it wrote for, as "orionctl (codex)". Tests of the
// proxy's, exec's and the MCP server's real agents check it by running the
// real orionctl (bin) against socket.
func SessionClient(t testing.TB, bin, socket, target string) string {
	t.Helper()
	out, err := exec.Command(bin, "--socket", socket, "--json", "sessions", "list", "--all").Output()
	if err != nil {
		t.Fatalf("orionctl sessions list: %v", err)
	}
	var res struct {
		Sessions []struct {
			TargetFile string `json:"target_file"`
			Client     string `json:"client"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("orionctl sessions list: %v: %s", err, out)
	}
	for _, s := range res.Sessions {
		if strings.HasSuffix(s.TargetFile, "/"+target) {
			return s.Client
		}
	}
	t.Fatalf("orionctl sessions list has no session for %s: %s", target, out)
	return ""
}
