package attack

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/proxyload"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// proxyMemoryBounds are the bounds on the peak resident memory (VmHWM) of
// `orionctl proxy` under each attack of internal/proxyload, each on a
// proxy of its own. Each comment gives the peak measured on the 2-core dev
// box with the bounds in place, and before them (this test with
// ORION_ATTACK_ORIONCTL pointing at an orionctl built from the commit
// before the bounds; `orionbench --proxy-memory` reports the same).
var proxyMemoryBounds = map[string]int64{
	// 256 MiB of model text outside any session, stream: false. Measured
	// 80-93 MiB (the agent gets 502 response_too_large past 16 MiB of
	// text); before: 2,468 MiB (and a 256 MiB JSON answer).
	"text-unstreamed": 160 << 20,
	// The same with stream: true. Measured 34-35 MiB; before: 962 MiB.
	"text-streamed": 96 << 20,
	// A 256 MiB file inside a session. Measured 49-54 MiB; before:
	// 2,026 MiB.
	"file-in-session": 128 << 20,
	// 24 concurrent 30 MiB request bodies, the upstream taking 2 s to
	// answer each. Measured 462-519 MiB (about four bodies served at a
	// time, each held once once encoded); before: 3,741 MiB.
	"concurrent-bodies": 640 << 20,
}

// orionctlUnderTest is the orionctl to attack: ORION_ATTACK_ORIONCTL when
// set (to measure another build), else one built now, always without
// -race: the bounds are of the binary users run, and CI runs the tests
// only with -race, which would otherwise never check them. The test
// process and the daemon may be race builds; only orionctl is measured.
func orionctlUnderTest(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ORION_ATTACK_ORIONCTL"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "orionctl")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/orion-agent/orion/client/cmd/orionctl").CombinedOutput()
	if err != nil {
		t.Fatalf("building orionctl: %v\n%s", err, out)
	}
	return bin
}

// TestProxyMemoryBounded: the proxy held whole responses, histories and
// request bodies several times over, with no cap on how many at once.
func TestProxyMemoryBounded(t *testing.T) {
	bin := orionctlUnderTest(t)
	d := testdaemon.Start(t)
	for _, a := range proxyload.Attacks() {
		t.Run(a.Name, func(t *testing.T) {
			up := httptest.NewServer(a.Upstream())
			defer up.Close()
			p := startProxy(t, bin, d, "--workspace-root", d.Root, "--openai-upstream", up.URL+"/v1", "--anthropic-upstream", up.URL)
			start := time.Now()
			got, err := a.Run(p.addr, d.Root)
			_, peak := rss(t, p.cmd.Process.Pid)
			t.Logf("%s: peak RSS %d MiB in %v; %s", a.What, peak>>20, time.Since(start).Round(time.Millisecond), got)
			if err != nil {
				t.Error(err)
			}
			if bound := proxyMemoryBounds[a.Name]; peak > bound {
				t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, bound>>20)
			}
		})
	}
}
