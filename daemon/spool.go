package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/spool"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// openSpool watches the recovery spool and turns each entry a crashed
// client left there into a session.
func openSpool(cfg Config, mgr *session.Manager, rec trace.Recorder, log *slog.Logger) (*spool.Spool, error) {
	dir := cfg.SpoolDir
	if dir == "" {
		dir = filepath.Join(cfg.StateDir, "spool")
	}
	settle := cfg.SpoolSettle
	if settle <= 0 {
		settle = DefaultSpoolSettle
	}
	importEntry := func(e spool.Entry) error {
		rc, err := e.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		id := session.ImportedID(e.ID, e.CreatedAt)
		if _, limit := mgr.Limits(); e.ContentSize > limit {
			// Refused before anything is stored: an import of 256 MiB that
			// fails at the limit would write all of it first.
			return &spool.Problem{Dir: e.Dir, Reason: protocol.ReasonSessionTooLarge, Msg: fmt.Sprintf(
				"its content is %d bytes, over --max-session-bytes (%d); nothing was imported", e.ContentSize, limit)}
		}
		_, err = mgr.Import(id, protocol.BeginParams{
			Intent:        e.Intent,
			TargetFile:    e.TargetFile,
			WorkspaceRoot: e.WorkspaceRoot,
			Operation:     protocol.Operation(e.Operation),
		}, e.CreatedAt, rc)
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code != protocol.CodeIO {
			// The daemon refuses this entry as it stands (outside the
			// roots, create over an existing file, ...): report it once
			// and leave it for a person to look at.
			return &spool.Problem{Dir: e.Dir, Reason: pe.Data.Reason, Msg: pe.Message}
		}
		if err != nil {
			return err
		}
		log.Info("imported a spooled session", "spool_entry", e.Dir, "session", id, "target", e.Target())
		rec.Record(trace.Event{Time: time.Now(), Type: protocol.TraceSpoolImport, SessionID: id,
			Fields: map[string]any{"entry": e.Dir, "target": e.Target(), "bytes": e.ContentSize}})
		return nil
	}
	onProblem := func(p spool.Problem) {
		log.Warn("malformed spool entry left in place", "spool_entry", p.Dir, "reason", p.Reason, "err", p.Msg)
		rec.Record(trace.Event{Time: time.Now(), Type: protocol.TraceSpoolProblem,
			Fields: map[string]any{"entry": p.Dir, "reason": p.Reason, "message": p.Msg}})
	}
	sp, err := spool.New(dir, importEntry, onProblem, spool.Options{Logger: log, Settle: settle})
	if err != nil {
		return nil, fmt.Errorf("opening the recovery spool %s: %w", dir, err)
	}
	return sp, nil
}
