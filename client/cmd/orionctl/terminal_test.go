//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// The escape strings a model can put in an intent, a target name or the
// content: move the cursor up and erase that line (hiding the real target
// behind a harmless-looking one), write the clipboard (OSC 52), set the
// window title (OSC 0), and reverse how a name reads (U+202E).
const (
	escOverwrite = "\x1b[1A\x1b[2K"
	escClipboard = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
	escTitle     = "\x1b]0;pwned\x1b\\"
	escRLO       = "\u202e"
	hostile      = escOverwrite + "harmless.txt " + escClipboard + escTitle + escRLO + "txt.exe"
	// hostileShown is hostile as every human-readable output shows it.
	hostileShown = `\x1b[1A\x1b[2Kharmless.txt \x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;pwned\x1b\\\u202etxt.exe`
)

// openPTY opens a pseudo-terminal pair; its output processing is off, so
// the master reads exactly the bytes written to the slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// terminalCapture reads a pseudo-terminal's master while processes write to
// its slave.
type terminalCapture struct {
	master, slave *os.File
	done          chan struct{}
	mu            sync.Mutex
	buf           bytes.Buffer
}

func captureTerminal(t *testing.T) *terminalCapture {
	m, s := openPTY(t)
	c := &terminalCapture{master: m, slave: s, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 32<<10)
		for {
			n, err := m.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			c.mu.Unlock()
			if err != nil {
				return // EIO once every slave descriptor is closed
			}
		}
	}()
	t.Cleanup(func() { c.close() })
	return c
}

// close closes the slave and returns everything written to it.
func (c *terminalCapture) close() []byte {
	c.slave.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
	}
	c.master.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// onTerminal runs the real orionctl with its stdout and stderr on a
// pseudo-terminal and returns the bytes it wrote there.
func onTerminal(t *testing.T, socket, stdin string, args ...string) []byte {
	t.Helper()
	tty := captureTerminal(t)
	cmd := exec.Command(testdaemon.Orionctl(t), append([]string{"--socket", socket}, args...)...)
	// A file, as `< file` gives: with a pipe, write would draw its
	// progress line (carriage returns) on the terminal.
	in, err := os.Open(writeFile(t, stdin))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stdin = in
	cmd.Stdout, cmd.Stderr = tty.slave, tty.slave
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_CONFIG=/dev/null")
	err = cmd.Run()
	out := tty.close()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("orionctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// checkInert fails if out holds a byte or a character that a terminal
// obeys rather than shows: C0 controls other than newline (and tab, which
// only moves right), DEL, C1 controls, bidi controls, invalid UTF-8.
func checkInert(t *testing.T, what string, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s: invalid UTF-8 on the terminal:\n%q", what, out)
	}
	for _, r := range string(out) {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			t.Errorf("%s: %U reached the terminal:\n%q", what, r, out)
			return
		}
	}
}

// TestHostileStringsInertOnTerminal: an intent, a target name and content
// carrying escape sequences and a bidi override are shown as visible
// escapes by every human-readable output of orionctl and by oriond's text
// log, checked on the bytes that reach a pseudo-terminal; --json keeps
// them exact.
func TestHostileStringsInertOnTerminal(t *testing.T) {
	d := testdaemon.Start(t)
	dir := filepath.Join(d.Root, "d"+escRLO+"ir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "notes"+escRLO+"gpj.md")
	targetShown := `d\u202eir/notes\u202egpj.md`
	content := "line one\n" + hostile + "\n"

	type check struct {
		name  string
		args  []string
		stdin string
		want  []string // each shown inert in the output
	}
	run := func(c check) string {
		t.Helper()
		out := onTerminal(t, d.Socket, c.stdin, c.args...)
		checkInert(t, c.name, out)
		for _, w := range c.want {
			if !bytes.Contains(out, []byte(w)) {
				t.Errorf("%s: output lacks %s:\n%s", c.name, w, out)
			}
		}
		return string(out)
	}

	// The first write, its dry run before it, and a refused one.
	run(check{"write --dry-run", []string{"write", "--intent", hostile, "--dry-run", target}, content,
		[]string{targetShown, `+` + hostileShown}})
	run(check{"write", []string{"write", "--intent", hostile, target}, content, []string{targetShown}})
	run(check{"write refused", []string{"write", "--intent", hostile, target}, content, []string{targetShown}})

	var info protocol.SessionInfo
	var list protocol.ListResult
	code, out, errOut := orionctl(t, d.Socket, "", "sessions", "list", "--all", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("sessions list --json: exit %d: %s%s", code, out, errOut)
	}
	for _, s := range list.Sessions {
		if s.Stage == protocol.StageCompleted {
			info = s
		}
	}
	// JSON stays exact: the intent and target as the client sent them.
	if info.Intent != hostile || info.TargetFile != target {
		t.Errorf("--json: intent %q, target %q; want %q, %q", info.Intent, info.TargetFile, hostile, target)
	}
	id := info.SessionID

	run(check{"sessions list", []string{"sessions", "list", "--all"}, "", []string{targetShown, "dry run"}})
	run(check{"sessions show", []string{"sessions", "show", id}, "", []string{"intent:", hostileShown, targetShown}})
	// The event list cuts long values to fit a line, and the target's path
	// is the temp directory's, of any length: the list is checked inert,
	// and the session's ladder (which wraps or cuts the middle of a long
	// path, never its file name) for the target shown inert.
	run(check{"trace", []string{"trace", "-n", "200"}, "", nil})
	ladder := run(check{"trace SESSION", []string{"trace", id}, "", nil})
	if name := `notes\u202egpj.md`; !strings.Contains(unwrapLadder(ladder), name) {
		t.Errorf("trace SESSION: the ladder lacks %s:\n%s", name, ladder)
	}
	run(check{"begin", []string{"begin", "--intent", hostile, "--op", "overwrite", target}, "", []string{targetShown}})
	run(check{"tx write", []string{"tx", "write", "--intent", hostile, target + "=" + writeFile(t, content)}, "",
		[]string{targetShown}})
	var open protocol.ListResult
	if code, js, errOut := orionctl(t, d.Socket, "", "sessions", "list", "--json"); code != 0 || json.Unmarshal([]byte(js), &open) != nil {
		t.Fatalf("sessions list --json: exit %d: %s%s", code, js, errOut)
	}
	var begun, txID string
	for _, s := range open.Sessions {
		if s.TxID == "" {
			begun = s.SessionID
		}
	}
	if code, _, errOut := orionctl(t, d.Socket, content, "append", begun); code != 0 {
		t.Fatalf("append: exit %d: %s", code, errOut)
	}
	run(check{"sessions recover", []string{"sessions", "recover", begun}, "", []string{"last lines:", hostileShown, targetShown}})
	if code, js, errOut := orionctl(t, d.Socket, "", "sessions", "list", "--all", "--json"); code != 0 || json.Unmarshal([]byte(js), &list) != nil {
		t.Fatalf("sessions list --json: exit %d: %s%s", code, js, errOut)
	}
	for _, s := range list.Sessions {
		if s.TxID != "" {
			txID = s.TxID
		}
	}
	run(check{"tx show", []string{"tx", "show", txID}, "", []string{targetShown}})
	run(check{"undo --last", []string{"undo", "--last", "--any"}, "", []string{targetShown}})
	run(check{"status", []string{"status"}, "", []string{"allowed roots"}})

	// oriond's text log on a terminal: its own daemon, its stderr on a
	// pseudo-terminal, one hostile write through it.
	tty := captureTerminal(t)
	logged := testdaemon.Start(t)
	logged.Stop()
	cmd := logged.Command()
	cmd.Stdout, cmd.Stderr = tty.slave, tty.slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitSocket(t, logged.Socket)
	logTarget := filepath.Join(logged.Root, "notes"+escRLO+"gpj.md")
	if code, _, errOut := orionctl(t, logged.Socket, content, "write", "--intent", hostile, logTarget); code != 0 {
		t.Fatalf("write: exit %d: %s", code, errOut)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	logs := tty.close()
	checkInert(t, "oriond log", logs)
	if !bytes.Contains(logs, []byte(`notes\u202egpj.md`)) {
		t.Errorf("oriond log lacks the target, shown inert:\n%s", logs)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitSocket(t *testing.T, socket string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("oriond did not open %s: %v", socket, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
