package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/httpguard"
)

// childExit carries the exit status of the command orionctl exec ran:
// orionctl exits with it and prints nothing of its own.
type childExit struct{ code int }

func (e childExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newExecCmd(g *globals) *cobra.Command {
	var pf proxyFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "Run an agent with a private proxy of its own, writing into the current directory",
		Long: `Run CMD (an agent such as claude or codex) with a proxy of its own: the
proxy listens on a free loopback port, only for this one process (a secret
of its own is part of its base URL), and its workspace is the current
directory (or --workspace-root): a request's X-Orion-Workspace header may
name it or a directory below it, and any other is refused (400). CMD gets
ANTHROPIC_BASE_URL, OPENAI_BASE_URL and
GOOGLE_GEMINI_BASE_URL pointing at it, so any client that takes a base URL writes
its files through oriond with no other setting; Codex CLI (which reads no
base URL from the environment) also gets -c overrides that make the proxy
its model provider. A base URL already in the environment becomes the
proxy's upstream.

Signals sent to orionctl are passed on to CMD (Ctrl-C from the terminal
reaches CMD directly), and orionctl exits with CMD's status. Refused and
failed writes are printed on stderr.`,
		Example: `  orionctl exec -- claude
  orionctl exec -- claude -p "write notes.md with a summary of main.go"
  orionctl exec --workspace-root ~/myproject -- codex`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("exec needs a command to run: orionctl exec -- CMD [ARGS...]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, g, &pf, args)
		},
	}
	f := cmd.Flags()
	// Flags stop at CMD: `orionctl exec claude -p x` leaves -p to claude.
	f.SetInterspersed(false)
	pf.bind(f, "warn")
	f.StringVar(&pf.workspace, "workspace-root", "", "workspace the agent's files go in (default: the current directory)")
	return cmd
}

func runExec(cmd *cobra.Command, g *globals, pf *proxyFlags, args []string) error {
	stderr := cmd.ErrOrStderr()
	log, err := pf.logger(stderr)
	if err != nil {
		return err
	}
	ws := pf.workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return usageError{fmt.Errorf("--workspace-root: %w", err)}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "orionctl exec: %v\n", err)
		return childExit{127}
	}
	// Before the agent spends a turn: a workspace oriond may not write
	// would have every write refused.
	if err := checkWorkspace(cmd, g, ws); err != nil {
		return err
	}
	// The agent's own provider stays its provider: a base URL it was
	// given becomes the upstream, unless a flag names one.
	flags := cmd.Flags()
	if v := os.Getenv("OPENAI_BASE_URL"); v != "" && !flags.Changed("openai-upstream") {
		pf.openaiURL = v
	}
	if v := os.Getenv("ANTHROPIC_BASE_URL"); v != "" && !flags.Changed("anthropic-upstream") {
		pf.anthURL = v
	}
	if v := os.Getenv("GOOGLE_GEMINI_BASE_URL"); v != "" && !flags.Changed("gemini-upstream") {
		pf.geminiURL = v
	}
	token := httpguard.NewToken()
	cfg := pf.config(g.socket, ws, log)
	cfg.Token = token
	cfg.FixedWorkspace = true
	cfg.Agent = filepath.Base(args[0])
	p, err := proxy.New(cfg)
	if err != nil {
		return usageError{err}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The proxy outlives a cancelled command context: CMD decides when
	// this ends, and its last requests still need answers.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(cmd.Context()))
	served := make(chan error, 1)
	go func() { served <- serveProxy(serveCtx, pf.limit(ln, log), p) }()
	defer func() {
		stopServing()
		<-served
		p.Close()
	}()

	base := baseURL(ln.Addr(), token)
	child := exec.Command(path, agentArgs(args, base)[1:]...)
	child.Args[0] = args[0]
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), stderr
	child.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1",
		"GOOGLE_GEMINI_BASE_URL="+base)
	log.Debug("orionctl exec", "cmd", args[0], "workspace_root", ws, "listen", ln.Addr().String())

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		fmt.Fprintf(stderr, "orionctl exec: %v\n", err)
		return childExit{126}
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	fromTerminal := stdinIsTerminal(cmd.InOrStdin())
	for {
		select {
		case s := <-sigs:
			if fromTerminal && terminalSignal(s) {
				// The terminal sent it to the whole foreground group,
				// CMD included: a second copy would be a second Ctrl-C.
				continue
			}
			_ = child.Process.Signal(s)
		case err := <-done:
			return exitOf(err)
		}
	}
}

// exitOf turns CMD's end into orionctl's exit status: CMD's own, or 128
// plus the signal that ended it, as a shell reports it.
func exitOf(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return childExit{128 + int(ws.Signal())}
		}
		return childExit{ee.ExitCode()}
	}
	return err
}

func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// agentArgs is CMD's command line, with what an agent that reads no base
// URL from the environment needs to use the proxy. Codex CLI takes its
// model provider from its configuration: -c overrides (documented for
// every config.toml key, and applied to all its subcommands when given
// first) name a provider that is the proxy, speaking the Responses API
// with the key from OPENAI_API_KEY, without touching ~/.codex.
func agentArgs(args []string, base string) []string {
	if strings.TrimSuffix(filepath.Base(args[0]), ".exe") != "codex" {
		return args
	}
	provider := fmt.Sprintf(`model_providers.orion={ name = "orion (orionctl exec)", base_url = %q, env_key = "OPENAI_API_KEY", wire_api = "responses" }`,
		base+"/v1")
	out := []string{args[0], "-c", provider, "-c", `model_provider="orion"`}
	return append(out, args[1:]...)
}
