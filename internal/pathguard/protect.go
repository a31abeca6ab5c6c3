package pathguard

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Protection says which paths inside the allowed roots are refused anyway,
// because writing them would widen what the model can do: run code later,
// read secrets, or change the daemon itself.
//
// Paths are protected by rules, each with a name (the Rule constants) that
// refusals, `oriond config print` and daemon.status show. Most rules are
// shapes, not lists: a list of files under a home directory always misses
// one, while "every hidden entry of home" does not.
type Protection struct {
	// Always are absolute paths refused whatever else is configured: the
	// daemon's own state directory, config, socket directory and spool. A
	// model that could write them could lift every other limit at the next
	// start (allow-root = ["/"]) or corrupt the journal it is writing into.
	Always []string
	// Default are refused unless the person allows them (see Allowed):
	// absolute entries (DefaultProtected: files that run code or hold
	// credentials, each named for a reason the hidden-entry rule does not
	// give) and names matched, in any case, against every path component
	// (".git", and the agents' and editors' configuration: DefaultNames).
	Default []string
	// Home turns on the rules of the home directory: every hidden entry of
	// Home (RuleHomeHidden) and every directory of PathDirs inside Home
	// (RulePathDir) is protected. Empty: neither rule applies.
	Home string
	// PathDirs are the directories of $PATH (and the usual ones, see
	// DefaultPathDirs); only those inside Home are protected.
	PathDirs []string
	// Allowed lifts every rule but Always: an allowed path A lets a path P
	// through a rule that matched at the protected path E (the hidden
	// entry, the listed entry, the .git directory, the git directory...)
	// when A lies at or below E and P at or below A, so allowing ~/.ssh
	// lifts all of ~/.ssh and allowing ~/.ssh/config only that file. A bare
	// name (".git", ".vscode") lifts that name's rule everywhere. The
	// allowed roots count as allowed paths: a root at or inside a protected
	// directory was named explicitly. The home directory as a root (the
	// default root) lifts nothing, since it is never at or below a hidden
	// entry of itself.
	Allowed []string
}

// Rule names: stable strings shown in refusals (data.rule), `oriond
// config print` and daemon.status.
const (
	// RuleOriond: oriond's own state, spool, socket and config. Never
	// lifted.
	RuleOriond = "oriond-files"
	// RuleListed: an entry of the per-path list (DefaultProtected).
	RuleListed = "listed"
	// RuleHomeHidden: a hidden entry of the home directory (~/.*).
	RuleHomeHidden = "home-hidden"
	// RulePathDir: a directory of $PATH inside the home directory.
	RulePathDir = "path-dir"
	// RuleGitName: a directory or file named .git, in any case and with
	// the characters macOS ignores in names (".GIT", ".Git", ".g\u200cit").
	RuleGitName = "git-name"
	// RuleVCSName: a directory named as another version control system's
	// internals (.hg, .sl, .jj, _darcs), in any case.
	RuleVCSName = "vcs-name"
	// RuleGitLink: the directory a .git file points to (gitdir:), as
	// worktrees and submodules have.
	RuleGitLink = "git-link"
	// RuleGitDir: a directory that holds a repository's internals (HEAD and
	// objects/ and refs/, or HEAD and commondir), whatever its name: a bare
	// repository, a --separate-git-dir target, a dotfiles repository.
	RuleGitDir = "git-dir"
	// RuleGitPartial: a piece of a repository's internals (HEAD, objects/,
	// refs/, packed-refs, commondir, config, hooks/, info/) written into a
	// directory that already holds another that marks one (HEAD, objects/,
	// refs/, packed-refs, commondir, or a config with a [core] section).
	// RuleGitDir sees a repository once it is whole; this one refuses the
	// pieces that would make it whole, in whatever order they come.
	RuleGitPartial = "git-partial"
	// RuleAgentConfig: the configuration of an agent, an editor, a hook
	// manager or an environment loader in a project (agentNames), which
	// can run commands or grant permissions when the folder is next
	// opened, entered or committed in.
	RuleAgentConfig = "agent-config"
)

// ruleWhy is each rule's reason, for refusals and listings.
var ruleWhy = map[string]string{
	RuleOriond:      "it belongs to oriond itself; a session that wrote its config or store could lift every limit at the next start",
	RuleListed:      "it runs code later or holds credentials",
	RuleHomeHidden:  "hidden entries of the home directory are the configuration of shells, tools and agents, many of which run commands (aliases, hooks, plugins, .pth files)",
	RulePathDir:     "it is a directory on $PATH: a file there runs in place of a command of the same name",
	RuleGitName:     "git runs hooks and config (core.fsmonitor, aliases) from a repository's .git at the next git command; case variants are the same directory on macOS and Windows",
	RuleGitLink:     "a .git file points there (gitdir:), so it is a repository's .git whose hooks and config run at the next git command",
	RuleGitDir:      "it holds a repository's internals (HEAD, objects/, refs/), whose hooks and config run at the next git command",
	RuleGitPartial:  "its directory already holds part of a repository's internals (HEAD, objects/, refs/, packed-refs, commondir or a git config); adding another piece would make it a repository whose hooks and config (core.pager, core.fsmonitor) run at the next git command there",
	RuleVCSName:     "it holds a version control system's internals (Mercurial, Sapling, Jujutsu, Darcs), whose configuration runs hooks, aliases or a pager at the next command",
	RuleAgentConfig: "it is the configuration of an agent, an editor, a hook manager or an environment loader, which can run commands (tasks, hooks at the next commit, MCP and language servers, scripts on entering the folder) or widen an agent's permissions when the folder is next opened",
}

// agentNames are the project entries of agents, editors, hook managers and
// environment loaders. Each is read when a tool opens the folder, enters
// it or commits in it, and can run a command or grant a permission: tasks
// and launch configurations, hooks, MCP servers, language servers, allowed
// tools, setup scripts, direnv's .envrc, vim's exrc files. A name may be a
// pattern (*.code-workspace) or span components (.github/hooks).
var agentNames = append([]string{
	".claude", ".codex", ".cursor", ".gemini", ".continue", ".windsurf", ".mcp.json",
	".vscode", ".idea", ".devcontainer", ".envrc", ".husky", ".githooks",
	".zed", ".exrc", ".nvim.lua", ".nvimrc",
	// Agents: MCP servers, hooks, modes that allow commands, setup
	// scripts, lint and test commands (Aider's).
	".aider*", ".roo", ".roomodes", ".kilocode", ".kilocodemodes", ".kiro", ".amazonq",
	".opencode", "opencode.json", "opencode.jsonc", ".qwen", ".clinerules", ".junie",
	".openhands", ".amp", ".crush", "crush.json", ".crush.json", ".continuerc.json",
	".github/hooks",
	// Hook managers: run at the next commit or push. Lefthook's configs
	// (and its script directories), pre-commit's, overcommit's (and its
	// hook directory), simple-git-hooks'.
	".lefthook", ".lefthook-local", ".pre-commit-config.yaml", ".pre-commit-config.yml",
	".overcommit.yml", ".git-hooks",
	// Editors: tasks, run configurations started with the project,
	// language servers, start-up files read from the current directory.
	".theia", ".fleet", "*.code-workspace", ".run", "*.ipr", "*.iws", ".helix",
	".vimrc", ".gvimrc", ".lvimrc", ".dir-locals.el", ".dir-locals-2.el", ".devcontainer.json",
	".project", ".externalToolBuilders",
	// Environment loaders: run on entering (or leaving) the directory.
	"mise.toml", ".mise.toml", "mise.*.toml", ".mise.*.toml", ".mise", ".config/mise",
	".autoenv.zsh", ".autoenv_leave.zsh", ".env.leave",
}, configNames(
	[]string{"lefthook", ".lefthook", "lefthook-local", ".lefthook-local"}, []string{"yml", "yaml", "toml", "json", "jsonc"},
	[]string{"simple-git-hooks", ".simple-git-hooks"}, []string{"json", "js", "cjs", "mjs"},
)...)

// configNames returns every base.ext of each pair of (bases, exts): the
// names a tool looks its configuration up by, and no others (lefthook.md
// is a document about it, not its configuration).
func configNames(pairs ...[]string) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		for _, b := range pairs[i] {
			for _, e := range pairs[i+1] {
				out = append(out, b+"."+e)
			}
		}
	}
	return out
}

// vcsNames are the internals of version control systems other than git
// whose repository configuration runs commands at their next command:
// Mercurial's and Sapling's hooks and aliases, Jujutsu's aliases and
// pager, Darcs' pre- and post-hooks.
var vcsNames = []string{".hg", ".sl", ".jj", "_darcs"}

// DefaultNames are the names protected wherever they appear in a path:
// .git, other version control systems' internals, and the configuration
// of agents, editors, hook managers and environment loaders.
func DefaultNames() []string {
	return slices.Concat([]string{".git"}, vcsNames, agentNames)
}

// DefaultProtected lists the entries refused by default: under home, the
// files and directories that run code or hold credentials, each named
// with its reason although the hidden-entry rule (Protection.Home) covers
// most of them, so the list still holds if that rule is lifted for a
// parent (~/.config); then DefaultNames.
func DefaultProtected(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		// Relative entries would read as names; without a home only the
		// names are protected by default.
		return DefaultNames()
	}
	rel := []string{
		// Shell start-up files: run at every new shell or login.
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bashrc.d", ".bash_aliases",
		".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
		".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".config/fish",
		".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".pam_environment",
		".config/environment.d",
		// SSH and GnuPG: keys, authorized_keys, and commands (ProxyCommand).
		".ssh", ".gnupg",
		// Credentials of clouds, registries and forges.
		".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
		".git-credentials", ".config/gh", ".npmrc", ".pypirc",
		// Services and autostart: run at the next login or boot.
		".config/systemd", ".local/share/systemd", ".config/autostart",
		"Library/LaunchAgents",
		// macOS keeps these outside hidden directories: VS Code's and
		// Cursor's user settings and tasks, Claude Desktop's MCP servers.
		"Library/Application Support/Code/User", "Library/Application Support/Cursor/User",
		"Library/Application Support/Claude",
		// Git's global config runs code (aliases with !, core.fsmonitor,
		// core.hooksPath); editors run their start-up files.
		".gitconfig", ".config/git", ".vimrc", ".config/nvim", ".emacs", ".emacs.d",
		// Agents' own settings and permissions.
		".claude", ".claude.json", ".codex", ".cursor", ".gemini", ".continue",
	}
	out := make([]string, 0, len(rel)+len(agentNames)+1)
	for _, r := range rel {
		out = append(out, filepath.Join(home, filepath.FromSlash(r)))
	}
	return append(out, DefaultNames()...)
}

// DefaultPathDirs are the directories in home that are on $PATH in most
// setups even when the daemon's own $PATH (a service manager's) lacks
// them: ~/bin and ~/.local/bin (systemd's and Debian's profiles add them),
// ~/go/bin, ~/.cargo/bin.
func DefaultPathDirs(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	var out []string
	for _, r := range []string{"bin", ".local/bin", "go/bin", ".cargo/bin"} {
		out = append(out, filepath.Join(home, filepath.FromSlash(r)))
	}
	return out
}

// PathDirs returns the absolute directories of a $PATH value, cleaned, in
// order, without duplicates, with DefaultPathDirs(home) added.
func PathDirs(pathEnv, home string) []string {
	var out []string
	for _, d := range append(filepath.SplitList(pathEnv), DefaultPathDirs(home)...) {
		if d == "" || !filepath.IsAbs(d) {
			continue // an empty or relative entry means "the current directory": not a place
		}
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// protection is a Protection cleaned and resolved for matching.
type protection struct {
	always, listed, names, allowed []string
	// explicit are the allowed paths the person named, without the roots.
	explicit []string
	// plainNames are the names of one component that are no pattern, by
	// nameKey, for a lookup per component; otherNames the patterns and
	// the names of several components, tried in turn, and otherParts
	// each of those split into components.
	plainNames map[string]string
	otherNames []string
	otherParts [][]string
	// otherFolded is otherParts as nameMatches compares them: each part
	// folded (foldName), and lower-cased too where it is a pattern;
	// folded once here rather than for every component of every check.
	otherFolded [][]string
	// otherFixed is, for each part of otherFolded that is a pattern, the
	// text any component it matches must start and end with (the pattern
	// before its first and after its last special character): a component
	// without them is no match, found without path.Match, which the check
	// of every component of every path against every pattern spent most
	// of its time in.
	otherFixed [][]fixedEnds
	// homes are the home directory as given and resolved; pathDirs the
	// $PATH directories inside it, as given and resolved.
	homes, pathDirs []string
}

func newProtection(p Protection, roots []string) protection {
	var q protection
	for _, a := range p.Always {
		q.always = appendResolved(q.always, a)
	}
	for _, d := range p.Default {
		if isName(d) {
			q.names = appendResolved(q.names, d)
			if isPattern(d) || strings.ContainsRune(d, filepath.Separator) {
				if !slices.Contains(q.otherNames, d) {
					q.otherNames = append(q.otherNames, d)
					parts := strings.Split(d, string(filepath.Separator))
					q.otherParts = append(q.otherParts, parts)
					folded := make([]string, len(parts))
					fixed := make([]fixedEnds, len(parts))
					for k, part := range parts {
						if folded[k] = foldName(part); isPattern(part) {
							folded[k] = strings.ToLower(folded[k])
							fixed[k] = fixedEndsOf(folded[k])
						}
					}
					q.otherFolded = append(q.otherFolded, folded)
					q.otherFixed = append(q.otherFixed, fixed)
				}
			} else if _, ok := q.plainNames[nameKey(d)]; !ok {
				if q.plainNames == nil {
					q.plainNames = map[string]string{}
				}
				q.plainNames[nameKey(d)] = d
			}
		} else {
			q.listed = appendResolved(q.listed, d)
		}
	}
	for _, a := range p.Allowed {
		q.explicit = appendResolved(q.explicit, a)
	}
	for _, a := range append(slices.Clone(p.Allowed), roots...) {
		q.allowed = appendResolved(q.allowed, a)
	}
	if p.Home != "" && filepath.IsAbs(p.Home) {
		q.homes = appendResolved(nil, p.Home)
		for _, d := range p.PathDirs {
			if !filepath.IsAbs(d) {
				continue
			}
			for _, h := range q.homes {
				// The home directory itself on $PATH would protect all of
				// it; only directories below it are taken.
				if d = filepath.Clean(d); d != h && Within(h, d) {
					q.pathDirs = appendResolved(q.pathDirs, d)
				}
			}
			if r := resolveExisting(filepath.Clean(d)); r != filepath.Clean(d) {
				for _, h := range q.homes {
					if r != h && Within(h, r) {
						q.pathDirs = appendResolved(q.pathDirs, r)
					}
				}
			}
		}
	}
	return q
}

// isName reports whether a protected or allowed entry is a name, matched
// against path components (one, or several in a row such as
// .github/hooks), rather than an absolute path. The daemon makes relative
// paths given to --allow-protected absolute before they get here.
func isName(p string) bool { return !filepath.IsAbs(p) }

// appendResolved adds p both as given (cleaned) and, when it differs, with
// its existing part resolved through symlinks, since targets are compared
// after resolution. A bare name stays a name.
func appendResolved(list []string, p string) []string {
	if p == "" {
		return list
	}
	if isName(p) {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
		return list
	}
	clean := filepath.Clean(p)
	if !slices.Contains(list, clean) {
		list = append(list, clean)
	}
	if real := resolveExisting(clean); real != clean && !slices.Contains(list, real) {
		list = append(list, real)
	}
	return list
}

// resolveExisting resolves the longest existing prefix of p through
// symlinks and joins the rest.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// Match is why a path is protected: the rule, and the protected path
// (or name) it matched at.
type Match struct {
	// Rule is one of the Rule constants.
	Rule string
	// At is the protected path the rule matched: the hidden entry of
	// home, the listed entry, the .git directory, the git directory. An
	// allowed path at or below it (and at or above the target) lifts it.
	At string
	// Name is the protected name for RuleGitName and RuleAgentConfig (and
	// listed names), which --allow-protected NAME lifts everywhere.
	Name string
}

// Protected reports whether the clean absolute path is protected, and by
// which rule. A path protected by several rules is reported by the first
// one not lifted, in the order: oriond's files, the list, git (a .git
// name, a linked or whole repository, then a partial one), agents'
// configuration, $PATH directories, hidden entries of home.
func (g *Guard) Protected(path string) (Match, bool) {
	// Read by path: an early answer for a session's begin. A directory
	// that cannot be read here is read again, failing closed, through
	// descriptors at the write (CheckProtectedIn).
	m, ok, _ := g.protected(path, openByPath, nil)
	return m, ok
}

// protected is Protected with the git-partial rule's directories read
// through open, and what the git rules read by path kept in s (nil: read
// every time).
func (g *Guard) protected(path string, open OpenDirFunc, s *Scope) (Match, bool, error) {
	v := s.verdict(g, path)
	if v.before.Rule != "" {
		return v.before, true, nil
	}
	// A directory that cannot be read does not stop the rules below: one
	// of them may refuse the path anyway.
	m, ok, readErr := g.gitPartial(path, open)
	if ok {
		return m, true, nil
	}
	if v.after.Rule != "" {
		return v.after, true, nil
	}
	return Match{}, false, readErr
}

// byPath is what the rules that read no directory through an OpenDirFunc
// say of a path: the first match not lifted among the rules checked before
// the git-partial rule (before) and among those after it (after); a zero
// Match where none is. It depends on the path, the guard and, for the git
// rules, what the directories above the path hold as a Scope keeps it.
type byPath struct {
	before, after Match
}

// byPath applies the rules that read nothing through an OpenDirFunc to
// path, in Protected's order, reading the git rules' directories by path
// (kept in s).
func (g *Guard) byPath(path string, s *Scope) (v byPath) {
	v.before = g.beforeGitPartial(path, s)
	if v.before.Rule != "" {
		return v
	}
	v.after = g.afterGitPartial(path)
	return v
}

func (g *Guard) beforeGitPartial(path string, s *Scope) Match {
	if e := matchPaths(g.protect.always, path); len(e) > 0 {
		return Match{Rule: RuleOriond, At: e[0]}
	}
	for _, e := range matchPaths(g.protect.listed, path) {
		if !g.lifted(path, e, "") {
			return Match{Rule: RuleListed, At: e}
		}
	}
	for _, m := range g.protect.matchNames(path) {
		if !g.lifted(path, m.At, m.Name) {
			return m
		}
	}
	for _, m := range gitDirs(path, s) {
		// Allowing the name .git lifts a .git directory's shape too.
		name := ""
		if sameName(filepath.Base(m.At), ".git") {
			name = ".git"
		}
		if !g.lifted(path, m.At, name) {
			return m
		}
	}
	return Match{}
}

func (g *Guard) afterGitPartial(path string) Match {
	for _, e := range matchPaths(g.protect.pathDirs, path) {
		if !g.lifted(path, e, "") {
			return Match{Rule: RulePathDir, At: e}
		}
	}
	sep := string(filepath.Separator)
	for _, h := range g.protect.homes {
		if h == path || !Within(h, path) {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(path[len(h):], sep), sep)
		if strings.HasPrefix(first, ".") {
			if at := filepath.Join(h, first); !g.lifted(path, at, "") {
				return Match{Rule: RuleHomeHidden, At: at}
			}
		}
	}
	return Match{}
}

// lifted reports whether an allowed path or name lifts a rule that matched
// path at the protected path at (or, for a name rule, the name name).
func (g *Guard) lifted(path, at, name string) bool {
	for _, a := range g.protect.allowed {
		if isName(a) {
			if name != "" && (sameName(a, name) || nameMatches(a, name)) {
				return true
			}
			continue
		}
		if Within(a, path) && Within(at, a) {
			return true
		}
	}
	return false
}

// matchPaths returns the entries of list (absolute paths) that are path or
// above it, each as path spells it. Components are compared
// case-insensitively: on macOS and Windows ~/.SSH is ~/.ssh.
func matchPaths(list []string, path string) []string {
	var out []string
	for _, e := range list {
		if len(path) >= len(e) && strings.EqualFold(e, path[:len(e)]) && (len(path) == len(e) || path[len(e)] == filepath.Separator || e == string(filepath.Separator)) {
			// The entry as the path spells it, so that an allowance
			// naming the path as written lifts it.
			out = append(out, path[:len(e)])
		}
	}
	return out
}

// matchNames returns a match for every component of path (or run of
// components) that is one of the protected names, outermost first.
func (q protection) matchNames(path string) []Match {
	var out []Match
	sep := string(filepath.Separator)
	comps := strings.Split(strings.Trim(path, sep), sep)
	// Each component folded, and lower-cased, once for every name.
	folded, keys := make([]string, len(comps)), make([]string, len(comps))
	for i, c := range comps {
		folded[i] = foldName(c)
		keys[i] = strings.ToLower(folded[i])
	}
	for i, c := range comps {
		if c == "" {
			continue
		}
		n, ok := q.plainNames[keys[i]]
		width := 1 // the components the name spans
		for j, parts := range q.otherFolded {
			if ok {
				break
			}
			width = len(parts)
			ok = i+width <= len(comps) && q.partsMatch(j, folded[i:i+width], keys[i:i+width])
			n = q.otherNames[j]
		}
		if !ok {
			continue
		}
		rule := RuleListed
		switch {
		case sameName(n, ".git"):
			rule = RuleGitName
		case slices.ContainsFunc(vcsNames, func(a string) bool { return sameName(a, n) }):
			rule = RuleVCSName
		case slices.Contains(agentNames, n):
			rule = RuleAgentConfig
		}
		// A pattern's match is named by the entry it matched, so that
		// allowing that one name lifts it and no other.
		name := n
		if isPattern(n) && width == 1 {
			name = c
		}
		out = append(out, Match{Rule: rule, At: sep + filepath.Join(comps[:i+width]...), Name: name})
	}
	return out
}

// partsMatch reports whether the components whose folded and lower-cased
// forms are folded and keys are the otherNames[j]'s parts, as nameMatches
// compares each part with each component.
func (q protection) partsMatch(j int, folded, keys []string) bool {
	for k, part := range q.otherParts[j] {
		want := q.otherFolded[j][k]
		if !isPattern(part) {
			if !strings.EqualFold(want, folded[k]) {
				return false
			}
			continue
		}
		if f := q.otherFixed[j][k]; !strings.HasPrefix(keys[k], f.prefix) || !strings.HasSuffix(keys[k], f.suffix) {
			return false
		}
		if ok, err := path.Match(want, keys[k]); !ok || err != nil {
			return false
		}
	}
	return true
}

// fixedEnds are the literal start and end of a pattern.
type fixedEnds struct{ prefix, suffix string }

// fixedEndsOf returns the text before the first and after the last of the
// pattern's special characters (path.Match syntax: *, ?, a [class] and a
// \ escape). Text outside them is compared byte for byte by path.Match,
// so every name the pattern matches starts and ends with it; a malformed
// pattern matches nothing either way.
func fixedEndsOf(pattern string) fixedEnds {
	const special = `*?[]\`
	f := fixedEnds{prefix: pattern, suffix: pattern}
	if i := strings.IndexAny(pattern, special); i >= 0 {
		f.prefix = pattern[:i]
	}
	if i := strings.LastIndexAny(pattern, special); i >= 0 {
		f.suffix = pattern[i+1:]
	}
	return f
}

// nameKey is a name as sameName compares it, for an exact lookup.
func nameKey(n string) string { return strings.ToLower(foldName(n)) }

// isPattern reports whether a protected name is a pattern (path.Match
// syntax) rather than a name.
func isPattern(n string) bool { return strings.ContainsAny(n, "*?[") }

// nameMatches reports whether the component c is the protected name (or
// pattern) n, compared as sameName does.
func nameMatches(n, c string) bool {
	if !isPattern(n) {
		return sameName(n, c)
	}
	ok, err := path.Match(strings.ToLower(foldName(n)), strings.ToLower(foldName(c)))
	return ok && err == nil
}

// sameName compares two names as a case-insensitive file system would:
// case folded, the code points HFS+ ignores dropped, and trailing dots and
// spaces (which Windows drops) removed. Git compares ".git" the same way
// for the same reason (its is_hfs_dotgit and is_ntfs_dotgit).
func sameName(a, b string) bool {
	return strings.EqualFold(foldName(a), foldName(b))
}

func foldName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, s)
	return strings.TrimRight(s, ". ")
}

// maxGitFile bounds the read of a .git file: a gitdir line is a path.
const maxGitFile = 4096

// gitDirs returns the git rules that match path by what is on disk: for
// every directory from the root of the file system down to path itself,
// whether it holds a repository's internals (RuleGitDir), and whether a
// .git file in it points (gitdir:) at a directory holding path
// (RuleGitLink). Only what exists is looked at; reading fails closed only
// where it matters (an unreadable .git file is not a pointer). What each
// directory holds is read once per Scope s.
func gitDirs(path string, s *Scope) []Match {
	var out []Match
	sep := string(filepath.Separator)
	dir := sep
	comps := strings.Split(strings.Trim(path, sep), sep)
	// The directories of a clean absolute path are its own prefixes:
	// sliced from it rather than joined anew, one allocation per
	// directory per check. end is where dir ends in path.
	prefixes := strings.HasPrefix(path, sep) && filepath.Clean(path) == path
	end := 0
	for i := 0; ; i++ {
		f := s.facts(dir)
		if f.gitDir {
			out = append(out, Match{Rule: RuleGitDir, At: dir})
		}
		if f.linked && Within(f.link, path) {
			out = append(out, Match{Rule: RuleGitLink, At: f.link})
		}
		if i >= len(comps) || comps[i] == "" {
			return out
		}
		if prefixes {
			end += len(sep) + len(comps[i])
			dir = path[:end]
		} else {
			dir = filepath.Join(dir, comps[i])
		}
	}
}

// isGitDir reports whether dir holds a repository's internals as git
// itself recognises them (setup.c's is_git_directory): a HEAD file, and
// objects/ and refs/ directories, or a commondir file naming where they
// are (a worktree's administrative directory).
func isGitDir(dir string) bool {
	if e, ok := lstatEntry(filepath.Join(dir, "HEAD")); !ok || e.dir {
		return false
	}
	if e, ok := lstatEntry(filepath.Join(dir, "commondir")); ok && e.regular {
		return true
	}
	return isDir(filepath.Join(dir, "objects")) && isDir(filepath.Join(dir, "refs"))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// gitLink reads dir/.git when it is a file ("gitdir: <path>") and returns
// the directory it names, resolved against dir and through symlinks;
// exists says whether dir/.git is there at all.
func gitLink(dir string) (to string, ok, exists bool) {
	p := filepath.Join(dir, ".git")
	e, found := lstatEntry(p)
	if !found {
		return "", false, false
	}
	to, ok = readGitLink(p, e)
	return to, ok, true
}

// entry is what the git rules read of a directory entry by lstatEntry.
type entry struct {
	dir, regular bool
	size         int64
}

// readGitLink reads the .git entry at p, described by fi, as gitLink does.
func readGitLink(p string, e entry) (string, bool) {
	dir := filepath.Dir(p)
	if !e.regular || e.size > maxGitFile {
		return "", false
	}
	// O_NONBLOCK: should a FIFO replace the file after the Lstat, the
	// open returns at once instead of waiting for a writer.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	buf := make([]byte, maxGitFile)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	to, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if to = strings.TrimSpace(to); !ok || to == "" {
		return "", false
	}
	if !filepath.IsAbs(to) {
		to = filepath.Join(dir, to)
	}
	return resolveExisting(filepath.Clean(to)), true
}

// ProtectedError is the refusal of path, protected as m says: the rule, its
// reason, and the setting the person would change to allow it.
func (g *Guard) ProtectedError(path string, m Match) error {
	e := &Error{Reason: ReasonProtected, Path: path, Rule: m.Rule}
	if m.Rule == RuleOriond {
		e.Msg = fmt.Sprintf("%s is protected (rule %s, %s): %s. No setting lifts it; write somewhere else", path, m.Rule, m.At, ruleWhy[m.Rule])
		return e
	}
	// The path itself is the narrowest allowance, and it lifts every rule
	// that matched it: each matched at the path or a directory above it.
	wider := ""
	if m.At != path {
		wider = fmt.Sprintf(", or all of %s with --allow-protected %s", m.At, m.At)
	}
	e.Msg = fmt.Sprintf("%s is protected (rule %s, at %s): %s. The model must write somewhere else; "+
		"only the person can allow it, with --allow-protected %s (allow-protected in oriond.toml)%s%s",
		path, m.Rule, m.At, ruleWhy[m.Rule], path, wider, nameHint(m))
	return e
}

// nameHint is how to lift a name rule everywhere, for the message.
func nameHint(m Match) string {
	if m.Name == "" || strings.ContainsRune(m.Name, filepath.Separator) {
		// --allow-protected reads a relative path with a slash as a path
		// from the current directory, not as a name.
		return ""
	}
	return fmt.Sprintf(", or with --allow-protected %s for every %s", m.Name, m.Name)
}

// CheckProtected returns the refusal of path when it is protected.
func (g *Guard) CheckProtected(path string) error {
	if m, ok := g.Protected(path); ok {
		return g.ProtectedError(path, m)
	}
	return nil
}

// RuleInfo describes one protection rule for status and config output.
type RuleInfo struct {
	// Rule is one of the Rule constants.
	Rule string
	// Pattern is what the rule protects: paths, a shape or names.
	Pattern []string
	// Why is the reason for the rule.
	Why string
}

// Rules describes every active rule, in the order Protected checks them,
// for `oriond config print` and daemon.status.
func (g *Guard) Rules() []RuleInfo { return g.protect.rules() }

// Rules describes the rules of p as a Guard would apply them, without
// one: for `oriond config print`, which runs no daemon.
func (p Protection) Rules() []RuleInfo { return newProtection(p, nil).rules() }

func (q protection) rules() []RuleInfo {
	var out []RuleInfo
	add := func(rule string, pattern ...string) {
		if len(pattern) > 0 {
			out = append(out, RuleInfo{Rule: rule, Pattern: pattern, Why: ruleWhy[rule]})
		}
	}
	add(RuleOriond, q.always...)
	add(RuleListed, q.listed...)
	var git, vcs, agents []string
	for _, n := range q.names {
		switch {
		case sameName(n, ".git"):
			git = append(git, n+" (any case)")
		case slices.ContainsFunc(vcsNames, func(a string) bool { return sameName(a, n) }):
			vcs = append(vcs, n+" (any case)")
		default:
			agents = append(agents, n+" (any case)")
		}
	}
	add(RuleGitName, git...)
	add(RuleVCSName, vcs...)
	add(RuleGitLink, "the directory named by any .git file (gitdir: <dir>)")
	add(RuleGitDir, "any directory holding HEAD and objects/ and refs/ (or HEAD and commondir)")
	add(RuleGitPartial, "HEAD, objects/, refs/, packed-refs, commondir, config, hooks/ or info/ (any case) in a directory holding another of HEAD, objects/, refs/, packed-refs, commondir or a config with [core]")
	add(RuleAgentConfig, agents...)
	add(RulePathDir, q.pathDirs...)
	var hidden []string
	for _, h := range q.homes {
		hidden = append(hidden, filepath.Join(h, ".*"))
	}
	add(RuleHomeHidden, hidden...)
	return out
}

// ProtectedList is every protected entry, the always-protected first, for
// status and config output: paths and names, without the shape rules
// (see Rules).
func (g *Guard) ProtectedList() (always, byDefault []string) {
	byDefault = slices.Concat(g.protect.listed, g.protect.names, g.protect.pathDirs)
	for _, h := range g.protect.homes {
		byDefault = append(byDefault, filepath.Join(h, ".*"))
	}
	return slices.Clone(g.protect.always), byDefault
}

// Inside reports whether the clean absolute path p is inside an allowed
// root.
func (g *Guard) Inside(p string) bool { return g.inside(p) }

// Kind names a non-regular file type in words a user recognises.
func Kind(m fs.FileMode) string { return kind(m) }

// HomeDir is the user's home directory, or "" when it is unknown.
func HomeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}
