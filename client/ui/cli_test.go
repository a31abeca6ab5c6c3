package ui_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// orionctl ui says what to do: open the address it prints, that it could
// not open a browser (no graphical session), and that oriond does not
// answer, with the socket and the command that starts it there.
func TestOrionctlUISaysWhatToDo(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "oriond.sock") // nothing listens here
	cmd := exec.Command(testdaemon.Orionctl(t), "--socket", sock, "ui")
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_CONFIG=/dev/null", "DISPLAY=", "WAYLAND_DISPLAY=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("stdout's first line %q (%v): want the address alone", url, err)
	}
	said := make(chan string)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Serving the page") {
				break
			}
		}
		said <- all.String()
	}()
	var text string
	select {
	case text = <-said:
	case <-time.After(20 * time.Second):
		t.Fatal("orionctl ui said nothing within 20s")
	}
	for _, want := range []string{
		"Open this address in a browser",
		"No browser opened: no graphical session here",
		"oriond does not answer at " + sock,
		"start it with `" + client.StartCommand(sock) + "`",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("orionctl ui does not say %q; it said:\n%s", want, text)
		}
	}
}
