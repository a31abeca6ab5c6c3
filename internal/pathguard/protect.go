package pathguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Protection says which paths inside the allowed roots are refused anyway,
// because writing them would widen what the model can do: run code later,
// read secrets, or change the daemon itself.
type Protection struct {
	// Always are absolute paths refused whatever else is configured: the
	// daemon's own state directory, config, socket directory and spool. A
	// model that could write them could lift every other limit at the next
	// start (allow-root = ["/"]) or corrupt the journal it is writing into.
	Always []string
	// Default are refused unless the user names them (see Allowed): home
	// dotfiles and dot-directories that run code or hold credentials
	// (DefaultProtected), and names that match any path component (".git").
	Default []string
	// Allowed lifts Default entries: an allowed path A lets a path P
	// through an entry E when A lies at or below E and P at or below A, so
	// allowing ~/.ssh lifts all of ~/.ssh and allowing ~/.ssh/config only
	// that file. A bare name (".git") lifts that name everywhere. The
	// allowed roots count as allowed paths: a root inside a protected
	// directory was named explicitly.
	Allowed []string
}

// DefaultProtected lists, under home, the files and directories refused by
// default. Each one either runs code the next time something starts (a
// shell, a login, a service manager, an editor, git) or holds credentials
// that would let a model act as the user elsewhere.
func DefaultProtected(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		// Relative entries would read as names; without a home only the
		// repository machinery is protected by default.
		return []string{".git"}
	}
	rel := []string{
		// Shell start-up files: run at every new shell or login.
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bashrc.d",
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
		// Git's global config runs code (aliases with !, core.fsmonitor,
		// core.hooksPath); editors run their start-up files.
		".gitconfig", ".config/git", ".vimrc", ".config/nvim", ".emacs", ".emacs.d",
	}
	out := make([]string, 0, len(rel)+1)
	for _, r := range rel {
		out = append(out, filepath.Join(home, filepath.FromSlash(r)))
	}
	// A repository's machinery, wherever it is: hooks and config run code
	// at the next git command. A model edits the work tree, never .git.
	return append(out, ".git")
}

// protection is a Protection cleaned and resolved for matching.
type protection struct {
	always, dflt, allowed []string
}

func newProtection(p Protection, roots []string) protection {
	var q protection
	for _, a := range p.Always {
		q.always = appendResolved(q.always, a)
	}
	for _, d := range p.Default {
		q.dflt = appendResolved(q.dflt, d)
	}
	for _, a := range append(slices.Clone(p.Allowed), roots...) {
		q.allowed = appendResolved(q.allowed, a)
	}
	return q
}

// appendResolved adds p both as given (cleaned) and, when it differs, with
// its existing part resolved through symlinks, since targets are compared
// after resolution. A bare name stays a name.
func appendResolved(list []string, p string) []string {
	if p == "" {
		return list
	}
	if !strings.ContainsRune(p, filepath.Separator) {
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

// match returns the entry of list that covers path: an absolute entry
// equal to path or above it, or a name equal to one of path's components
// (with the entry's own path then being path up to that component).
func match(list []string, path string) (entry, at string, ok bool) {
	for _, e := range list {
		if filepath.IsAbs(e) {
			if Within(e, path) {
				return e, e, true
			}
			continue
		}
		prefix := ""
		for _, c := range strings.Split(path, string(filepath.Separator)) {
			prefix = filepath.Join(string(filepath.Separator), prefix, c)
			if c == e {
				return e, prefix, true
			}
		}
	}
	return "", "", false
}

// Protected reports whether the clean absolute path is protected, and by
// which entry.
func (g *Guard) Protected(path string) (string, bool) {
	if e, _, ok := match(g.protect.always, path); ok {
		return e, true
	}
	e, at, ok := match(g.protect.dflt, path)
	if !ok {
		return "", false
	}
	for _, a := range g.protect.allowed {
		if !filepath.IsAbs(a) {
			if a == e {
				return "", false
			}
			continue
		}
		if Within(a, path) && Within(at, a) {
			return "", false
		}
	}
	return e, true
}

// ProtectedList is every protected entry, the always-protected first, for
// status and config output.
func (g *Guard) ProtectedList() (always, byDefault []string) {
	return slices.Clone(g.protect.always), slices.Clone(g.protect.dflt)
}

// ProtectedError is the refusal of path, protected by entry.
func (g *Guard) ProtectedError(path, entry string) error {
	if slices.Contains(g.protect.always, entry) {
		return &Error{Reason: ReasonProtected, Path: path,
			Msg: fmt.Sprintf("%s is protected: it belongs to oriond itself (%s), which a session may never write; write somewhere else", path, entry)}
	}
	return &Error{Reason: ReasonProtected, Path: path,
		Msg: fmt.Sprintf("%s is protected (%s): writing it could run code later or expose credentials, so it is refused whatever the allowed roots say. "+
			"Write somewhere else; the user can lift it with --allow-protected %s", path, entry, entry)}
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
