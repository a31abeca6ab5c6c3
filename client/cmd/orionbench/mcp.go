package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// mcpPackage is the peer: the reference MCP filesystem server, whose
// write_file is how most agents write a whole file today. It writes with
// fs.writeFile (a temp file and a rename when the target exists) and never
// fsyncs, so the comparison is against a write that is not durable.
const mcpPackage = "@modelcontextprotocol/server-filesystem"

// mcpPeer is the filesystem server running on stdio, spoken to in MCP's
// stdio framing: one JSON-RPC message per line.
type mcpPeer struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *bufio.Reader
	nextID  int
	version string // the protocol version the server agreed to
}

// installMCP installs the server into a new directory under dir with npm.
// The reason it could not (no npm, no registry) is returned as skip, for
// the report, not as an error: the rest of the benchmark stands on its own.
func installMCP(ctx context.Context, dir string) (server mcpServer, skip string) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return mcpServer{}, "MCP peer skipped: npm is not installed"
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return mcpServer{}, "MCP peer skipped: node is not installed"
	}
	prefix := filepath.Join(dir, "mcp-peer")
	if err := os.MkdirAll(prefix, 0o700); err != nil {
		return mcpServer{}, "MCP peer skipped: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error", mcpPackage+"@"+mcpPeerVersion)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return mcpServer{}, fmt.Sprintf("MCP peer skipped: npm install %s failed (registry unreachable?): %v: %s", mcpPackage, err, lastLine(stderr.String()))
	}
	pkgDir := filepath.Join(prefix, "node_modules", filepath.FromSlash(mcpPackage))
	var pkg struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || len(pkg.Bin) == 0 {
		return mcpServer{}, fmt.Sprintf("MCP peer skipped: %s installed without a usable package.json (%v)", mcpPackage, err)
	}
	for _, rel := range pkg.Bin {
		// node runs the entry point directly: no npx resolution per run.
		return mcpServer{node: node, script: filepath.Join(pkgDir, rel), version: pkg.Version}, ""
	}
	return mcpServer{}, "MCP peer skipped: no bin in its package.json"
}

// mcpServer is how to run the installed server.
type mcpServer struct {
	node, script, version string
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// startMCP runs the server with allowed as its only allowed directory (a
// command-line argument: the method that works on every protocol version)
// and performs the 2025-era handshake: initialize, then the initialized
// notification.
func startMCP(ctx context.Context, server mcpServer, allowed string) (*mcpPeer, error) {
	cmd := exec.CommandContext(ctx, server.node, server.script, allowed)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// The server logs its allowed directories on stderr; that is not ours
	// to print.
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &mcpPeer{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	err = p.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "orionbench", "version": "1"},
	}, &init)
	if err == nil {
		err = p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("MCP handshake: %w", err)
	}
	p.version = init.ProtocolVersion
	return p, nil
}

func (p *mcpPeer) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// call sends one request and reads lines until its reply, skipping the
// server's notifications and log messages.
func (p *mcpPeer) call(method string, params, result any) error {
	p.nextID++
	id := p.nextID
	if err := p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("reading the reply to %s: %w", method, err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil || *msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: error %d: %s", method, msg.Error.Code, msg.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

// writeFile calls the write_file tool. A tool's own failure comes back as
// a result with isError set, not as a JSON-RPC error.
func (p *mcpPeer) writeFile(path, content string) error {
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	err := p.call("tools/call", map[string]any{"name": "write_file", "arguments": map[string]any{"path": path, "content": content}}, &res)
	if err != nil {
		return err
	}
	if res.IsError {
		msg := "write_file failed"
		if len(res.Content) > 0 {
			msg += ": " + res.Content[0].Text
		}
		return errors.New(msg)
	}
	return nil
}

func (p *mcpPeer) close() {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// The MCP comparison: 64 KiB whole files written one after another with
// write_file, through `orionctl mcp` and through the reference filesystem
// server, both driven by the same client (the official TypeScript SDK's,
// over stdio) in the same run.
const (
	// mcpPeerVersion pins the filesystem server, and mcpSDKVersion the
	// client: their releases change what is measured.
	mcpPeerVersion = "2026.8.31"
	mcpSDKPackage  = "@modelcontextprotocol/sdk"
	mcpSDKVersion  = "1.32.2"
)

//go:embed mcpbench.mjs
var mcpBenchScript []byte

// mcpBench is the installed client script and filesystem server.
type mcpBench struct {
	node, script, peer string
}

// installMCPBench installs the SDK and the filesystem server into a new
// directory under dir. The reason it could not is returned as skip.
func installMCPBench(ctx context.Context, dir string) (b mcpBench, skip string) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return b, "MCP comparison skipped: npm is not installed"
	}
	if b.node, err = exec.LookPath("node"); err != nil {
		return b, "MCP comparison skipped: node is not installed"
	}
	prefix := filepath.Join(dir, "mcp-bench")
	if err := os.MkdirAll(prefix, 0o700); err != nil {
		return b, "MCP comparison skipped: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(prefix, "package.json"), []byte(`{"private": true}`), 0o600); err != nil {
		return b, "MCP comparison skipped: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pkgs := []string{mcpSDKPackage + "@" + mcpSDKVersion, mcpPackage + "@" + mcpPeerVersion}
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)...)
	cmd.Dir = prefix
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return b, fmt.Sprintf("MCP comparison skipped: npm install %s failed (registry unreachable?): %v: %s", strings.Join(pkgs, " "), err, lastLine(stderr.String()))
	}
	// The script resolves the SDK from its own directory.
	b.script = filepath.Join(prefix, "mcpbench.mjs")
	if err := os.WriteFile(b.script, mcpBenchScript, 0o600); err != nil {
		return b, "MCP comparison skipped: " + err.Error()
	}
	b.peer = filepath.Join(prefix, "node_modules", filepath.FromSlash(mcpPackage), "dist", "index.js")
	if _, err := os.Stat(b.peer); err != nil {
		return b, "MCP comparison skipped: " + err.Error()
	}
	return b, ""
}

// run writes files of size bytes into root through one server and
// returns the files per second and the server process's CPU time per file
// in ms (-1 where it cannot be read). kind is orion or filesystem; server
// is the command that runs the server.
func (b mcpBench) run(ctx context.Context, kind, root string, files, size int, tag string, warm int, server ...string) (float64, float64, error) {
	args := append([]string{b.script, kind, root, strconv.Itoa(files), strconv.Itoa(size), tag, strconv.Itoa(warm), "--"}, server...)
	cmd := exec.CommandContext(ctx, b.node, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s write_file over MCP: %v: %s", kind, err, lastLine(stderr.String()))
	}
	var r struct {
		Files     int      `json:"files"`
		Seconds   float64  `json:"seconds"`
		ServerCPU *float64 `json:"server_cpu_ms"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Seconds <= 0 || r.Files <= 0 {
		return 0, 0, fmt.Errorf("%s write_file over MCP: unreadable result %q: %v", kind, out.String(), err)
	}
	cpu := -1.0
	if r.ServerCPU != nil {
		cpu = *r.ServerCPU / float64(r.Files)
	}
	return float64(r.Files) / r.Seconds, cpu, nil
}

// mcpCase compares write_file through `orionctl mcp` (oriond behind it)
// with the filesystem server's write_file, of files of size bytes.
// b is the installed client and peer, nil when skip says why there is
// none.
func mcpCase(ctx context.Context, cfg config, d *daemonProc, b *mcpBench, skip string, size int) (sideBySide, error) {
	res := sideBySide{Name: "whole " + sizeName(size) + " file over MCP (TypeScript SDK " + mcpSDKVersion + " client, stdio)", Unit: "files/s",
		OriondName: "orionctl mcp write_file", OtherName: fmt.Sprintf("%s %s write_file (no fsync)", mcpPackage, mcpPeerVersion)}
	if b == nil {
		res.Skip = skip
		return res, nil
	}
	if _, err := exec.LookPath(cfg.orionctl); err != nil {
		res.Skip = fmt.Sprintf("MCP comparison skipped: orionctl not found (%v); build it next to orionbench or give --orionctl", err)
		return res, nil
	}
	orionRoot := filepath.Join(d.root, "mcp")
	peerRoot := filepath.Join(cfg.dir, "mcp-peer-root")
	for _, dir := range []string{orionRoot, peerRoot} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, err
		}
	}
	n := cfg.wholeOps
	var serverCPU, peerCPU []float64
	o, p, ratio, cpu, err := interleave(cfg.rounds, d, func(r int) (float64, error) {
		v, c, err := b.run(ctx, "orion", orionRoot, n, size, fmt.Sprintf("r%d-%d", size, r), 1, cfg.orionctl, "--socket", d.socket, "mcp")
		if c >= 0 {
			serverCPU = append(serverCPU, c)
		}
		return v, err
	}, func(r int) (float64, error) {
		v, c, err := b.run(ctx, "filesystem", peerRoot, n, size, fmt.Sprintf("r%d-%d", size, r), 1, b.node, b.peer, peerRoot)
		if c >= 0 {
			peerCPU = append(peerCPU, c)
		}
		return v, err
	})
	if err != nil {
		return res, fmt.Errorf("%s: %w", res.Name, err)
	}
	for i := range cpu {
		cpu[i] /= float64(n + 1)
	}
	res.Oriond, res.Other, res.Ratio, res.CPUms = spreadOf(o), spreadOf(p), spreadOf(ratio), spreadOf(cpu)
	if len(serverCPU) > 0 && len(peerCPU) > 0 {
		sc, pc := spreadOf(serverCPU), spreadOf(peerCPU)
		res.ServerCPUms, res.OtherCPUms = &sc, &pc
	}
	res.PeakRSSMiB = float64(sampleProc(d.pid).peakKiB) / 1024
	return res, nil
}
