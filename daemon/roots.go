package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/orion-agent/orion/internal/config"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

// rootAdder allows directories while the daemon runs (daemon.allow_root):
// it checks each, keeps it in the state directory's allowed-roots file and
// puts a guard with it in force. Only a peer of the daemon's own uid
// reaches it, as every method; no door (proxy, MCP server, page) forwards
// the method, so a model cannot widen its own reach.
type rootAdder struct {
	mu       sync.Mutex
	stateDir string
	protect  pathguard.Protection
	mgr      *session.Manager
	log      *slog.Logger
	// given are the roots of the guard in force, as configured; added
	// those of them kept in the allowed-roots file.
	given, added []string
}

// startRoots are cfg's roots with those kept in the state directory: a
// kept root that is gone now is skipped with a warning rather than
// keeping the daemon from starting.
func startRoots(cfg Config, log *slog.Logger) (all, added []string, err error) {
	kept, err := config.ReadAddedRoots(cfg.StateDir)
	if err != nil {
		return nil, nil, fmt.Errorf("allowed roots kept by orionctl allow: %w", err)
	}
	all = slices.Clone(cfg.AllowRoots)
	for _, r := range kept {
		added = append(added, r)
		if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
			log.Warn("skipping an allowed root kept by orionctl allow: not a directory now",
				"root", r, "file", config.AddedRootsPath(cfg.StateDir))
			continue
		}
		if !slices.Contains(all, r) {
			all = append(all, r)
		}
	}
	return all, added, nil
}

// allow checks dir and allows it. A directory an allowed root holds
// already is reported as such and changes nothing.
func (a *rootAdder) allow(dir string) (protocol.AllowRootResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.mgr.Guard()
	refuse := func(format string, args ...any) error {
		e := protocol.Errorf(protocol.CodePathNotAllowed, protocol.ReasonRootRefused, format, args...)
		e.Data.Path = dir
		a.log.Warn("refused to allow a root", "reason", e.Data.Reason, "path", dir)
		return e
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return protocol.AllowRootResult{}, refuse("%q is not an absolute path; give the directory's absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return protocol.AllowRootResult{}, refuse("%s cannot be allowed: %v", dir, unwrapPath(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return protocol.AllowRootResult{}, refuse("%s cannot be allowed: %v", dir, unwrapPath(err))
	}
	if !fi.IsDir() {
		return protocol.AllowRootResult{}, refuse("%s is not a directory; allow the directory that holds it", dir)
	}
	if filepath.Dir(real) == real {
		return protocol.AllowRootResult{}, refuse("%s is the whole file system; allow the directory of a project", dir)
	}
	result := func(added bool) protocol.AllowRootResult {
		return protocol.AllowRootResult{Path: real, Added: added, AllowedRoots: a.mgr.Guard().Roots(),
			SavedIn: config.AddedRootsPath(a.stateDir)}
	}
	if m, ok := g.Protected(real); ok {
		// A root at or inside a protected path would lift its protection
		// (see pathguard.Protection): that takes --allow-protected.
		e := protocol.Errorf(protocol.CodePathNotAllowed, protocol.ReasonProtected,
			"%s is protected (rule %s), and an allowed root there would lift the protection; to lift it, start oriond with --allow-protected %s",
			real, m.Rule, real)
		if m.Rule == pathguard.RuleOriond {
			e.Message = fmt.Sprintf("%s holds oriond's own files (rule %s); no setting lets a session write them", real, m.Rule)
		}
		e.Data.Path, e.Data.Rule = real, m.Rule
		a.log.Warn("refused to allow a root", "reason", e.Data.Reason, "rule", m.Rule, "path", real)
		return protocol.AllowRootResult{}, e
	}
	if g.Inside(real) {
		return result(false), nil
	}
	given := append(slices.Clone(a.given), real)
	ng, err := pathguard.NewProtected(given, a.protect)
	if err != nil {
		return protocol.AllowRootResult{}, refuse("%s cannot be allowed: %v", dir, err)
	}
	added := append(slices.Clone(a.added), real)
	if err := config.WriteAddedRoots(a.stateDir, added); err != nil {
		return protocol.AllowRootResult{}, protocol.Errorf(protocol.CodeIO, protocol.ReasonIO,
			"keeping the allowed root in %s: %v; nothing changed", config.AddedRootsPath(a.stateDir), err)
	}
	if err := a.mgr.SetGuard(ng); err != nil {
		// The file says more than is in force: put it back as it was.
		if werr := config.WriteAddedRoots(a.stateDir, a.added); werr != nil {
			a.log.Error("restoring the allowed-roots file", "file", config.AddedRootsPath(a.stateDir), "err", werr)
		}
		return protocol.AllowRootResult{}, protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "allowing %s: %v; nothing changed", real, err)
	}
	a.given, a.added = given, added
	a.log.Info("allowed a root while running", "root", real, "file", config.AddedRootsPath(a.stateDir))
	return result(true), nil
}

// unwrapPath drops the *PathError's path, which the message names already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
