package session

import (
	"encoding/json"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// record is a session as journaled in the store, next to its chunks. It is
// rewritten in the same transaction as every chunk, so after a crash the
// metadata always agrees with the chunks that were acknowledged.
type record struct {
	ID            string             `json:"id"`
	Intent        string             `json:"intent,omitempty"`
	RequestedPath string             `json:"requested_path"`
	WorkspaceRoot string             `json:"workspace_root,omitempty"`
	Target        string             `json:"target"`
	Operation     protocol.Operation `json:"operation"`
	Stage         protocol.Stage     `json:"stage"`
	LastSeq       uint64             `json:"last_seq"`
	Scanner       Scanner            `json:"scanner"`
	// BaseExists and BaseSHA256 describe the target when the session began.
	BaseExists bool                     `json:"base_exists"`
	BaseSHA256 string                   `json:"base_sha256,omitempty"`
	CreatedAt  time.Time                `json:"created_at"`
	UpdatedAt  time.Time                `json:"updated_at"`
	Result     *protocol.FinalizeResult `json:"result,omitempty"`
}

func (r *record) marshal() ([]byte, error) { return json.Marshal(r) }

func (r *record) info() protocol.SessionInfo {
	return protocol.SessionInfo{
		SessionID:     r.ID,
		Intent:        r.Intent,
		TargetFile:    r.Target,
		Operation:     r.Operation,
		Stage:         r.Stage,
		EndMarker:     r.Scanner.Marker,
		LastSeq:       r.LastSeq,
		Bytes:         r.Scanner.ContentLen(),
		Lines:         r.Scanner.Lines(),
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
		CreatedAt:     r.CreatedAt,
		UpdatedAt:     r.UpdatedAt,
		Result:        r.Result,
	}
}
