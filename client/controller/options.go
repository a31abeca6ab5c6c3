package controller

import (
	"context"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// Defaults for Options. The idle and auto-finalize periods mirror the
// daemon's defaults; waitMargin covers the trip of a notification.
const (
	DefaultChunkBytes     = 16 << 10
	DefaultMaxIdlePrompts = 2
	DefaultReconnects     = 8
	daemonIdle            = 2 * time.Second
	daemonAutoFinalize    = 30 * time.Second
	waitMargin            = 2 * time.Second
)

// Options configure a Controller. The zero value works against the default
// socket with the daemon's default timers.
type Options struct {
	// Agent names the agent the controller writes for ("codex"), sent
	// with each session.begin for listings.
	Agent string
	// Socket is oriond's socket ("" means client.DefaultSocket()).
	Socket string
	// Dial connects to the daemon; nil means client.Dial on Socket. Tests
	// use it to hold the connection they later cut.
	Dial func(ctx context.Context, opts client.Options) (*client.Client, error)

	// WorkspaceRoot is what relative target files resolve against.
	WorkspaceRoot string
	// IdleMS, AutoFinalizeMS and TruncationPolicy are passed to
	// session.begin; zero values take the daemon's defaults.
	IdleMS           int64
	AutoFinalizeMS   int64
	TruncationPolicy protocol.TruncationPolicy

	// IdleWait is how long, after the model stopped without the marker,
	// to wait for the daemon's session.idle before writing the same prompt
	// itself (default: the idle period plus 2s). TruncateWait is how long
	// to wait for the auto-finalize (default: its period plus 2s).
	IdleWait     time.Duration
	TruncateWait time.Duration
	// MaxIdlePrompts is how many idle prompts one file gets before the
	// controller lets the auto-finalize end it (default 2).
	MaxIdlePrompts int

	// ChunkBytes bounds a chunk (default 16 KiB). By default content is
	// sent as soon as no append is unanswered: text that arrives while one
	// is out joins the next, so a model streaming a token per delta costs
	// one append per round trip and no delta waits longer than one. A
	// FlushAfter above zero holds content back instead until ChunkBytes
	// are pending or its oldest byte is that old (checked as text arrives
	// and as appends are answered): fewer, larger appends, each delta
	// waiting up to FlushAfter. Content is always sent at the marker and
	// at the end of each response.
	ChunkBytes int
	FlushAfter time.Duration
	// Reconnects is how many times a lost connection is redialled before
	// giving up (default 8).
	Reconnects int

	// Replay substitutes {{marker}} placeholders in the stream with the
	// live session's end marker: a recorded stream carries the marker of
	// the session it was recorded with. See Replay.
	Replay bool

	// StreamText emits text outside a session as it arrives, one text
	// event per delta, instead of gathering it until the next event: a
	// proxy that relays the model to an agent must not hold text back.
	StreamText bool

	// WithholdFileText leaves the file's lines out of the daemon's errors
	// the controller passes on (to the model and in events): a failed
	// edit then says what did not match and which lines came closest,
	// not what they hold. A door that cannot prove its caller is the
	// person who owns the files (a proxy with no secret) sets it.
	WithholdFileText bool

	// OnEvent receives every event, in order, on the caller's goroutine.
	OnEvent func(Event)
	// OnComment, if set, receives each SSE comment line (": text") as it
	// is read, before the next line. Test harnesses act on directives.
	OnComment func(ctx context.Context, text string)

	// Now and After are the clock, injected so tests control it.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

func (o *Options) setDefaults() {
	if o.Dial == nil {
		socket := o.Socket
		o.Dial = func(ctx context.Context, co client.Options) (*client.Client, error) {
			return client.Dial(ctx, socket, co)
		}
	}
	if o.IdleWait <= 0 {
		o.IdleWait = period(o.IdleMS, daemonIdle) + waitMargin
	}
	if o.TruncateWait <= 0 {
		o.TruncateWait = period(o.AutoFinalizeMS, daemonAutoFinalize) + waitMargin
	}
	if o.MaxIdlePrompts <= 0 {
		o.MaxIdlePrompts = DefaultMaxIdlePrompts
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.Reconnects <= 0 {
		o.Reconnects = DefaultReconnects
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
}

func period(ms int64, def time.Duration) time.Duration {
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return def
}
