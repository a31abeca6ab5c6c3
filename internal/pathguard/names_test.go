package pathguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// projectNames are the files in a project that start a command the next
// time an agent, an editor, a hook manager, an environment loader or a
// version control system opens the folder, enters it or commits in it,
// with the rule that refuses each, where it matched (relative to the
// project) and the name whose allowance lifts it everywhere.
var projectNames = []struct{ path, rule, at, name string }{
	// Agents.
	{".aider.conf.yml", pathguard.RuleAgentConfig, ".aider.conf.yml", ".aider.conf.yml"},
	{".aider.model.settings.yml", pathguard.RuleAgentConfig, ".aider.model.settings.yml", ".aider.model.settings.yml"},
	{".roo/mcp.json", pathguard.RuleAgentConfig, ".roo", ".roo"},
	{".roomodes", pathguard.RuleAgentConfig, ".roomodes", ".roomodes"},
	{".kilocode/mcp.json", pathguard.RuleAgentConfig, ".kilocode", ".kilocode"},
	{".kilocodemodes", pathguard.RuleAgentConfig, ".kilocodemodes", ".kilocodemodes"},
	{".kiro/settings/mcp.json", pathguard.RuleAgentConfig, ".kiro", ".kiro"},
	{".kiro/hooks/lint.kiro.hook", pathguard.RuleAgentConfig, ".kiro", ".kiro"},
	{".amazonq/mcp.json", pathguard.RuleAgentConfig, ".amazonq", ".amazonq"},
	{".opencode/plugin/x.ts", pathguard.RuleAgentConfig, ".opencode", ".opencode"},
	{"opencode.json", pathguard.RuleAgentConfig, "opencode.json", "opencode.json"},
	{"opencode.jsonc", pathguard.RuleAgentConfig, "opencode.jsonc", "opencode.jsonc"},
	{".qwen/settings.json", pathguard.RuleAgentConfig, ".qwen", ".qwen"},
	{".clinerules/hooks/PreToolUse", pathguard.RuleAgentConfig, ".clinerules", ".clinerules"},
	{".junie/mcp/mcp.json", pathguard.RuleAgentConfig, ".junie", ".junie"},
	{".openhands/setup.sh", pathguard.RuleAgentConfig, ".openhands", ".openhands"},
	{".amp/settings.json", pathguard.RuleAgentConfig, ".amp", ".amp"},
	{"crush.json", pathguard.RuleAgentConfig, "crush.json", "crush.json"},
	{".crush.json", pathguard.RuleAgentConfig, ".crush.json", ".crush.json"},
	{".continuerc.json", pathguard.RuleAgentConfig, ".continuerc.json", ".continuerc.json"},
	{".github/hooks/hooks.json", pathguard.RuleAgentConfig, ".github/hooks", ".github/hooks"},
	// Hook managers.
	{"lefthook.yml", pathguard.RuleAgentConfig, "lefthook.yml", "lefthook.yml"},
	{".lefthook.yml", pathguard.RuleAgentConfig, ".lefthook.yml", ".lefthook.yml"},
	{"lefthook-local.yml", pathguard.RuleAgentConfig, "lefthook-local.yml", "lefthook-local.yml"},
	{".lefthook-local.toml", pathguard.RuleAgentConfig, ".lefthook-local.toml", ".lefthook-local.toml"},
	{".config/lefthook.jsonc", pathguard.RuleAgentConfig, ".config/lefthook.jsonc", "lefthook.jsonc"},
	{".lefthook/pre-commit/check.sh", pathguard.RuleAgentConfig, ".lefthook", ".lefthook"},
	{".pre-commit-config.yaml", pathguard.RuleAgentConfig, ".pre-commit-config.yaml", ".pre-commit-config.yaml"},
	{".overcommit.yml", pathguard.RuleAgentConfig, ".overcommit.yml", ".overcommit.yml"},
	{".git-hooks/pre_commit/check.rb", pathguard.RuleAgentConfig, ".git-hooks", ".git-hooks"},
	{".simple-git-hooks.json", pathguard.RuleAgentConfig, ".simple-git-hooks.json", ".simple-git-hooks.json"},
	{"simple-git-hooks.cjs", pathguard.RuleAgentConfig, "simple-git-hooks.cjs", "simple-git-hooks.cjs"},
	// Editors.
	{".theia/tasks.json", pathguard.RuleAgentConfig, ".theia", ".theia"},
	{".fleet/run.json", pathguard.RuleAgentConfig, ".fleet", ".fleet"},
	{"proj.code-workspace", pathguard.RuleAgentConfig, "proj.code-workspace", "proj.code-workspace"},
	{".run/dev.run.xml", pathguard.RuleAgentConfig, ".run", ".run"},
	{"proj.ipr", pathguard.RuleAgentConfig, "proj.ipr", "proj.ipr"},
	{".helix/languages.toml", pathguard.RuleAgentConfig, ".helix", ".helix"},
	{".vimrc", pathguard.RuleAgentConfig, ".vimrc", ".vimrc"},
	{".gvimrc", pathguard.RuleAgentConfig, ".gvimrc", ".gvimrc"},
	{".lvimrc", pathguard.RuleAgentConfig, ".lvimrc", ".lvimrc"},
	{".dir-locals.el", pathguard.RuleAgentConfig, ".dir-locals.el", ".dir-locals.el"},
	{".dir-locals-2.el", pathguard.RuleAgentConfig, ".dir-locals-2.el", ".dir-locals-2.el"},
	{".devcontainer.json", pathguard.RuleAgentConfig, ".devcontainer.json", ".devcontainer.json"},
	{".project", pathguard.RuleAgentConfig, ".project", ".project"},
	{".externalToolBuilders/build.launch", pathguard.RuleAgentConfig, ".externalToolBuilders", ".externalToolBuilders"},
	// Environment loaders.
	{"mise.toml", pathguard.RuleAgentConfig, "mise.toml", "mise.toml"},
	{".mise.toml", pathguard.RuleAgentConfig, ".mise.toml", ".mise.toml"},
	{"mise.local.toml", pathguard.RuleAgentConfig, "mise.local.toml", "mise.local.toml"},
	{".mise/config.toml", pathguard.RuleAgentConfig, ".mise", ".mise"},
	{".config/mise/config.toml", pathguard.RuleAgentConfig, ".config/mise", ".config/mise"},
	{".autoenv.zsh", pathguard.RuleAgentConfig, ".autoenv.zsh", ".autoenv.zsh"},
	{".autoenv_leave.zsh", pathguard.RuleAgentConfig, ".autoenv_leave.zsh", ".autoenv_leave.zsh"},
	{".env.leave", pathguard.RuleAgentConfig, ".env.leave", ".env.leave"},
	// Other version control systems' internals, in any case.
	{".hg/hgrc", pathguard.RuleVCSName, ".hg", ".hg"},
	{".HG/hgrc", pathguard.RuleVCSName, ".HG", ".hg"},
	{".sl/config", pathguard.RuleVCSName, ".sl", ".sl"},
	{".jj/repo/config.toml", pathguard.RuleVCSName, ".jj", ".jj"},
	{"_darcs/prefs/defaults", pathguard.RuleVCSName, "_darcs", "_darcs"},
}

// Every code-running project file is refused in a project under any root,
// by its rule, naming the setting that lifts it; the person lifts it by
// the path, by the protected entry it matched, or by the name everywhere.
func TestProjectNamesRefusedThenAllowed(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := pathguard.Protection{Default: pathguard.DefaultProtected("")}
	refused, err := pathguard.NewProtected([]string{root}, base)
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(root, "proj")
	for _, tt := range projectNames {
		t.Run(tt.path, func(t *testing.T) {
			path := filepath.Join(proj, filepath.FromSlash(tt.path))
			_, err := refused.Resolve(path, "")
			var pe *pathguard.Error
			if !errors.As(err, &pe) || pe.Reason != pathguard.ReasonProtected || pe.Rule != tt.rule {
				t.Fatalf("Resolve(%s) = %v, want %s by rule %s", tt.path, err, pathguard.ReasonProtected, tt.rule)
			}
			if !strings.Contains(pe.Msg, "--allow-protected "+path) {
				t.Errorf("message %q does not name the path that lifts it", pe.Msg)
			}
			// A name of one component is offered for every project; the
			// command line reads one with a slash as a path.
			if hint := "--allow-protected " + tt.name + " "; strings.Contains(tt.name, "/") == strings.Contains(pe.Msg, hint) {
				t.Errorf("message %q: offering %q should be %v", pe.Msg, hint, !strings.Contains(tt.name, "/"))
			}
			for how, allowed := range map[string]string{"Path": path, "At": filepath.Join(proj, filepath.FromSlash(tt.at)), "Name": tt.name} {
				g, err := pathguard.NewProtected([]string{root}, with(base, allowed))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Resolve(path, ""); err != nil {
					t.Errorf("allowed by %s (%s): Resolve(%s) = %v", how, allowed, tt.path, err)
				}
			}
		})
	}
	// Look-alikes stay writable: a document about a tool is not its
	// configuration, and hooks/ in a source tree is not a hook directory.
	for _, ok := range []string{"docs/lefthook.md", "lefthook.yml.example", "src/hooks/useThing.ts", ".github/workflows/ci.yml",
		"docs/vimrc.md", "mise/README.md", "config/mise.md", "aider.md", "hg/notes.txt", "opencode.md", ".roo.md", ".env", ".env.example", "project.md"} {
		if _, err := refused.Resolve(filepath.Join(proj, filepath.FromSlash(ok)), ""); err != nil {
			t.Errorf("Resolve(%s) = %v, want it allowed", ok, err)
		}
	}
	// Allowing a pattern's name lifts that file only.
	g, err := pathguard.NewProtected([]string{root}, with(base, ".aider.conf.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(filepath.Join(proj, ".aider.model.settings.yml"), ""); !isReason(err, pathguard.ReasonProtected) {
		t.Errorf("a neighbour of an allowed .aider file: %v, want %s", err, pathguard.ReasonProtected)
	}
}

// Every protected name is in the reference a person reads
// (docs/protected-paths.md), as a file or as a directory; lefthook's and
// simple-git-hooks' are listed by their first name and extensions.
func TestProtectedNamesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "protected-paths.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pathguard.DefaultNames() {
		if ext := filepath.Ext(n); ext != n && (strings.Contains(n, "lefthook") || strings.Contains(n, "simple-git-hooks")) {
			n = strings.TrimSuffix(n, filepath.Ext(n)) + ".yml"
			if strings.Contains(n, "simple-git-hooks") {
				n = strings.TrimSuffix(n, ".yml") + ".*"
			}
		}
		if !strings.Contains(string(doc), "`"+n+"`") && !strings.Contains(string(doc), "`"+n+"/`") {
			t.Errorf("%s is protected but not in docs/protected-paths.md", n)
		}
	}
}
