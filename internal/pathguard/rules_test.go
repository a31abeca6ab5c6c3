package pathguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// homeTree builds a home directory holding the repositories the git rules
// recognise by what they are, not by their name:
//
//	proj/.git/                      an ordinary repository's .git
//	sep/.git                        file: gitdir: <home>/store/sep.git
//	store/sep.git/{HEAD,objects,refs}   a --separate-git-dir target
//	repos/tool.git/{HEAD,objects,refs,hooks}  a bare repository
//	.cfg/{HEAD,objects,refs}        a bare dotfiles repository
//	wt/.git                         file: gitdir: .dotgit (not yet a repository)
//	admin/{HEAD,commondir}          a worktree's administrative directory
func homeTree(t *testing.T) string {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proj/.git/hooks", "proj/src", "proj/docs", "sep", "wt/.dotgit", "admin",
		"store/sep.git/objects", "store/sep.git/refs", "repos/tool.git/objects", "repos/tool.git/refs", "repos/tool.git/hooks",
		".cfg/objects", ".cfg/refs"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"sep/.git":              "gitdir: " + filepath.Join(home, "store/sep.git") + "\n",
		"wt/.git":               "gitdir: .dotgit\n",
		"store/sep.git/HEAD":    "ref: refs/heads/main\n",
		"repos/tool.git/HEAD":   "ref: refs/heads/main\n",
		".cfg/HEAD":             "ref: refs/heads/main\n",
		"admin/HEAD":            "ref: refs/heads/wt\n",
		"admin/commondir":       "../..\n",
		"proj/docs/HEAD":        "a file named HEAD in a directory that is no repository\n",
		"proj/src/main.go":      "package main\n",
		"proj/.git/HEAD":        "ref: refs/heads/main\n",
		"store/sep.git/config":  "[core]\n",
		"repos/tool.git/config": "[core]\n\tbare = true\n",
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(home, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// Every path the attacks of the security model wrote, from the home
// directory and from a project, is refused under the default protection
// with the rule that names why; each is accepted once the person allows
// it, by the path itself, by the protected directory the rule matched, or
// (for names) by the name.
func TestProtectedByShape(t *testing.T) {
	home := homeTree(t)
	h := func(p string) string { return filepath.Join(home, filepath.FromSlash(p)) }
	base := pathguard.Protection{
		Always:   []string{h(".local/state/orion"), h(".config/orion")},
		Default:  pathguard.DefaultProtected(home),
		Home:     home,
		PathDirs: pathguard.PathDirs("/usr/bin:"+h("sdk/bin")+":relative/bin", home),
	}
	tests := []struct {
		path string
		rule string
		// at is the protected path the rule matched, whose allowance
		// lifts it ("" = the path itself).
		at string
		// name, when set, is the name whose allowance lifts it everywhere.
		name string
	}{
		// Home: what runs at the next command, shell or start of a tool.
		{path: ".local/bin/git", rule: pathguard.RulePathDir, at: ".local/bin"},
		{path: "bin/ls", rule: pathguard.RulePathDir, at: "bin"},
		{path: "go/bin/gopls", rule: pathguard.RulePathDir, at: "go/bin"},
		{path: "sdk/bin/node", rule: pathguard.RulePathDir, at: "sdk/bin"},
		{path: ".cargo/bin/cargo", rule: pathguard.RulePathDir, at: ".cargo/bin"},
		{path: ".bash_aliases", rule: pathguard.RuleListed},
		{path: ".gemrc", rule: pathguard.RuleHomeHidden},
		{path: ".yarnrc.yml", rule: pathguard.RuleHomeHidden},
		{path: ".cargo/config.toml", rule: pathguard.RuleHomeHidden, at: ".cargo"},
		{path: ".m2/settings.xml", rule: pathguard.RuleHomeHidden, at: ".m2"},
		{path: ".gradle/init.d/evil.gradle", rule: pathguard.RuleHomeHidden, at: ".gradle"},
		{path: ".local/lib/python3.12/site-packages/evil.pth", rule: pathguard.RuleHomeHidden, at: ".local"},
		{path: ".ipython/profile_default/startup/00-x.py", rule: pathguard.RuleHomeHidden, at: ".ipython"},
		{path: ".vim/plugin/x.vim", rule: pathguard.RuleHomeHidden, at: ".vim"},
		{path: ".local/share/nvim/site/plugin/x.lua", rule: pathguard.RuleHomeHidden, at: ".local"},
		{path: ".config/emacs/init.el", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".local/share/applications/x.desktop", rule: pathguard.RuleHomeHidden, at: ".local"},
		{path: ".config/mimeapps.list", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".config/i3/config", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".config/sway/config", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".config/hypr/hyprland.conf", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".config/git/config", rule: pathguard.RuleListed, at: ".config/git"},
		{path: ".claude/settings.json", rule: pathguard.RuleListed, at: ".claude"},
		{path: ".claude.json", rule: pathguard.RuleListed},
		{path: ".codex/config.toml", rule: pathguard.RuleListed, at: ".codex"},
		{path: ".cursor/mcp.json", rule: pathguard.RuleListed, at: ".cursor"},
		{path: ".gemini/settings.json", rule: pathguard.RuleListed, at: ".gemini"},
		{path: ".continue/config.json", rule: pathguard.RuleListed, at: ".continue"},
		{path: ".config/Code/User/settings.json", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: ".config/Code/User/tasks.json", rule: pathguard.RuleHomeHidden, at: ".config"},
		{path: "Library/Application Support/Code/User/tasks.json", rule: pathguard.RuleListed, at: "Library/Application Support/Code/User"},
		{path: "Library/Application Support/Claude/claude_desktop_config.json", rule: pathguard.RuleListed, at: "Library/Application Support/Claude"},
		// A project: what an agent or an editor runs when it opens it.
		{path: "proj/.vscode/tasks.json", rule: pathguard.RuleAgentConfig, at: "proj/.vscode", name: ".vscode"},
		{path: "proj/.vscode/settings.json", rule: pathguard.RuleAgentConfig, at: "proj/.vscode", name: ".vscode"},
		{path: "proj/.idea/runConfigurations/x.xml", rule: pathguard.RuleAgentConfig, at: "proj/.idea", name: ".idea"},
		{path: "proj/.envrc", rule: pathguard.RuleAgentConfig, name: ".envrc"},
		{path: "proj/.husky/pre-commit", rule: pathguard.RuleAgentConfig, at: "proj/.husky", name: ".husky"},
		{path: "proj/.githooks/pre-commit", rule: pathguard.RuleAgentConfig, at: "proj/.githooks", name: ".githooks"},
		{path: "proj/.claude/settings.json", rule: pathguard.RuleAgentConfig, at: "proj/.claude", name: ".claude"},
		{path: "proj/.mcp.json", rule: pathguard.RuleAgentConfig, name: ".mcp.json"},
		{path: "proj/.codex/config.toml", rule: pathguard.RuleAgentConfig, at: "proj/.codex", name: ".codex"},
		{path: "proj/.cursor/rules/x.mdc", rule: pathguard.RuleAgentConfig, at: "proj/.cursor", name: ".cursor"},
		{path: "proj/.gemini/settings.json", rule: pathguard.RuleAgentConfig, at: "proj/.gemini", name: ".gemini"},
		{path: "proj/.continue/config.json", rule: pathguard.RuleAgentConfig, at: "proj/.continue", name: ".continue"},
		{path: "proj/.windsurf/rules.md", rule: pathguard.RuleAgentConfig, at: "proj/.windsurf", name: ".windsurf"},
		{path: "proj/.devcontainer/devcontainer.json", rule: pathguard.RuleAgentConfig, at: "proj/.devcontainer", name: ".devcontainer"},
		{path: "proj/.VSCode/tasks.json", rule: pathguard.RuleAgentConfig, at: "proj/.VSCode", name: ".vscode"},
		// .git in every spelling a case-insensitive file system (or
		// HFS+'s ignored code points, or Windows' trailing dot) maps to it.
		{path: "proj/.git/hooks/pre-commit", rule: pathguard.RuleGitName, at: "proj/.git", name: ".git"},
		{path: "proj/.git/config", rule: pathguard.RuleGitName, at: "proj/.git", name: ".git"},
		{path: "proj/.GIT/hooks/x", rule: pathguard.RuleGitName, at: "proj/.GIT", name: ".git"},
		{path: "proj/.Git/config", rule: pathguard.RuleGitName, at: "proj/.Git", name: ".git"},
		{path: "proj/.g\u200cit/config", rule: pathguard.RuleGitName, at: "proj/.g\u200cit", name: ".git"},
		{path: "proj/.git./config", rule: pathguard.RuleGitName, at: "proj/.git.", name: ".git"},
		{path: "sep/.git", rule: pathguard.RuleGitName, at: "sep/.git", name: ".git"},
		// Git directories by what they hold, whatever their name.
		{path: "store/sep.git/hooks/pre-commit", rule: pathguard.RuleGitDir, at: "store/sep.git"},
		{path: "store/sep.git/config", rule: pathguard.RuleGitDir, at: "store/sep.git"},
		{path: "repos/tool.git/hooks/post-update", rule: pathguard.RuleGitDir, at: "repos/tool.git"},
		{path: "repos/tool.git/config", rule: pathguard.RuleGitDir, at: "repos/tool.git"},
		{path: ".cfg/config", rule: pathguard.RuleGitDir, at: ".cfg"},
		{path: ".cfg/hooks/pre-commit", rule: pathguard.RuleGitDir, at: ".cfg"},
		{path: "admin/HEAD", rule: pathguard.RuleGitDir, at: "admin"},
		// The directory a .git file points to, before it is a repository.
		{path: "wt/.dotgit/hooks/pre-commit", rule: pathguard.RuleGitLink, at: "wt/.dotgit"},
		{path: "wt/.dotgit/config", rule: pathguard.RuleGitLink, at: "wt/.dotgit"},
	}
	refused, err := pathguard.NewProtected([]string{home}, base)
	if err != nil {
		t.Fatal(err)
	}
	// One request's scope for every case: what it keeps of one path's
	// directories must not hide another path's repository.
	scope := pathguard.NewScope()
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			path := h(tt.path)
			at := path
			if tt.at != "" {
				at = h(tt.at)
			}
			_, err := refused.Resolve(path, "")
			var pe *pathguard.Error
			if !errors.As(err, &pe) || pe.Reason != pathguard.ReasonProtected {
				t.Fatalf("Resolve(%s) = %v, want %s", path, err, pathguard.ReasonProtected)
			}
			if _, err := refused.ResolveIn(scope, path, ""); !isReason(err, pathguard.ReasonProtected) {
				t.Fatalf("ResolveIn(%s) in a request's scope = %v, want %s", path, err, pathguard.ReasonProtected)
			}
			if pe.Rule != tt.rule {
				t.Errorf("rule %s (%v), want %s", pe.Rule, err, tt.rule)
			}
			for _, s := range []string{"rule " + tt.rule, "--allow-protected " + path} {
				if !strings.Contains(pe.Msg, s) {
					t.Errorf("message %q does not say %q", pe.Msg, s)
				}
			}
			allowances := map[string]pathguard.Protection{"Path": with(base, path), "At": with(base, at)}
			if tt.name != "" {
				allowances["Name"] = with(base, tt.name)
			}
			for how, p := range allowances {
				g, err := pathguard.NewProtected([]string{home}, p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Resolve(path, ""); err != nil && !isReason(err, pathguard.ReasonIsDirectory) {
					t.Errorf("allowed by %s (%s): Resolve(%s) = %v", how, p.Allowed, path, err)
				}
			}
			// An allowed root at the protected path lifts it too: the
			// person named it.
			if tt.rule != pathguard.RuleListed || tt.at != "" {
				if err := os.MkdirAll(at, 0o755); err == nil {
					g, err := pathguard.NewProtected([]string{home, at}, base)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := g.Resolve(path, ""); err != nil && !isReason(err, pathguard.ReasonIsDirectory) {
						t.Errorf("--allow-root %s: Resolve(%s) = %v", at, path, err)
					}
				}
			}
		})
	}

	// Ordinary project files stay writable, including look-alikes.
	for _, ok := range []string{"proj/src/main.go", "proj/src/new.go", "proj/.gitignore", "proj/.gitattributes", "proj/.github/workflows/ci.yml",
		"proj/docs/HEAD", "proj/docs/notes.md", "notes.md", "binaries/x", "bin2/x", "sep/README.md", "wt/main.go", "repos/README.md"} {
		if _, err := refused.Resolve(h(ok), ""); err != nil {
			t.Errorf("Resolve(%s) = %v, want it allowed", ok, err)
		}
	}
	// The home directory as a root lifts nothing; a neighbour of an
	// allowed file stays protected.
	g, err := pathguard.NewProtected([]string{home}, with(base, h(".cargo/config.toml")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(h(".cargo/credentials.toml"), ""); !isReason(err, pathguard.ReasonProtected) {
		t.Errorf("neighbour of an allowed file: %v, want %s", err, pathguard.ReasonProtected)
	}
	// Allowing the name .git lifts a .git directory's shape too, not a
	// bare repository's.
	g, err = pathguard.NewProtected([]string{home}, with(base, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(h("proj/.git/hooks/pre-commit"), ""); err != nil {
		t.Errorf("allowed .git: %v", err)
	}
	if _, err := g.Resolve(h("repos/tool.git/config"), ""); !isReason(err, pathguard.ReasonProtected) {
		t.Errorf("allowed .git, bare repository: %v, want %s", err, pathguard.ReasonProtected)
	}
	// oriond's own files are never lifted.
	if err := os.MkdirAll(h(".config/orion"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err = pathguard.NewProtected([]string{home, h(".config/orion")}, with(base, h(".config/orion/oriond.toml")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(h(".config/orion/oriond.toml"), ""); !isReason(err, pathguard.ReasonProtected) {
		t.Errorf("oriond's config allowed: %v, want %s", err, pathguard.ReasonProtected)
	}
}

// Every rule shows in Rules, the listing behind config print and
// daemon.status.
func TestRulesListed(t *testing.T) {
	home := homeTree(t)
	p := pathguard.Protection{Always: []string{filepath.Join(home, "state")}, Default: pathguard.DefaultProtected(home),
		Home: home, PathDirs: pathguard.PathDirs("", home)}
	var got []string
	for _, r := range p.Rules() {
		if r.Why == "" || len(r.Pattern) == 0 {
			t.Errorf("rule %s: no reason or no pattern", r.Rule)
		}
		got = append(got, r.Rule)
	}
	want := []string{pathguard.RuleOriond, pathguard.RuleListed, pathguard.RuleGitName, pathguard.RuleVCSName, pathguard.RuleGitLink, pathguard.RuleGitDir,
		pathguard.RuleGitPartial, pathguard.RuleAgentConfig, pathguard.RulePathDir, pathguard.RuleHomeHidden}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rules %v, want %v", got, want)
	}
}

// A workspace_root refusal is the same, word for word but for the path as
// given, whether the directory outside the roots exists, is a file, is
// missing, or is reached through a symlink (whose target is not named).
func TestWorkspaceErrorsRevealNothing(t *testing.T) {
	base := tree(t)
	root := filepath.Join(base, "a")
	g, err := pathguard.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"a/to_secret_dir": "../outside", "a/to_missing": "../outside/nope", "a/to_etc": "/etc"} {
		if err := os.Symlink(to, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Base(base)
	workspaces := []string{
		filepath.Join(base, "outside"),              // exists
		filepath.Join(base, "outside/secret.txt"),   // a file
		filepath.Join(base, "outside/nope"),         // missing
		filepath.Join(base, "nope/deeper"),          // missing parent
		filepath.Join(root, "to_secret_dir"),        // a link to an existing directory outside
		filepath.Join(root, "to_missing"),           // a link to a missing one
		filepath.Join(root, "to_etc"),               // a link to /etc
		filepath.Join(root, "to_secret_dir/x"),      // below such a link, missing
		root + "/../outside/../a",                   // lexically fine, physically through outside
		root + "/../nope/../a/sub",                  // the same through a missing directory
		filepath.Join(base, "../"+other+"/outside"), // through the parent
	}
	var first string
	for _, ws := range workspaces {
		_, err := g.Resolve("x.txt", ws)
		var pe *pathguard.Error
		if !errors.As(err, &pe) || pe.Reason != pathguard.ReasonWorkspaceNotAllowed {
			t.Errorf("workspace %s: %v, want %s", ws, err, pathguard.ReasonWorkspaceNotAllowed)
			continue
		}
		// The paths the message may name (the workspace as given and the
		// allowed root) are taken out: the temp directory's own name may
		// hold any word.
		msg := strings.ReplaceAll(strings.ReplaceAll(pe.Msg, ws, "WS"), root, "ROOT")
		for _, leak := range []string{"outside", "/etc", "nope", "exist", "directory"} {
			if strings.Contains(msg, leak) {
				t.Errorf("workspace %s: message %q says %q", ws, pe.Msg, leak)
			}
		}
		if first == "" {
			first = msg
		} else if msg != first {
			t.Errorf("workspace %s: message %q differs from %q", ws, msg, first)
		}
	}
	// Inside the roots, a missing workspace is still named as missing.
	if _, err := g.Resolve("x.txt", filepath.Join(root, "nope")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing workspace inside the roots: %v", err)
	}
}

func with(p pathguard.Protection, allowed ...string) pathguard.Protection {
	p.Allowed = allowed
	return p
}

func isReason(err error, reason string) bool {
	var pe *pathguard.Error
	return errors.As(err, &pe) && pe.Reason == reason
}

// Whatever a client sends, Protected never panics, and a path with a
// component that is .git in any case is always protected.
func FuzzProtected(f *testing.F) {
	home, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	g, err := pathguard.NewProtected([]string{home}, pathguard.Protection{Default: pathguard.DefaultProtected(home), Home: home,
		PathDirs: pathguard.PathDirs("", home)})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"proj/.GIT/hooks/x", "a/.g\u200cit/config", ".local/bin/x", "p/.vscode/tasks.json", "x/y", "..", "p/.git.", "\xff/.Git"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.ContainsRune(rel, 0) || len(rel) > 1024 {
			return
		}
		p := filepath.Join(home, rel)
		if !pathguard.Within(home, p) {
			return
		}
		m, ok := g.Protected(p)
		for _, c := range strings.Split(strings.TrimPrefix(p, home), "/") {
			if strings.EqualFold(c, ".git") && !ok {
				t.Fatalf("Protected(%q) = false with a .git component", p)
			}
		}
		if ok && m.Rule == "" {
			t.Fatalf("Protected(%q) matched no rule", p)
		}
	})
}
