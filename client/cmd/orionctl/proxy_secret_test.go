package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/claudecode"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// runningProxy is one `orionctl proxy` the test started.
type runningProxy struct {
	addr string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs strings.Builder
}

func (p *runningProxy) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop ends the proxy and waits for it.
func (p *runningProxy) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

var proxyAddrRE = regexp.MustCompile(`msg="orionctl proxy listening" addr=(\S+)`)

// runProxy starts the built orionctl proxy on a free loopback port with
// env added to the test's, and waits until it listens.
func runProxy(t *testing.T, bin string, env []string, args ...string) *runningProxy {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &runningProxy{cmd: cmd}
	t.Cleanup(p.stop)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := proxyAddrRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("orionctl proxy exited before listening:\n%s", p.log())
		}
		p.addr = a
	case <-time.After(30 * time.Second):
		t.Fatalf("orionctl proxy did not listen within 30 s:\n%s", p.log())
	}
	return p
}

// printEnv runs orionctl proxy --print-env and returns its two base URLs.
func printEnv(t *testing.T, bin string, env []string, args ...string) (anthropic, openai string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy", "--print-env"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("orionctl proxy --print-env: %v", err)
	}
	re := regexp.MustCompile(`^ANTHROPIC_BASE_URL=(http://127\.0\.0\.1:\d+/t/[A-Za-z0-9_-]{32})\nOPENAI_BASE_URL=(\S+)\n$`)
	m := re.FindStringSubmatch(string(out))
	if m == nil || m[2] != m[1]+"/v1" {
		t.Fatalf("--print-env printed %q, want the two base URLs with the secret", out)
	}
	return m[1], m[2]
}

// countingModel is an OpenAI-compatible upstream that counts the requests
// reaching it and answers each chat with the script's next step: a call of
// WritePlanTool_begin, the content with the end marker the tool result
// gave, then a last word. It keeps the body of the last request, which
// carries what the model was told.
type countingModel struct {
	begin   string // WritePlanTool_begin's arguments
	content string
	reached atomic.Int64
	mu      sync.Mutex
	turn    int
	last    string
}

var writeMarkerRE = regexp.MustCompile(`__END_WRITE_[0-9a-f]+__`)

func (m *countingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.reached.Add(1)
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	m.mu.Lock()
	m.turn++
	turn := m.turn
	m.last = string(body)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
	}
	switch turn {
	case 1:
		args, _ := json.Marshal(m.begin)
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"WritePlanTool_begin","arguments":`+string(args)+`}}]}`, "")
		chunk(`{}`, "tool_calls")
	case 2:
		c, _ := json.Marshal(m.content + writeMarkerRE.FindString(string(body)) + "\n")
		chunk(`{"content":`+string(c)+`}`, "")
		chunk(`{}`, "stop")
	default:
		chunk(`{"content":"done"}`, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// chat posts a chat request to base (an OpenAI base URL) naming
// workspace, and returns the status and body.
func chat(t *testing.T, base, workspace string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"edit it"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-agent-key")
	if workspace != "" {
		req.Header.Set("X-Orion-Workspace", workspace)
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The shared proxy makes its secret at the first start, in a file only
// the user can read, keeps it across restarts, and refuses requests
// without it (401) before they reach the model; --rotate-token replaces
// it; --print-env's lines, sourced by a shell, reach the proxy.
func TestProxySecret(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	config := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + config}
	file := filepath.Join(config, "orion", "proxy-token")
	model := &countingModel{}
	up := httptest.NewServer(model)
	defer up.Close()
	args := []string{"--socket", d.Socket, "--workspace-root", d.Root, "--openai-upstream", up.URL + "/v1", "--anthropic-upstream", up.URL}

	p := runProxy(t, bin, env, args...)
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %s: %v, %v; want it made with mode 0600", file, fi, err)
	}
	b, _ := os.ReadFile(file)
	secret := strings.TrimSpace(string(b))
	if strings.Contains(p.log(), secret) || !strings.Contains(p.log(), "secret="+file) {
		t.Errorf("the start-up log must say where the secret is and never show it:\n%s", p.log())
	}

	get := func(url string) int {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("RefusedWithoutIt", func(t *testing.T) {
		for _, c := range []struct{ name, url string }{
			{"None", "http://" + p.addr + "/v1/models"},
			{"Wrong", "http://" + p.addr + "/t/" + secret + "x/v1/models"},
		} {
			resp, err := http.Get(c.url)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct{ Type, Check, Message string }
			}
			err = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("%s: %s, x-should-retry %q; want 401, false", c.name, resp.Status, resp.Header.Get("X-Should-Retry"))
			}
			if err != nil || e.Error.Type != "authentication_error" || e.Error.Check != "token" || !strings.Contains(e.Error.Message, "--print-env") {
				t.Errorf("%s: body %+v (%v), want an authentication_error naming the token check and --print-env", c.name, e, err)
			}
		}
		if status, body := chat(t, "http://"+p.addr+"/v1", d.Root); status != http.StatusUnauthorized {
			t.Errorf("a chat without the secret: %d %s, want 401", status, body)
		}
		if n := model.reached.Load(); n != 0 {
			t.Errorf("%d requests without the secret reached the upstream", n)
		}
	})

	// What --print-env prints, sourced by a shell, takes curl to the proxy.
	t.Run("PrintEnvSourced", func(t *testing.T) {
		port := p.addr[strings.LastIndex(p.addr, ":")+1:]
		envFile := filepath.Join(t.TempDir(), "orion.env")
		cmd := exec.Command(bin, "proxy", "--print-env", "--listen", "127.0.0.1:"+port)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(envFile, out, 0o600); err != nil {
			t.Fatal(err)
		}
		sh := exec.Command("sh", "-c", `set -a; . "$1"; set +a; curl -sS -o /dev/null -w '%{http_code} ' "$OPENAI_BASE_URL/models"; `+
			`curl -sS -o /dev/null -w '%{http_code}' -H 'anthropic-version: 2023-06-01' "$ANTHROPIC_BASE_URL/v1/models"`, "sh", envFile)
		got, err := sh.CombinedOutput()
		if err != nil || string(got) != "200 200" {
			t.Errorf("curl with the sourced variables: %q, %v; want 200 200", got, err)
		}
		if n := model.reached.Load(); n != 2 {
			t.Errorf("the upstream saw %d requests, want the 2 with the secret", n)
		}
	})

	// A restart keeps the secret; --rotate-token replaces it, and the old
	// one is refused once the proxy restarts.
	t.Run("RestartAndRotate", func(t *testing.T) {
		p.stop()
		p2 := runProxy(t, bin, env, args...)
		if got := get("http://" + p2.addr + "/t/" + secret + "/v1/models"); got != 200 {
			t.Fatalf("after a restart the secret got %d, want 200", got)
		}
		before, _ := printEnv(t, bin, env)
		rot := exec.Command(bin, "proxy", "--rotate-token")
		rot.Env = append(os.Environ(), env...)
		if out, err := rot.CombinedOutput(); err != nil || strings.Contains(string(out), secret) {
			t.Fatalf("--rotate-token: %v\n%s", err, out)
		}
		after, _ := printEnv(t, bin, env)
		if before == after || !strings.Contains(before, secret) {
			t.Fatalf("--rotate-token left the base URL %s as it was (%s)", after, before)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("after --rotate-token the file is %v, %v; want mode 0600", fi, err)
		}
		p2.stop()
		p3 := runProxy(t, bin, env, args...)
		if got := get("http://" + p3.addr + "/t/" + secret + "/v1/models"); got != http.StatusUnauthorized {
			t.Errorf("the old secret after rotation: %d, want 401", got)
		}
		newSecret := after[strings.LastIndex(after, "/t/")+3:]
		if got := get("http://" + p3.addr + "/t/" + newSecret + "/v1/models"); got != 200 {
			t.Errorf("the new secret: %d, want 200", got)
		}
	})

	// A secret file others can read is refused: it proves nothing.
	t.Run("OpenFileRefused", func(t *testing.T) {
		open := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(open, []byte("a-secret-that-others-can-read-0123\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(open, 0o644); err != nil {
			t.Fatal(err)
		}
		out, listening := startProxyBinary(t, bin, append([]string{"proxy", "--listen", "127.0.0.1:0", "--token-file", open}, args...)...)
		if listening || !strings.Contains(out, "can be read by others") || strings.Contains(out, "a-secret-that-others") {
			t.Errorf("got %q, want a refusal naming the mode, without the secret", out)
		}
	})
}

// With --no-token the proxy warns at start, and a failed edit's error
// says which lines came closest without their text; with the secret the
// same failure quotes them, for the model to copy.
func TestProxyNoTokenWithholdsFileText(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	conf := filepath.Join(d.Root, "app.conf")
	if err := os.WriteFile(conf, []byte("API_KEY=sk-live-0001\nDB_PASSWORD=hunter2-very-secret\nDEBUG=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := "<<<<<<< SEARCH\nDB_PASSWORD=guess-very-secret\n=======\nDB_PASSWORD=x\n>>>>>>> REPLACE\n"
	run := func(t *testing.T, extra ...string) (toModel, toAgent, logs string) {
		model := &countingModel{begin: `{"intent":"fix","target_file":"app.conf","operation":"edit"}`, content: edit}
		up := httptest.NewServer(model)
		defer up.Close()
		p := runProxy(t, bin, nil, append([]string{"--socket", d.Socket, "--openai-upstream", up.URL + "/v1"}, extra...)...)
		base := "http://" + p.addr + "/v1"
		if len(extra) == 0 {
			anth, _ := printEnv(t, bin, nil, "--listen", p.addr)
			base = anth + "/v1"
		}
		status, body := chat(t, base, d.Root)
		if status != 200 {
			t.Fatalf("chat: %d %s\n%s", status, body, p.log())
		}
		model.mu.Lock()
		defer model.mu.Unlock()
		if model.turn < 3 {
			t.Fatalf("the model was not told of the failure (%d turns)\n%s", model.turn, p.log())
		}
		return model.last, body, p.log()
	}

	t.Run("NoToken", func(t *testing.T) {
		toModel, toAgent, logs := run(t, "--no-token")
		if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "any program of any user of this machine") {
			t.Errorf("no warning at start:\n%s", logs)
		}
		for what, s := range map[string]string{"the model": toModel, "the agent": toAgent} {
			if strings.Contains(s, "hunter2") || strings.Contains(s, "sk-live") {
				t.Errorf("%s got a line of the file:\n%s", what, s)
			}
			if !strings.Contains(s, "no_match") || !strings.Contains(s, "closest lines of the file: line 2") {
				t.Errorf("%s was not told what failed and where:\n%s", what, s)
			}
		}
		if b, _ := os.ReadFile(conf); !strings.Contains(string(b), "hunter2") {
			t.Errorf("the file changed: %q", b)
		}
	})

	t.Run("WithSecret", func(t *testing.T) {
		toModel, _, _ := run(t)
		if !strings.Contains(toModel, "hunter2-very-secret") {
			t.Errorf("with the secret the model did not get the closest lines:\n%s", toModel)
		}
	})
}

// asOtherUser runs name with args as uid and gid 65534 (nobody), or skips
// the test where that cannot be done.
func asOtherUser(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("acting as another user needs root (setpriv --reuid); run the tests as root to check it")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	cmd := exec.Command(setpriv, append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", name}, args...)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
	return cmd
}

// Another user of the machine, posting to a proxy started with no flag
// but its upstreams, is refused: its chat naming the person's project
// reaches neither the model nor oriond, and nothing is written.
func TestProxyOtherUserRefused(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	model := &countingModel{begin: `{"intent":"x","target_file":"backdoor.py","operation":"create"}`, content: "import os\n"}
	up := httptest.NewServer(model)
	defer up.Close()
	p := runProxy(t, bin, nil, "--socket", d.Socket, "--openai-upstream", up.URL+"/v1", "--anthropic-upstream", up.URL)
	body := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"write backdoor.py"}]}`
	for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/t/guessed-secret-0123456789abcdef/v1/messages"} {
		cmd := asOtherUser(t, "curl", "-q", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
			"-H", "X-Orion-Workspace: "+d.Root, "-H", "anthropic-version: 2023-06-01", "-d", body, "http://"+p.addr+path)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "401" {
			t.Errorf("uid 65534 POST %s: %q, %v; want 401", path, out, err)
		}
	}
	if n := model.reached.Load(); n != 0 {
		t.Errorf("%d of the other user's requests reached the upstream", n)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "backdoor.py")); err == nil {
		t.Error("backdoor.py was written")
	}
	if !strings.Contains(p.log(), `msg="request refused at the door" check=token`) {
		t.Errorf("the refusals are not in the proxy's log:\n%s", p.log())
	}
}

// Connections are bounded: past --max-connections, or past one user's
// share, a new one is answered 503 and closed at once, and the proxy
// serves again as soon as one is closed.
func TestProxyConnectionCap(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	up := httptest.NewServer(&countingModel{})
	defer up.Close()
	args := []string{"--socket", d.Socket, "--no-token", "--openai-upstream", up.URL + "/v1"}
	refused := func(t *testing.T, addr string) bool {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.HasPrefix(line, "HTTP/1.1 503")
	}
	hold := func(t *testing.T, addr string, n int) []net.Conn {
		var cs []net.Conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			cs = append(cs, c)
		}
		return cs
	}
	// served polls: a closed connection is given back once the proxy
	// sees it close, an instant later.
	served := func(t *testing.T, addr string) bool {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
		for range 100 {
			resp, err := client.Get("http://" + addr + "/v1/models")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return true
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}

	t.Run("Total", func(t *testing.T) {
		p := runProxy(t, bin, nil, append(args, "--max-connections", "4")...)
		cs := hold(t, p.addr, 4)
		if !refused(t, p.addr) {
			t.Fatalf("a fifth connection was not refused")
		}
		cs[0].Close()
		if !served(t, p.addr) {
			t.Errorf("not served after a connection closed:\n%s", p.log())
		}
		if !strings.Contains(p.log(), "connections refused: too many open") {
			t.Errorf("the refusal is not logged:\n%s", p.log())
		}
	})

	// A connection that sends half a request's headers is closed after
	// the 10 s header deadline (the wait allows twice that, on a slow
	// machine; it was 30 s before).
	t.Run("HalfHeader", func(t *testing.T) {
		p := runProxy(t, bin, nil, args...)
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: %s\r\n", p.addr)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the connection was still open after 20 s (%v)", err)
		}
	})

	t.Run("PerUser", func(t *testing.T) {
		if _, err := os.Stat("/proc/net/tcp"); err != nil {
			t.Skip("the user holding a TCP connection is known on Linux only")
		}
		p := runProxy(t, bin, nil, append(args, "--max-connections", "16", "--max-user-connections", "2")...)
		hold(t, p.addr, 2)
		if !refused(t, p.addr) {
			t.Fatalf("a third connection of one user was not refused")
		}
	})

	// Another user holds its share; the person's own programs are still
	// served.
	t.Run("OtherUserShare", func(t *testing.T) {
		p := runProxy(t, bin, nil, append(args, "--max-connections", "16", "--max-user-connections", "3")...)
		host, port, _ := net.SplitHostPort(p.addr)
		script := fmt.Sprintf(`exec 3<>/dev/tcp/%[1]s/%[2]s 4<>/dev/tcp/%[1]s/%[2]s 5<>/dev/tcp/%[1]s/%[2]s 6<>/dev/tcp/%[1]s/%[2]s; head -n 1 <&6; read -r _`, host, port)
		cmd := asOtherUser(t, "bash", "-c", script)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer stdin.Close()
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 503") {
			t.Errorf("uid 65534's fourth connection got %q, want 503", line)
		}
		if !served(t, p.addr) {
			t.Errorf("the person's own request was not served while another user held its share:\n%s", p.log())
		}
		if !strings.Contains(p.log(), "uid=65534") {
			t.Errorf("the log does not name the user refused:\n%s", p.log())
		}
	})
}

// orionctl exec's workspace is its own: X-Orion-Workspace may name a
// directory below it, and anything else (its parent) is refused with the
// reason, before the model is asked anything.
func TestExecWorkspaceFixed(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "proj")
	if err := os.MkdirAll(filepath.Join(project, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, header string, model *countingModel) (string, string) {
		up := httptest.NewServer(model)
		defer up.Close()
		cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--openai-upstream", up.URL+"/v1", "--", "sh", "-c",
			`curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' -H "X-Orion-Workspace: $1" "$OPENAI_BASE_URL/chat/completions" `+
				`-d '{"model":"m","messages":[{"role":"user","content":"write notes.md"}]}'`, "sh", header)
		cmd.Dir = project
		var errb strings.Builder
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("orionctl exec: %v\n%s", err, errb.String())
		}
		return string(out), errb.String()
	}
	begin := `{"intent":"n","target_file":"notes.md","operation":"create"}`

	t.Run("Parent", func(t *testing.T) {
		model := &countingModel{begin: begin, content: "hi\n"}
		out, _ := run(t, d.Root, model)
		if !strings.HasSuffix(out, "\n400") || !strings.Contains(out, "outside the workspace") {
			t.Errorf("got %q, want 400 saying the header is outside the workspace", out)
		}
		if n := model.reached.Load(); n != 0 {
			t.Errorf("%d requests reached the upstream", n)
		}
		if _, err := os.Stat(filepath.Join(d.Root, "notes.md")); err == nil {
			t.Error("notes.md was written in the parent")
		}
	})

	t.Run("Symlink", func(t *testing.T) {
		link := filepath.Join(project, "up")
		if err := os.Symlink(d.Root, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		model := &countingModel{begin: begin, content: "hi\n"}
		out, _ := run(t, link, model)
		if !strings.HasSuffix(out, "\n400") || !strings.Contains(out, "symbolic link") {
			t.Errorf("got %q, want 400 naming the link", out)
		}
	})

	t.Run("Subdirectory", func(t *testing.T) {
		model := &countingModel{begin: begin, content: "in sub\n"}
		out, stderr := run(t, filepath.Join(project, "sub"), model)
		if !strings.HasSuffix(out, "\n200") {
			t.Fatalf("got %q, want 200\n%s", out, stderr)
		}
		if b, err := os.ReadFile(filepath.Join(project, "sub", "notes.md")); err != nil || string(b) != "in sub\n" {
			t.Errorf("sub/notes.md: %q, %v", b, err)
		}
	})
}

// The README's way to run Claude Code against the shared proxy: its base
// URL, with the secret, from --print-env, and its project from the
// workspace header. Claude Code writes into that project.
func TestProxyClaudeCodePrintEnv(t *testing.T) {
	claude, version := claudecode.Install(t)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "myproject")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "# Notes\n\nwritten through the shared proxy\n"
	up := httptest.NewServer(&scriptedModel{target: "notes.md", content: content})
	defer up.Close()
	config := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	p := runProxy(t, bin, config, "--socket", d.Socket, "--anthropic-upstream", up.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c",
		`env $("$0" proxy --print-env --listen "$1") ANTHROPIC_CUSTOM_HEADERS="X-Orion-Workspace: $PWD" "$2" -p "Write notes.md." --output-format json`,
		bin, p.addr, claude)
	cmd.Dir = project
	cmd.Env = append(claudecode.Env(t.TempDir(), ""), config...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("Claude Code %s through orionctl proxy took %v", version, time.Since(start))
	if err != nil {
		t.Fatalf("claude: %v\nstdout %s\nstderr %s\nproxy:\n%s", err, out.String(), errb.String(), p.log())
	}
	var r struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil || r.IsError || !strings.Contains(r.Result, "Wrote notes.md") {
		t.Errorf("Claude Code's result %s (%v)\nproxy:\n%s", out.String(), err, p.log())
	}
	if got, err := os.ReadFile(filepath.Join(project, "notes.md")); err != nil || string(got) != content {
		t.Errorf("myproject/notes.md: %q, %v; want %q", got, err, content)
	}
	if strings.Contains(p.log(), "check=token") {
		t.Errorf("a request of Claude Code's was refused at the door:\n%s", p.log())
	}
}
