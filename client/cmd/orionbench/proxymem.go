package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"text/tabwriter"
	"time"

	"github.com/orion-agent/orion/internal/httpguard"
	"github.com/orion-agent/orion/internal/proxyload"
)

// proxyMemRow is the peak resident memory of `orionctl proxy` under one
// attack of internal/proxyload, on a proxy of its own.
type proxyMemRow struct {
	Attack  string  `json:"attack"`
	What    string  `json:"what"`
	PeakMiB float64 `json:"peak_rss_mib"`
	Seconds float64 `json:"seconds"`
	Result  string  `json:"result"`
	Error   string  `json:"error,omitempty"`
}

// proxyMemoryCase runs the proxy's memory attacks against the orionctl
// under test, each on a proxy of its own in front of a daemon of its own.
func proxyMemoryCase(ctx context.Context, cfg config) ([]proxyMemRow, error) {
	d, err := startDaemon(ctx, cfg, "proxy", nil)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	var rows []proxyMemRow
	for _, a := range proxyload.Attacks() {
		up := httptest.NewServer(a.Upstream())
		addr, pid, stop, err := startProxyProc(ctx, cfg.orionctl, d, up.URL)
		if err != nil {
			up.Close()
			return nil, err
		}
		start := time.Now()
		res, aerr := a.Run(addr, d.root)
		row := proxyMemRow{Attack: a.Name, What: a.What, Seconds: time.Since(start).Seconds(), Result: res}
		if m, ok := sampleMem(pid); ok {
			row.PeakMiB = float64(m.hwm) / 1024
		}
		if aerr != nil {
			row.Error = aerr.Error()
		}
		stop()
		up.Close()
		rows = append(rows, row)
	}
	return rows, nil
}

var proxyListenRE = regexp.MustCompile(`msg="orionctl proxy listening" addr=(\S+)`)

// startProxyProc runs `orionctl proxy` on a free loopback port in front
// of d and upstream, and waits until it listens. addr is where requests
// go: the address with the secret's path, given with --token (which every
// build takes) so that no secret file is made in the person's own
// configuration directory.
func startProxyProc(ctx context.Context, bin string, d *daemonProc, upstream string) (addr string, pid int, stop func(), err error) {
	token := httpguard.NewToken()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.socket, "proxy", "--listen", "127.0.0.1:0", "--token", token,
		"--workspace-root", d.root, "--openai-upstream", upstream+"/v1", "--anthropic-upstream", upstream, "--log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("starting %s: %w (build it with `go build -o bin/ ./client/cmd/orionctl` and pass --orionctl)", bin, err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := proxyListenRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		close(found)
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a, ok := <-found:
		if ok {
			return a + httpguard.TokenPathPrefix + token, cmd.Process.Pid, stop, nil
		}
	case <-time.After(30 * time.Second):
	}
	stop()
	return "", 0, nil, fmt.Errorf("%s proxy did not start listening", bin)
}

func reportProxyMemory(out io.Writer, rows []proxyMemRow) {
	fmt.Fprintln(out, "orionctl proxy, peak RSS (VmHWM) under each memory attack, each on a proxy of its own:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\tpeak RSS\ttime\twhat the agent got")
	for _, r := range rows {
		res := r.Result
		if r.Error != "" {
			res += " (" + r.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%.0f MiB\t%.1f s\t%s\n", r.What, r.PeakMiB, r.Seconds, res)
	}
	tw.Flush()
}
