package mcpserver

//lint:file-ignore SA1019 MCP roots are deprecated in the protocol's next version, but hosts send them today and a workspace comes from them; remove with the roots support.

import (
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/protocol"
)

// maxRoots bounds the roots taken from a host: a list is kept and searched
// per call.
const maxRoots = 64

// rootSet holds the workspace roots: the host's MCP roots when it offers
// them, else the fallback (the directory the server started in, or
// --workspace-root). The host's list is asked for on the first tool call
// and again after each notifications/roots/list_changed.
type rootSet struct {
	fallback string
	log      *slog.Logger

	mu    sync.Mutex
	roots []string // nil until fetched
	stale bool
}

// rootsRequestID names the roots/list input request of a tool call.
const rootsRequestID = "roots"

// invalidate marks the host's list as changed.
func (r *rootSet) invalidate() {
	r.mu.Lock()
	r.stale = true
	r.mu.Unlock()
}

// known returns the roots last seen, without asking the host.
func (r *rootSet) known() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.roots == nil {
		return []string{r.fallback}
	}
	return r.roots
}

// forCall returns the roots for a tool call, or ask when the host must be
// asked for them first. The host is asked through the call's own round
// trip (an input request for roots/list): protocol 2026-07-28 forbids a
// server's own requests while it serves one, and for older hosts the SDK
// turns the input request into a roots/list request and calls the tool
// again with the answer.
func (r *rootSet) forCall(req *mcp.CallToolRequest) (roots []string, ask bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, resp := range req.Params.InputResponses {
		if lr, ok := resp.(*mcp.ListRootsResult); ok {
			r.set(lr.Roots)
			return r.roots, false
		}
	}
	if req.Session == nil || !hostHasRoots(req.Session) {
		return []string{r.fallback}, false
	}
	if r.roots != nil && !r.stale {
		return r.roots, false
	}
	return nil, true
}

// set takes the host's list; an empty one means the fallback.
func (r *rootSet) set(list []*mcp.Root) {
	r.stale = false
	var roots []string
	for _, root := range list {
		if len(roots) == maxRoots {
			r.log.Warn("the host sent more roots than taken", "limit", maxRoots)
			break
		}
		p, err := rootPath(root.URI)
		if err != nil {
			r.log.Warn("ignoring a root", "uri", root.URI, "err", err)
			continue
		}
		roots = append(roots, p)
	}
	if len(roots) == 0 {
		roots = []string{r.fallback}
	}
	r.roots = roots
}

func hostHasRoots(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil {
		return false
	}
	return p.Capabilities.RootsV2 != nil
}

// rootPath is the directory of a file:// root URI.
func rootPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("not a file:// URI")
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("a file URI on host %q", u.Host)
	}
	p := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("not an absolute path")
	}
	return filepath.Clean(p), nil
}

// placement is where a target goes: the workspace root sent with it and
// the path as the daemon is to resolve it.
type placement struct {
	root   string
	target string
}

// place finds the root of target: a relative path resolves against the
// first root, an absolute one belongs to the innermost root that holds it.
// A target outside every root is refused, naming the roots.
func place(roots []string, target string) (placement, error) {
	if target == "" {
		return placement{}, argErrorf("target_file is empty: give the file's path, relative to the workspace root %s", roots[0])
	}
	if strings.HasSuffix(target, "/") {
		// Cleaned, "dir/" would name a file "dir".
		return placement{}, &argError{protocol.ReasonIsDirectory, fmt.Sprintf("target_file %.200q ends in /, so it names a directory: give the path of a file", target)}
	}
	abs := target
	if !filepath.IsAbs(target) {
		abs = filepath.Join(roots[0], target)
	}
	abs = filepath.Clean(abs)
	best := ""
	for _, root := range roots {
		if within(root, abs) && len(root) > len(best) {
			best = root
		}
	}
	if best == "" {
		return placement{}, &argError{"outside_workspace", protocol.Fill(protocol.PromptMCPOutsideWorkspace,
			"target", target, "roots", strings.Join(roots, ", "), "first", roots[0])}
	}
	return placement{root: best, target: abs}, nil
}

// within reports whether path is root or lies below it, lexically; the
// daemon resolves symlinks, confined to the same root.
func within(root, path string) bool {
	if root == path {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(path, root)
}
