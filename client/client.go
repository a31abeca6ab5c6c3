// Package client is the Go client of oriond: typed calls for every protocol
// method over the daemon's Unix socket, and a streamer that sends content in
// chunks split on UTF-8 character boundaries.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/protocol"
)

// DefaultSocket is the socket oriond listens on when neither it nor the
// client was told otherwise: $ORION_SOCKET, $XDG_RUNTIME_DIR/orion/oriond.sock,
// or $TMPDIR/orion-$UID/oriond.sock (/tmp where TMPDIR is unset).
func DefaultSocket() string { return paths.DefaultSocket(os.Getenv) }

// StartCommand is the command that starts a daemon listening on socket:
// `oriond run`, with --socket when socket is not the daemon's own default
// (an $ORION_SOCKET the daemon may not see counts as not the default).
func StartCommand(socket string) string {
	noEnv := func(k string) string {
		if k == "ORION_SOCKET" {
			return ""
		}
		return os.Getenv(k)
	}
	if socket == "" || socket == paths.DefaultSocket(noEnv) {
		return "oriond run"
	}
	return "oriond run --socket " + shellQuote(socket)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			safe = false
			break
		}
	}
	if safe && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Options configure a Client.
type Options struct {
	// OnNotification, if set, receives notifications the daemon sends
	// (session.idle and friends). It runs on the connection's read loop and
	// must not call back into the Client synchronously.
	OnNotification func(method string, params json.RawMessage)
}

// Client is one connection to oriond. Its methods are safe for concurrent
// use.
type Client struct {
	conn  *jsonrpc2.Conn
	codec *jsonrpc.ClientCodec
	// raw is what the client knows of its daemon's raw content (raw.go).
	raw rawState
}

// ErrDaemonUnreachable wraps a failure to connect, so callers can tell "no
// daemon" from a request the daemon refused.
var ErrDaemonUnreachable = errors.New("oriond is not reachable")

// UnreachableError is a failure to connect to the daemon at Socket. It
// matches ErrDaemonUnreachable (errors.Is).
type UnreachableError struct {
	Socket string
	// Err is why: no such socket, connection refused, ...
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%v at %s (start it with `%s`): %v", ErrDaemonUnreachable, e.Socket, StartCommand(e.Socket), e.Err)
}

// Is makes errors.Is(err, ErrDaemonUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrDaemonUnreachable }

// Unwrap returns the cause.
func (e *UnreachableError) Unwrap() error { return e.Err }

// ErrUntrustedSocket wraps a refusal to talk to a socket that is not the
// user's: the socket or its directory belongs to another user or is
// writable by others, or the process serving it runs as another user.
// Nothing was sent.
var ErrUntrustedSocket = paths.ErrUntrustedSocket

// Dial connects to the daemon at socket ("" means DefaultSocket). Before
// sending anything it checks whom it talks to: the socket and its
// directory must be the user's and not writable by others, and the process
// behind the socket must run as the user (its peer credentials); otherwise
// it fails with an error wrapping ErrUntrustedSocket that names the owner.
func Dial(ctx context.Context, socket string, opts Options) (*Client, error) {
	if socket == "" {
		socket = DefaultSocket()
	}
	uid := os.Getuid()
	if err := paths.TrustSocket(socket, uid); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if errors.Is(err, ErrUntrustedSocket) {
			return nil, fmt.Errorf("refusing to talk to %s: %w", socket, err)
		}
		return nil, &UnreachableError{Socket: socket, Err: err}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, &UnreachableError{Socket: socket, Err: err}
	}
	if uc, ok := c.(*net.UnixConn); ok {
		if err := paths.TrustPeer(uc, uid); err != nil {
			c.Close()
			return nil, fmt.Errorf("refusing to talk to %s: %w", socket, err)
		}
	}
	return newClient(c, opts), nil
}

// newClient is a Client speaking over c, a connection already trusted.
func newClient(c net.Conn, opts Options) *Client {
	var h jsonrpc2.Handler = noHandler{}
	if opts.OnNotification != nil {
		h = notifyHandler(opts.OnNotification)
	}
	// The library logs a lost connection to the global logger; a client
	// learns of it from the failed call instead.
	codec := jsonrpc.NewClientCodec()
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(codec.Conn(c), codec), h,
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)), codec.OnSend())
	return &Client{conn: conn, codec: codec}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.conn.DisconnectNotify() }

type noHandler struct{}

func (noHandler) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

type notifyHandler func(string, json.RawMessage)

func (f notifyHandler) Handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if !req.Notif {
		return
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	f(req.Method, params)
}

// Call sends one request. An error the daemon returned is a *protocol.Error
// (use errors.As); anything else is a transport failure.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	k := c.codec.NewCall()
	defer k.Release()
	var b []byte
	if params != nil {
		// As jsonrpc2 encodes params: a json.RawMessage checked and
		// compacted too.
		var err error
		if b, err = json.Marshal(params); err != nil {
			return err
		}
	}
	return c.roundTrip(ctx, k, method, b, result)
}

// roundTrip sends k, the request of method with params (encoded), and
// decodes its result into result. The result is decoded here, once, from
// the reply as sent: jsonrpc2 would decode it into generic values and copy
// it first.
func (c *Client) roundTrip(ctx context.Context, k *jsonrpc.Call, method string, params []byte, result any) error {
	if err := k.Send(ctx, c.conn, method, params); err != nil {
		return protocolError(err)
	}
	b, err := k.Wait(ctx)
	if err != nil {
		return protocolError(err)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(b, result)
}

// call sends one request of method m, typed by it.
func call[P, R any](ctx context.Context, c *Client, m protocol.Method[P, R], params P) (R, error) {
	var r R
	err := c.Call(ctx, m.Name, params, &r)
	return r, err
}

// protocolError turns an error reply into a *protocol.Error.
func protocolError(err error) error {
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		pe := &protocol.Error{Code: rpcErr.Code, Message: rpcErr.Message}
		if rpcErr.Data != nil {
			// Data that does not decode still leaves code and message.
			_ = json.Unmarshal(*rpcErr.Data, &pe.Data)
		}
		return pe
	}
	return err
}

// Begin calls session.begin.
func (c *Client) Begin(ctx context.Context, p protocol.BeginParams) (protocol.BeginResult, error) {
	return call(ctx, c, protocol.SessionBegin, p)
}

// Append calls session.append.
func (c *Client) Append(ctx context.Context, p protocol.AppendParams) (protocol.AppendResult, error) {
	var r protocol.AppendResult
	k := c.codec.NewCall()
	defer k.Release()
	// A field added to AppendParams must be sent too: this conversion
	// stops compiling when the struct changes.
	_ = struct {
		SessionID string `json:"session_id"`
		Seq       uint64 `json:"seq"`
		Chunk     string `json:"chunk"`
	}(p)
	// Only read: the chunk is written from where it is, or quoted.
	chunk := unsafe.Slice(unsafe.StringData(p.Chunk), len(p.Chunk))
	if err := c.sendChunk(ctx, k, &k.Buf, p.SessionID, p.Seq, chunk); err != nil {
		return r, protocolError(err)
	}
	b, err := k.Wait(ctx)
	if err != nil {
		return r, protocolError(err)
	}
	return readAppendResult(b, p.SessionID)
}

// Finalize calls session.finalize.
func (c *Client) Finalize(ctx context.Context, p protocol.FinalizeParams) (protocol.FinalizeResult, error) {
	return call(ctx, c, protocol.SessionFinalize, p)
}

// Write calls session.write: a whole file in one request, its content at
// most the daemon's max_chunk_bytes (daemon.status).
func (c *Client) Write(ctx context.Context, p protocol.WriteParams) (protocol.FinalizeResult, error) {
	var r protocol.FinalizeResult
	if c.rawFor(ctx, len(p.Content)) && utf8.ValidString(p.Content) {
		return r, c.writeRaw(ctx, p, &r)
	}
	bp, _ := writeBuffers.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b, err := writeParamsJSON((*bp)[:0], p)
	if err != nil {
		return r, err
	}
	k := c.codec.NewCall()
	err = c.roundTrip(ctx, k, protocol.SessionWrite.Name, b, &r)
	k.Release()
	// The request was written once Send returned: nothing holds b any
	// more.
	if cap(b) <= maxPooledWrite {
		*bp = b[:0]
		writeBuffers.Put(bp)
	}
	return r, err
}

// writeBuffers keeps the encoded params of session.write for the next
// call: a server writing whole files one after another (orionctl mcp)
// would otherwise allocate each file's size again for every write, and
// collect it.
var writeBuffers sync.Pool // of *[]byte

// maxPooledWrite bounds the buffers writeBuffers keeps: a rare large file
// is not held for the small ones after it.
const maxPooledWrite = 1 << 20

// Abort calls session.abort.
func (c *Client) Abort(ctx context.Context, id string) (protocol.AbortResult, error) {
	return call(ctx, c, protocol.SessionAbort, protocol.SessionIDParams{SessionID: id})
}

// Get calls session.get.
func (c *Client) Get(ctx context.Context, id string) (protocol.SessionInfo, error) {
	return call(ctx, c, protocol.SessionGet, protocol.SessionIDParams{SessionID: id})
}

// List calls session.list for every page, following next_cursor, and
// returns all the sessions.
func (c *Client) List(ctx context.Context, all bool) ([]protocol.SessionInfo, error) {
	var sessions []protocol.SessionInfo
	p := protocol.ListParams{All: all}
	for {
		r, err := c.ListPage(ctx, p)
		if err != nil {
			return sessions, err
		}
		sessions = append(sessions, r.Sessions...)
		// A cursor that does not move would loop forever.
		if r.NextCursor == "" || r.NextCursor == p.Cursor || len(r.Sessions) == 0 {
			return sessions, nil
		}
		p.Cursor = r.NextCursor
	}
}

// ListPage calls session.list once: at most p.Limit sessions from
// p.Cursor on, and the cursor of the next page.
func (c *Client) ListPage(ctx context.Context, p protocol.ListParams) (protocol.ListResult, error) {
	return call(ctx, c, protocol.SessionList, p)
}

// Resume calls session.resume.
func (c *Client) Resume(ctx context.Context, id string) (protocol.ResumeResult, error) {
	return call(ctx, c, protocol.SessionResume, protocol.SessionIDParams{SessionID: id})
}

// Continue calls session.continue.
func (c *Client) Continue(ctx context.Context, id string) (protocol.BeginResult, error) {
	return call(ctx, c, protocol.SessionContinue, protocol.ContinueParams{SessionID: id})
}

// Undo calls session.undo.
func (c *Client) Undo(ctx context.Context, id string) (protocol.UndoResult, error) {
	return call(ctx, c, protocol.SessionUndo, protocol.SessionIDParams{SessionID: id})
}

// Content calls session.content.
func (c *Client) Content(ctx context.Context, p protocol.ContentParams) (protocol.ContentResult, error) {
	return call(ctx, c, protocol.SessionContent, p)
}

// TxBegin calls tx.begin.
func (c *Client) TxBegin(ctx context.Context, p protocol.TxBeginParams) (protocol.TxBeginResult, error) {
	return call(ctx, c, protocol.TxBegin, p)
}

// TxCommit calls tx.commit.
func (c *Client) TxCommit(ctx context.Context, p protocol.TxCommitParams) (protocol.TxCommitResult, error) {
	return call(ctx, c, protocol.TxCommit, p)
}

// TxAbort calls tx.abort.
func (c *Client) TxAbort(ctx context.Context, id string) (protocol.TxInfo, error) {
	return call(ctx, c, protocol.TxAbort, protocol.TxIDParams{TxID: id})
}

// TxGet calls tx.get.
func (c *Client) TxGet(ctx context.Context, id string) (protocol.TxInfo, error) {
	return call(ctx, c, protocol.TxGet, protocol.TxIDParams{TxID: id})
}

// Clean calls session.clean.
func (c *Client) Clean(ctx context.Context, p protocol.CleanParams) (protocol.CleanResult, error) {
	return call(ctx, c, protocol.SessionClean, p)
}

// Status calls daemon.status.
func (c *Client) Status(ctx context.Context) (protocol.StatusResult, error) {
	st, err := call(ctx, c, protocol.DaemonStatus, protocol.NoParams{})
	if err == nil {
		c.raw.learn(st)
	}
	return st, err
}

// AllowRoot calls daemon.allow_root.
func (c *Client) AllowRoot(ctx context.Context, dir string) (protocol.AllowRootResult, error) {
	return call(ctx, c, protocol.DaemonAllowRoot, protocol.AllowRootParams{Path: dir})
}

// ToolDefinitions calls tools.definitions.
func (c *Client) ToolDefinitions(ctx context.Context) ([]protocol.ToolDefinition, error) {
	r, err := call(ctx, c, protocol.ToolsDefinitions, protocol.NoParams{})
	return r.Tools, err
}
