package client

import (
	"context"

	"github.com/orion-agent/orion/protocol"
)

// TurnBegin calls turn.begin: a checkpoint of the workspace, and a turn
// open in it until TurnEnd (or the next TurnBegin there).
func (c *Client) TurnBegin(ctx context.Context, p protocol.TurnBeginParams) (protocol.TurnBeginResult, error) {
	return call(ctx, c, protocol.TurnBegin, p)
}

// TurnEnd calls turn.end: the end checkpoint, and the files the turn
// changed.
func (c *Client) TurnEnd(ctx context.Context, turnID string) (protocol.TurnInfo, error) {
	return call(ctx, c, protocol.TurnEnd, protocol.TurnEndParams{TurnID: turnID})
}

// TurnList calls turn.list: one page of a workspace's turns, newest first.
func (c *Client) TurnList(ctx context.Context, p protocol.TurnListParams) (protocol.TurnListResult, error) {
	return call(ctx, c, protocol.TurnList, p)
}

// TurnGet calls turn.get.
func (c *Client) TurnGet(ctx context.Context, p protocol.TurnGetParams) (protocol.TurnInfo, error) {
	return call(ctx, c, protocol.TurnGet, p)
}

// TurnUndo calls turn.undo.
func (c *Client) TurnUndo(ctx context.Context, p protocol.TurnUndoParams) (protocol.TurnUndoResult, error) {
	return call(ctx, c, protocol.TurnUndo, p)
}

// TurnRedo calls turn.redo.
func (c *Client) TurnRedo(ctx context.Context, p protocol.TurnRedoParams) (protocol.TurnUndoResult, error) {
	return call(ctx, c, protocol.TurnRedo, p)
}

// CheckpointCreate calls checkpoint.create.
func (c *Client) CheckpointCreate(ctx context.Context, p protocol.CheckpointCreateParams) (protocol.CheckpointInfo, error) {
	return call(ctx, c, protocol.CheckpointCreate, p)
}
