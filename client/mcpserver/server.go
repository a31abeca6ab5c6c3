// Package mcpserver is Orion's MCP server: the tools an MCP host (Claude
// Code, Cursor, VS Code, Codex...) gives its model to write files through
// oriond's durable write sessions. It is a client of the daemon like the
// proxy: every check, journal and write happens in oriond; this package
// turns tool calls into daemon requests and daemon answers into short
// results a model can act on.
package mcpserver

//lint:file-ignore SA1019 MCP roots are deprecated in the protocol's next version, but hosts send them today and a workspace comes from them; remove with the roots support.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/turnmark"
	"github.com/orion-agent/orion/protocol"
)

// Options configure a Server.
type Options struct {
	// Socket is oriond's socket; "" means client.DefaultSocket().
	Socket string
	// WorkspaceRoot is the root used when the host offers no MCP roots;
	// "" means the current directory.
	WorkspaceRoot string
	// Version is reported to the host as the server's version.
	Version string
	// Logger receives the server's own log (never the tool traffic);
	// nil discards it. On stdio it must not write to stdout.
	Logger *slog.Logger
	// RestartWait is how long a tool call waits for a daemon that does not
	// answer (being restarted) before it reports it down; 0 means
	// DefaultRestartWait.
	RestartWait time.Duration
	// Directories, when not empty, are the workspace the host's
	// configuration names: relative paths resolve against the first, and
	// the host's MCP roots are not asked for. Each must be absolute.
	Directories []string
	// FilesystemCompatible, when not empty, serves the reference MCP
	// filesystem server's tools instead of Orion's, confined to these
	// absolute directories.
	FilesystemCompatible []string
	// TurnQuiet is the quiet period that bounds the turns this server
	// marks (0: turnmark.DefaultQuiet); NoTurns marks none.
	TurnQuiet time.Duration
	NoTurns   bool
}

// DefaultRestartWait is how long a call waits for oriond to come back: a
// daemon restarted by its service manager answers again within it.
const DefaultRestartWait = 3 * time.Second

// sessionTimeoutMS is the idle and auto-finalize time of the sessions this
// server begins: a model's next tool call may wait on a person approving
// the last one, so the daemon's default of seconds would end a session
// that is only paused. A session nobody finishes still ends, keeping what
// arrived (truncation policy keep) without writing it.
const sessionTimeoutMS = int64(time.Hour / time.Millisecond)

// Server serves the tools. Its methods are safe for concurrent use.
type Server struct {
	opts   Options
	log    *slog.Logger
	daemon *daemonConn
	roots  *rootSet
	turns  *turnmark.Marker
	srv    *mcp.Server
	// stash holds the arguments Transport set aside.
	stash *argStash
	// maxMessage is the bound Transport was given, to name it.
	maxMessage atomic.Int64

	// noWrite is set once the daemon answered that it does not serve
	// session.write (an older daemon): whole files go through sessions.
	noWrite atomic.Bool

	mu sync.Mutex
	// maxChunk is the daemon's chunk limit, asked once.
	maxChunk int64
	// sessions remembers where this server's sessions write, to show
	// paths as the model gave them.
	sessions map[string]placement
	// lastWrite is the session of this server's most recent completed
	// write, for undo {last: true}.
	lastWrite string
	// refused maps a target to the session whose content a check refused,
	// so the next write of that target is a corrected attempt of it.
	refused map[string]string

	// fsDirs are the allowed directories of the filesystem-compatible
	// tools, symlinks resolved.
	fsDirs []string
	// fsEditHook, set by tests only, runs between edit_file's read and its
	// write.
	fsEditHook func(target string)
}

// New returns a Server; Run serves it on a transport.
func New(opts Options) (*Server, error) {
	if opts.Socket == "" {
		opts.Socket = client.DefaultSocket()
	}
	if opts.RestartWait <= 0 {
		opts.RestartWait = DefaultRestartWait
	}
	if opts.WorkspaceRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("the current directory, the workspace root of a host without roots: %w", err)
		}
		opts.WorkspaceRoot = wd
	}
	if !filepath.IsAbs(opts.WorkspaceRoot) {
		return nil, fmt.Errorf("workspace root %q: give an absolute directory", opts.WorkspaceRoot)
	}
	root := filepath.Clean(opts.WorkspaceRoot)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		opts: opts,
		log:  log,
		daemon: &daemonConn{socket: opts.Socket, wait: opts.RestartWait,
			dial: func(ctx context.Context, socket string) (*client.Client, error) {
				return client.Dial(ctx, socket, client.Options{})
			}},
		roots:    &rootSet{fallback: []string{root}, log: log},
		sessions: map[string]placement{},
		refused:  map[string]string{},
		stash:    newArgStash(),
	}
	if len(opts.Directories) > 0 {
		var dirs []string
		for _, d := range opts.Directories {
			if !filepath.IsAbs(d) {
				return nil, fmt.Errorf("workspace directory %q: give an absolute directory", d)
			}
			dirs = append(dirs, filepath.Clean(d))
		}
		s.roots.fallback, s.roots.fixed = dirs, true
	}
	s.turns = newMarker(opts, log)
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "orion", Title: "Orion durable writes", Version: version}, &mcp.ServerOptions{
		Instructions: Instructions,
		Logger:       log,
		// No logging capability: nothing is sent to the host's log.
		Capabilities:            &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { s.roots.invalidate() },
	})
	if len(opts.FilesystemCompatible) > 0 {
		dirs, err := fsAllowedDirs(opts.FilesystemCompatible)
		if err != nil {
			return nil, err
		}
		s.fsDirs = dirs
		s.addFSTools()
	} else {
		s.addTools()
	}
	return s, nil
}

// MCP returns the SDK server, for tests that connect it in memory.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one host on t until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.daemon.close()
	if s.turns != nil {
		defer s.turns.Close()
	}
	return s.srv.Run(ctx, t)
}

// toolResult is a tool's answer: a short text for the model and the same
// fields as structuredContent.
type toolResult struct {
	text       string
	structured any
}

type toolFunc func(ctx context.Context, req *mcp.CallToolRequest) (toolResult, error)

func (s *Server) addTools() {
	add := func(name, title, desc string, schema json.RawMessage, ann *mcp.ToolAnnotations, fn toolFunc) {
		ann.Title = title
		s.srv.AddTool(&mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: schema, Annotations: ann},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// The roots come first, before the call does anything: a
				// call that needs them asked is made again with them.
				roots, ask := s.roots.forCall(req)
				if ask {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{rootsRequestID: &mcp.ListRootsParams{}}}, nil
				}
				if !ann.ReadOnlyHint {
					s.markTurn(ctx, req, roots)
				}
				res, err := fn(withRoots(ctx, roots), req)
				if err != nil {
					return s.errorResult(name, err), nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.text}}, StructuredContent: res.structured}, nil
			})
	}
	no, yes := new(bool), new(bool)
	*yes = true
	writes := func() *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{DestructiveHint: yes, OpenWorldHint: no}
	}
	add(ToolWriteBegin, "Begin a chunked write", descWriteBegin, schemaWriteBegin, writes(), s.writeBegin)
	add(ToolWriteAppend, "Append a chunk", descWriteAppend, schemaWriteAppend, &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: no}, s.writeAppend)
	add(ToolWriteFinalize, "Finish a chunked write", descWriteFinalize, schemaWriteFinalize, writes(), s.writeFinalize)
	add(ToolWriteAbort, "Abandon a chunked write", descWriteAbort, schemaWriteAbort, &mcp.ToolAnnotations{DestructiveHint: no, OpenWorldHint: no}, s.writeAbort)
	add(ToolWriteFile, "Write a small file", descWriteFile, schemaWriteFile, writes(), s.writeFile)
	add(ToolEditFile, "Edit files", descEditFile, schemaEditFile, writes(), s.editFile)
	add(ToolUndo, "Undo a write", descUndo, schemaUndo, writes(), s.undo)
	add(ToolListSessions, "List writes", descListSessions, schemaListSessions, &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no}, s.listSessions)
}

// errorResult is a failed call as the model sees it: isError, a text
// saying what went wrong and what to do, and the same as structured
// content.
func (s *Server) errorResult(tool string, err error) *mcp.CallToolResult {
	out := errorOut{Message: errorText(err)}
	var pe *protocol.Error
	var down *errDaemonDown
	var ae *argError
	switch {
	case errors.As(err, &pe):
		out.Error = pe.Data.Reason
		out.SessionID = pe.Data.SessionID
		if pe.Data.Reason == protocol.ReasonSeqGap {
			out.NextSeq = pe.Data.ExpectedSeq
		}
	case errors.As(err, &down):
		out.Error = "daemon_not_running"
	case errors.As(err, &ae):
		out.Error = ae.reason
	default:
		out.Error = "failed"
	}
	s.log.Debug("tool failed", "tool", tool, "reason", out.Error, "err", err)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: out.Message}}, StructuredContent: out}
}

// errorOut is the structured content of a failed call.
type errorOut struct {
	// Error is a stable reason: the daemon's, or daemon_not_running,
	// invalid_arguments, outside_workspace, message_too_large.
	Error     string `json:"error"`
	Message   string `json:"message"`
	SessionID string `json:"session_id,omitempty"`
	// NextSeq is the seq to send, after a gap.
	NextSeq uint64 `json:"next_seq,omitempty"`
}

// argError is a tool call whose arguments are missing, malformed or out of
// bounds; reason is invalid_arguments, outside_workspace for a target
// outside every root, or message_too_large for a call too large to read.
type argError struct{ reason, msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &argError{"invalid_arguments", fmt.Sprintf(format, args...)}
}

// decodeArgs reads a call's arguments into v, once, in one pass over them
// (encoding/json would scan a 64 KiB content twice): by decodeFlat when
// they have its shape, else by the general decoder.
func (s *Server) decodeArgs(tool string, req *mcp.CallToolRequest, v any) error {
	raw, err := s.arguments(tool, req.Params.Arguments)
	if err != nil {
		return err
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if decodeFlat(raw, v) {
		return nil
	}
	// As lenient as encoding/json: a repeated name takes the last value,
	// invalid UTF-8 becomes U+FFFD.
	if err := jsonv2.Unmarshal(raw, v, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		var se *jsonv2.SemanticError
		if errors.As(err, &se) && se.JSONPointer != "" {
			field := strings.TrimPrefix(string(se.JSONPointer), "/")
			want := "a whole number"
			if se.GoType != nil {
				want = jsonKind(se.GoType.Kind())
			}
			return argErrorf("%s: %s must be %s", tool, field, want)
		}
		return argErrorf("%s: the arguments are not a JSON object of the tool's fields: %v", tool, err)
	}
	return nil
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer, reflect.Slice:
		return "a value of the schema's type"
	default:
		return "a whole number"
	}
}

// maxChunkBytes is the daemon's chunk limit, asked once, capped at
// WriteFileMaxBytes: a chunk is one tool call of the model.
func (s *Server) maxChunkBytes(ctx context.Context) int64 {
	s.mu.Lock()
	n := s.maxChunk
	s.mu.Unlock()
	if n > 0 {
		return n
	}
	var st protocol.StatusResult
	err := s.daemon.do(ctx, func(c *client.Client) (err error) {
		st, err = c.Status(ctx)
		return err
	})
	n = WriteFileMaxBytes
	if err == nil && st.MaxChunkBytes > 0 {
		n = min(n, st.MaxChunkBytes)
		s.mu.Lock()
		s.maxChunk = n
		s.mu.Unlock()
	}
	return n
}

// remember records where a session writes.
func (s *Server) remember(id string, pl placement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[id] = pl
}

// shown is a session's target as the model should read it: relative to
// its workspace root when inside it.
func (s *Server) shown(id, target string) string {
	s.mu.Lock()
	pl, ok := s.sessions[id]
	s.mu.Unlock()
	root := ""
	if ok {
		root = pl.root
	} else if roots := s.roots.known(); len(roots) > 0 {
		root = roots[0]
	}
	return displayPath(target, root)
}

type rootsKey struct{}

func withRoots(ctx context.Context, roots []string) context.Context {
	return context.WithValue(ctx, rootsKey{}, roots)
}

// callRoots are the workspace roots of the call ctx belongs to.
func callRoots(ctx context.Context) []string {
	roots, _ := ctx.Value(rootsKey{}).([]string)
	return roots
}
