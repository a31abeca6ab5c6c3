package daemon

import (
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// errTurnsUnavailable answers the turn methods until the checkpoint engine
// is wired in.
func errTurnsUnavailable(method string) error {
	e := protocol.Errorf(protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod, "%s is not served by this daemon yet", method)
	e.Data.Method = method
	return e
}

func (h *handler) turnBegin(_ *jsonrpc2.Conn, p *protocol.TurnBeginParams) (protocol.TurnBeginResult, error) {
	return protocol.TurnBeginResult{}, errTurnsUnavailable(protocol.MethodTurnBegin)
}

func (h *handler) turnEnd(_ *jsonrpc2.Conn, p *protocol.TurnEndParams) (protocol.TurnInfo, error) {
	return protocol.TurnInfo{}, errTurnsUnavailable(protocol.MethodTurnEnd)
}

func (h *handler) turnList(_ *jsonrpc2.Conn, p *protocol.TurnListParams) (protocol.TurnListResult, error) {
	return protocol.TurnListResult{}, errTurnsUnavailable(protocol.MethodTurnList)
}

func (h *handler) turnGet(_ *jsonrpc2.Conn, p *protocol.TurnGetParams) (protocol.TurnInfo, error) {
	return protocol.TurnInfo{}, errTurnsUnavailable(protocol.MethodTurnGet)
}

func (h *handler) turnUndo(_ *jsonrpc2.Conn, p *protocol.TurnUndoParams) (protocol.TurnUndoResult, error) {
	return protocol.TurnUndoResult{}, errTurnsUnavailable(protocol.MethodTurnUndo)
}

func (h *handler) turnRedo(_ *jsonrpc2.Conn, p *protocol.TurnRedoParams) (protocol.TurnUndoResult, error) {
	return protocol.TurnUndoResult{}, errTurnsUnavailable(protocol.MethodTurnRedo)
}

func (h *handler) checkpointCreate(_ *jsonrpc2.Conn, p *protocol.CheckpointCreateParams) (protocol.CheckpointInfo, error) {
	return protocol.CheckpointInfo{}, errTurnsUnavailable(protocol.MethodCheckpointCreate)
}
