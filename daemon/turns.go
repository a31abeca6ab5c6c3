package daemon

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/checkpoint"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// openCheckpoints starts the checkpoint engine on the daemon's store. It
// writes through two confined views of the roots: one refusing protected
// paths, and one that lifts the default protections (never the daemon's
// own files), used only to put a protected path back to the content it
// had at a turn's start.
func openCheckpoints(cfg Config, st *store.Store, guard *pathguard.Guard, rec trace.Recorder, log *slog.Logger) (*checkpoint.Engine, error) {
	blobs, err := blobstore.OpenBolt(st)
	if err != nil {
		return nil, err
	}
	fsys, err := confine.New(guard)
	if err != nil {
		return nil, err
	}
	p := cfg.Protection()
	rawGuard, err := pathguard.NewProtected(guard.Roots(), pathguard.Protection{Always: p.Always})
	if err != nil {
		fsys.Close()
		return nil, err
	}
	raw, err := confine.New(rawGuard)
	if err != nil {
		fsys.Close()
		return nil, err
	}
	return checkpoint.New(checkpoint.Config{
		Store: st, Blobs: blobs, Guard: guard, FS: fsys, RawFS: raw, Always: p.Always,
		StateDir:          filepath.Join(cfg.StateDir),
		Home:              p.Home,
		MaxFileBytes:      cfg.CheckpointMaxFileBytes,
		MaxWorkspaceFiles: cfg.CheckpointMaxWorkspaceFiles,
		MaxWorkspaceBytes: cfg.CheckpointMaxWorkspaceBytes,
		Retention:         cfg.CheckpointRetention,
		StoreMaxBytes:     cfg.StoreMaxBytes,
		Logger:            log,
		Trace:             rec,
	})
}

func ptr[T any](v T) *T { return &v }

func (h *handler) turnBegin(_ context.Context, _ Peer, p *protocol.TurnBeginParams) (protocol.TurnBeginResult, error) {
	return h.turns.Begin(*p)
}

func (h *handler) turnEnd(_ context.Context, _ Peer, p *protocol.TurnEndParams) (protocol.TurnInfo, error) {
	return h.turns.End(p.TurnID)
}

func (h *handler) turnList(ctx context.Context, _ Peer, p *protocol.TurnListParams) (protocol.TurnListResult, error) {
	return h.turns.List(ctx, *p)
}

func (h *handler) turnGet(ctx context.Context, _ Peer, p *protocol.TurnGetParams) (protocol.TurnInfo, error) {
	return h.turns.Get(ctx, *p)
}

func (h *handler) turnUndo(_ context.Context, _ Peer, p *protocol.TurnUndoParams) (protocol.TurnUndoResult, error) {
	return h.turns.Undo(*p)
}

func (h *handler) turnRedo(_ context.Context, _ Peer, p *protocol.TurnRedoParams) (protocol.TurnUndoResult, error) {
	return h.turns.Redo(*p)
}

func (h *handler) checkpointCreate(_ context.Context, _ Peer, p *protocol.CheckpointCreateParams) (protocol.CheckpointInfo, error) {
	return h.turns.Checkpoint(*p)
}
