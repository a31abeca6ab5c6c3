package main

import (
	"bufio"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// startProxyBinary runs the built orionctl proxy and returns the first
// stderr lines up to the one saying it listens (or all of them, if it
// exits first) and whether it listens.
func startProxyBinary(t *testing.T, bin string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return strings.Join(got, "\n"), false
			}
			got = append(got, l)
			if strings.Contains(l, "orionctl proxy listening") {
				return strings.Join(got, "\n"), true
			}
		case <-timeout:
			t.Fatalf("orionctl proxy said nothing conclusive in 30 s: %q", got)
		}
	}
}

func TestProxyCommand(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	base := []string{"--socket", d.Socket, "proxy", "--workspace-root", d.Root}

	// A second proxy on a busy port says what probably holds it.
	t.Run("BusyPort", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out, listening := startProxyBinary(t, bin, append(base, "--listen", ln.Addr().String())...)
		if listening || !strings.Contains(out, "another orionctl proxy probably runs there") || !strings.Contains(out, "--listen") {
			t.Errorf("got %q, want a refusal with the hint", out)
		}
	})

	// --listen 0.0.0.0 prints a base URL a client can use, not [::].
	t.Run("AllInterfacesBaseURL", func(t *testing.T) {
		out, listening := startProxyBinary(t, bin, append(base, "--listen", "0.0.0.0:0")...)
		if !listening {
			t.Fatalf("did not listen: %s", out)
		}
		re := regexp.MustCompile(`anthropic_base_url=http://127\.0\.0\.1:\d+ `)
		if !re.MatchString(out) || strings.Contains(out, "[::]") || !strings.Contains(out, "level=WARN") {
			t.Errorf("got %q, want a warning and base URLs at 127.0.0.1", out)
		}
	})

	// Credentials in an upstream URL are refused, and not repeated.
	t.Run("UpstreamCredentials", func(t *testing.T) {
		out, listening := startProxyBinary(t, bin, append(base, "--listen", "127.0.0.1:0",
			"--openai-upstream", "https://user:sk-secret-in-url@llm.example/v1")...)
		if listening || !strings.Contains(out, "carries credentials") || strings.Contains(out, "sk-secret-in-url") {
			t.Errorf("got %q, want a refusal that does not repeat the secret", out)
		}
	})
}
