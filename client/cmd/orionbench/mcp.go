package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error", mcpPackage)
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
