package attack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// shapeTargets are the paths a model wrote in the security model's attack
// on "what runs code later" (relative to home), with the rule the daemon
// must refuse each one by. The repositories are made by git itself
// (gitRepos).
var shapeTargets = []struct{ path, rule string }{
	// Home: run at the next command, shell, login or start of a tool.
	{".local/bin/git", "path-dir"},
	{"bin/ls", "path-dir"},
	{".cargo/bin/cargo", "path-dir"},
	{"sdk/bin/node", "path-dir"}, // on the daemon's $PATH
	{".bash_aliases", "listed"},
	{".gemrc", "home-hidden"},
	{".yarnrc.yml", "home-hidden"},
	{".cargo/config.toml", "home-hidden"},
	{".m2/settings.xml", "home-hidden"},
	{".gradle/init.d/evil.gradle", "home-hidden"},
	{".local/lib/python3.12/site-packages/evil.pth", "home-hidden"},
	{".ipython/profile_default/startup/00-x.py", "home-hidden"},
	{".vim/plugin/x.vim", "home-hidden"},
	{".local/share/nvim/site/plugin/x.lua", "home-hidden"},
	{".config/emacs/init.el", "home-hidden"},
	{".local/share/applications/x.desktop", "home-hidden"},
	{".config/mimeapps.list", "home-hidden"},
	{".config/i3/config", "home-hidden"},
	{".config/sway/config", "home-hidden"},
	{".config/hypr/hyprland.conf", "home-hidden"},
	{".config/git/config", "listed"},
	{".claude/settings.json", "listed"},
	{".claude.json", "listed"},
	{".codex/config.toml", "listed"},
	{".cursor/mcp.json", "listed"},
	{".gemini/settings.json", "listed"},
	{".continue/config.json", "listed"},
	{".config/Code/User/settings.json", "home-hidden"},
	{".config/Code/User/tasks.json", "home-hidden"},
	{"Library/Application Support/Code/User/tasks.json", "listed"},
	// A project: run when an agent or an editor opens it.
	{"proj/.vscode/tasks.json", "agent-config"},
	{"proj/.vscode/settings.json", "agent-config"},
	{"proj/.idea/runConfigurations/x.xml", "agent-config"},
	{"proj/.envrc", "agent-config"},
	{"proj/.husky/pre-commit", "agent-config"},
	{"proj/.githooks/pre-commit", "agent-config"},
	{"proj/.claude/settings.json", "agent-config"},
	{"proj/.mcp.json", "agent-config"},
	{"proj/.codex/config.toml", "agent-config"},
	{"proj/.cursor/rules/x.mdc", "agent-config"},
	{"proj/.gemini/settings.json", "agent-config"},
	{"proj/.continue/config.json", "agent-config"},
	{"proj/.windsurf/rules.md", "agent-config"},
	{"proj/.devcontainer/devcontainer.json", "agent-config"},
	{"proj/.VSCode/tasks.json", "agent-config"},
	// Other agents, hook managers, editors and environment loaders.
	{"proj/.aider.conf.yml", "agent-config"},
	{"proj/.roo/mcp.json", "agent-config"},
	{"proj/.roomodes", "agent-config"},
	{"proj/.kilocode/mcp.json", "agent-config"},
	{"proj/.kiro/settings/mcp.json", "agent-config"},
	{"proj/.amazonq/mcp.json", "agent-config"},
	{"proj/.opencode/plugin/x.ts", "agent-config"},
	{"proj/opencode.json", "agent-config"},
	{"proj/opencode.jsonc", "agent-config"},
	{"proj/.qwen/settings.json", "agent-config"},
	{"proj/.clinerules/hooks/PreToolUse", "agent-config"},
	{"proj/.junie/mcp/mcp.json", "agent-config"},
	{"proj/.openhands/setup.sh", "agent-config"},
	{"proj/.amp/settings.json", "agent-config"},
	{"proj/crush.json", "agent-config"},
	{"proj/.continuerc.json", "agent-config"},
	{"proj/.github/hooks/hooks.json", "agent-config"},
	{"proj/lefthook.yml", "agent-config"},
	{"proj/.lefthook.yml", "agent-config"},
	{"proj/lefthook-local.yml", "agent-config"},
	{"proj/.pre-commit-config.yaml", "agent-config"},
	{"proj/.overcommit.yml", "agent-config"},
	{"proj/.simple-git-hooks.json", "agent-config"},
	{"proj/.theia/tasks.json", "agent-config"},
	{"proj/.fleet/run.json", "agent-config"},
	{"proj/proj.code-workspace", "agent-config"},
	{"proj/.run/dev.run.xml", "agent-config"},
	{"proj/.helix/languages.toml", "agent-config"},
	{"proj/.vimrc", "agent-config"},
	{"proj/.gvimrc", "agent-config"},
	{"proj/.lvimrc", "agent-config"},
	{"proj/.dir-locals.el", "agent-config"},
	{"proj/.devcontainer.json", "agent-config"},
	{"proj/mise.toml", "agent-config"},
	{"proj/.mise.toml", "agent-config"},
	{"proj/.autoenv.zsh", "agent-config"},
	{"proj/.env.leave", "agent-config"},
	{"proj/.project", "agent-config"},
	// Other version control systems' internals.
	{"proj/.hg/hgrc", "vcs-name"},
	{"proj/.sl/config", "vcs-name"},
	{"proj/.jj/repo/config.toml", "vcs-name"},
	{"proj/_darcs/prefs/defaults", "vcs-name"},
	// .git, in every case.
	{"proj/.git/hooks/pre-commit", "git-name"},
	{"proj/.git/config", "git-name"},
	{"proj/.GIT/hooks/x", "git-name"},
	{"proj/.Git/config", "git-name"},
	// Repositories by what they are: a --separate-git-dir target, one
	// inside its work tree (reached through the .git file's gitdir:), a
	// bare repository, a bare dotfiles repository.
	{"store/sep.git/hooks/pre-commit", "git-dir"},
	{"store/sep.git/config", "git-dir"},
	{"inner/.store/hooks/pre-commit", "git-link"},
	{"inner/.store/config", "git-link"},
	{"repos/tool.git/hooks/post-update", "git-dir"},
	{"repos/tool.git/config", "git-dir"},
	{".cfg/config", "git-dir"},
	{".cfg/hooks/pre-commit", "git-dir"},
}

// gitRepos makes, with git, the repositories shapeTargets names.
func gitRepos(t *testing.T, home string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	h := func(p string) string { return filepath.Join(home, p) }
	if err := os.MkdirAll(h("store"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", h("proj"))
	run("init", "-q", "--separate-git-dir", h("store/sep.git"), h("sep"))
	run("init", "-q", "--separate-git-dir", h("inner/.store"), h("inner"))
	run("init", "-q", "--bare", h("repos/tool.git"))
	run("init", "-q", "--bare", h(".cfg"))
	// The .git file points at its directory relatively, as a submodule's
	// does ("gitdir: ../.git/modules/x"), so the link rule must resolve it.
	if err := os.WriteFile(h("inner/.git"), []byte("gitdir: .store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// contentFor is content that passes validation for the path's type.
func contentFor(path string) string {
	switch filepath.Ext(path) {
	case ".json", ".jsonc", ".code-workspace":
		return "{}"
	case ".toml":
		return "a = 1"
	case ".yml", ".yaml":
		return "a: 1"
	case ".xml":
		return "<a/>"
	}
	return "x = 1"
}

// writeOp overwrites what exists and creates the rest.
func writeOp(path string) protocol.Operation {
	if _, err := os.Lstat(path); err == nil {
		return protocol.OpOverwrite
	}
	return protocol.OpCreate
}

func ruleOf(je *jsonrpc2.Error) string {
	if je == nil || je.Data == nil {
		return ""
	}
	var d struct {
		Rule string `json:"rule"`
	}
	json.Unmarshal(*je.Data, &d)
	return d.Rule
}

// Under the default configuration (the home directory as the root), every
// path of the attack on what runs code later is refused as protected_path
// naming its rule, and nothing is written; daemon.status lists every rule.
// Started again with --allow-protected naming each path, the same writes
// land.
func TestShapeProtectedRefusedThenAllowed(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitRepos(t, home)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "PATH=" + os.Getenv("PATH") + ":" + filepath.Join(home, "sdk/bin")}
	state := filepath.Join(home, ".local", "state", "orion")
	d := testdaemon.StartEnv(t, env, "--allow-root", home, "--state-dir", state)
	r := dial(t, d)
	var st protocol.StatusResult
	r.must(protocol.MethodDaemonStatus, nil, &st)
	var rules []string
	for _, pr := range st.ProtectedRules {
		rules = append(rules, pr.Rule)
		if pr.Why == "" || len(pr.Pattern) == 0 {
			t.Errorf("daemon.status rule %s has no reason or pattern", pr.Rule)
		}
	}
	if got, want := strings.Join(rules, ","), "oriond-files,listed,git-name,vcs-name,git-link,git-dir,git-partial,agent-config,path-dir,home-hidden"; got != want {
		t.Errorf("daemon.status protected_rules %s, want %s", got, want)
	}
	if !contains(st.ProtectedPaths, filepath.Join(home, "sdk/bin")) || !contains(st.ProtectedPaths, filepath.Join(home, ".*")) {
		t.Errorf("daemon.status protected_paths lacks the $PATH directory or the hidden entries: %v", st.ProtectedPaths)
	}

	before := map[string][]byte{}
	for _, tt := range shapeTargets {
		p := filepath.Join(home, tt.path)
		before[p], _ = os.ReadFile(p)
		je := r.write(protocol.BeginParams{TargetFile: p, Operation: writeOp(p)}, contentFor(p))
		if reason(je) != protocol.ReasonProtected || ruleOf(je) != tt.rule {
			t.Errorf("%s: %v (data %s), want %s by rule %s", tt.path, je, data(je), protocol.ReasonProtected, tt.rule)
			continue
		}
		if !strings.Contains(je.Message, "--allow-protected "+p) {
			t.Errorf("%s: the refusal does not name the setting: %s", tt.path, je.Message)
		}
		if now, _ := os.ReadFile(p); string(now) != string(before[p]) {
			t.Errorf("%s was written although refused", tt.path)
		}
	}
	// The same path spelled relative to a workspace.
	if je := r.write(protocol.BeginParams{TargetFile: ".Git/hooks/pre-push", WorkspaceRoot: filepath.Join(home, "proj"), Operation: protocol.OpCreate}, "x"); reason(je) != protocol.ReasonProtected {
		t.Errorf(".Git through a workspace: %v, want %s", je, protocol.ReasonProtected)
	}
	d.Stop()

	args := []string{"--allow-root", home, "--state-dir", state}
	for _, tt := range shapeTargets {
		args = append(args, "--allow-protected", filepath.Join(home, tt.path))
	}
	d = testdaemon.StartEnv(t, env, args...)
	r = dial(t, d)
	for _, tt := range shapeTargets {
		p := filepath.Join(home, tt.path)
		if je := r.write(protocol.BeginParams{TargetFile: p, Operation: writeOp(p)}, contentFor(p)); je != nil {
			t.Errorf("%s allowed with --allow-protected: %v (data %s)", tt.path, je, data(je))
			continue
		}
		if now, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(now), contentFor(p)) {
			t.Errorf("%s allowed: content %q, %v", tt.path, now, err)
		}
	}
	// Lifting one path lifts nothing beside it.
	if je := r.write(protocol.BeginParams{TargetFile: filepath.Join(home, ".local/bin/python3"), Operation: protocol.OpCreate}, "x"); reason(je) != protocol.ReasonProtected {
		t.Errorf("a neighbour of an allowed path: %v, want %s", je, protocol.ReasonProtected)
	}
}

func data(je *jsonrpc2.Error) string {
	if je == nil {
		return ""
	}
	return rawData(je)
}

// A session with a workspace_root writes only inside it: a plain session,
// a Codex-style envelope that moves a file out to ~/.local/bin/git (even
// with that path allowed by --allow-protected, so the workspace alone
// refuses it), and a transaction with one file outside are each refused as
// outside_workspace naming both paths, and nothing is written.
func TestOutsideWorkspace(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(home, "proj")
	for _, dir := range []string{filepath.Join(ws, "src"), filepath.Join(home, "other"), filepath.Join(home, ".local/bin")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tool := filepath.Join(ws, "tool.sh")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitBin := filepath.Join(home, ".local/bin/git")
	d := testdaemon.StartEnv(t, []string{"HOME=" + home}, "--allow-root", home, "--allow-protected", gitBin)
	r := dial(t, d)
	outside := func(what string, je *jsonrpc2.Error, path string) {
		t.Helper()
		if reason(je) != protocol.ReasonOutsideWorkspace {
			t.Errorf("%s: %v (data %s), want %s", what, je, data(je), protocol.ReasonOutsideWorkspace)
			return
		}
		var dd protocol.ErrorData
		json.Unmarshal(*je.Data, &dd)
		if dd.Path != path || dd.WorkspaceRoot != ws || !strings.Contains(je.Message, path) || !strings.Contains(je.Message, ws) {
			t.Errorf("%s: data %+v, message %q: want both %s and %s named", what, dd, je.Message, path, ws)
		}
	}

	// A plain session: absolute, relative with "..", and through a
	// symlink in the workspace that leads to the rest of the root.
	if err := os.Symlink(filepath.Join(home, "other"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ target, path string }{
		{gitBin, gitBin},
		{filepath.Join(home, "other/x.txt"), filepath.Join(home, "other/x.txt")},
		{"../other/y.txt", filepath.Join(home, "other/y.txt")},
		{"link/z.txt", filepath.Join(home, "other/z.txt")},
	} {
		var b protocol.BeginResult
		je := r.call(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: tc.target, WorkspaceRoot: ws, Operation: protocol.OpCreate}, &b)
		outside("session "+tc.target, je, tc.path)
	}
	// Inside, the same session is fine.
	if je := r.write(protocol.BeginParams{TargetFile: "src/ok.txt", WorkspaceRoot: ws, Operation: protocol.OpCreate}, "ok"); je != nil {
		t.Fatalf("inside the workspace: %v", je)
	}

	// A Codex envelope moving tool.sh to ~/.local/bin/git, by a relative
	// and by an absolute path, and one adding a file there.
	for _, patch := range []string{
		"*** Begin Patch\n*** Update File: tool.sh\n*** Move to: ../.local/bin/git\n@@\n-echo tool\n+echo pwned\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: tool.sh\n*** Move to: " + gitBin + "\n@@\n-echo tool\n+echo pwned\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: tool.sh\n@@\n-echo tool\n+echo edited\n*** Add File: " + gitBin + "\n+#!/bin/sh\n+echo pwned\n*** End Patch\n",
	} {
		var b protocol.BeginResult
		r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: "tool.sh", WorkspaceRoot: ws, Operation: protocol.OpEdit}, &b)
		r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: patch + b.EndMarker + "\n"}, nil)
		je := r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil)
		outside("envelope", je, gitBin)
	}
	if now, _ := os.ReadFile(tool); string(now) != "#!/bin/sh\necho tool\n" {
		t.Errorf("tool.sh changed: %q", now)
	}

	// A transaction: one file inside, one outside.
	var tx protocol.TxBeginResult
	je := r.call(protocol.MethodTxBegin, protocol.TxBeginParams{WorkspaceRoot: ws, Files: []protocol.BeginParams{
		{TargetFile: "src/a.txt", Operation: protocol.OpCreate},
		{TargetFile: gitBin, Operation: protocol.OpCreate},
	}}, &tx)
	outside("transaction", je, gitBin)

	for _, p := range []string{gitBin, filepath.Join(home, "other/x.txt"), filepath.Join(home, "other/y.txt"), filepath.Join(home, "other/z.txt"), filepath.Join(ws, "src/a.txt")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// A directory of the workspace swapped, after begin, for a symlink to
	// the rest of the root: the finalize is refused, nothing lands there.
	b, err := r.stream(protocol.BeginParams{TargetFile: "src/late.txt", WorkspaceRoot: ws, Operation: protocol.OpCreate}, "late", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "src"), filepath.Join(ws, "src.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "other"), filepath.Join(ws, "src")); err != nil {
		t.Fatal(err)
	}
	je = r.call(protocol.MethodSessionFinalize, protocol.FinalizeParams{SessionID: b.SessionID, Force: true}, nil)
	outside("swapped after begin", je, filepath.Join(home, "other/late.txt"))
	if _, err := os.Lstat(filepath.Join(home, "other/late.txt")); err == nil {
		t.Error("a finalize wrote through a directory swapped for a symlink out of the workspace")
	}

	// Without a workspace_root the allowed path is writable: the refusal
	// above was the workspace's, not the protection's.
	if je := r.write(protocol.BeginParams{TargetFile: gitBin, Operation: protocol.OpCreate}, "#!/bin/sh"); je != nil {
		t.Errorf("allowed path without a workspace: %v", je)
	}
}
