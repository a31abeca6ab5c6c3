package trace

import (
	"encoding/json"
	"time"
)

// prunePage is how many events one prune transaction deletes.
const prunePage = 1000

// pruneTick is the periodic sweep, scheduled on the Tracer's clock.
func (t *Tracer) pruneTick() {
	t.pruneMu.Lock()
	defer t.pruneMu.Unlock()
	if t.pruneOff {
		return
	}
	if n, err := t.pruneLocked(t.opts.Clock.Now().Add(-t.opts.Retention)); err != nil {
		t.log.Warn("pruning trace events", "err", err)
	} else if n > 0 {
		t.log.Debug("pruned trace events", "events", n, "retention", t.opts.Retention)
	}
	t.pruneTimer = t.opts.Clock.AfterFunc(t.opts.PruneEvery, t.pruneTick)
}

// Prune deletes every event older than before, with its index entry, and
// returns how many it deleted.
func (t *Tracer) Prune(before time.Time) (int, error) {
	t.pruneMu.Lock()
	defer t.pruneMu.Unlock()
	if t.pruneOff {
		return 0, nil
	}
	return t.pruneLocked(before)
}

func (t *Tracer) pruneLocked(before time.Time) (int, error) {
	if t.st == nil {
		return 0, ErrNotAttached
	}
	end := eventKey(before, 0)
	total := 0
	for {
		var keys, index [][]byte
		err := t.st.ScanKV(bucketEvents, nil, func(k, v []byte) (bool, error) {
			if string(k) >= string(end) {
				return false, nil
			}
			keys = append(keys, append([]byte(nil), k...))
			var ev struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal(v, &ev) == nil && ev.SessionID != "" {
				index = append(index, indexKey(ev.SessionID, k))
			}
			return len(keys) < prunePage, nil
		})
		if err != nil {
			return total, err
		}
		if len(keys) == 0 {
			return total, nil
		}
		// The index first: an index entry never outlives a stored event
		// for long, and a query skips one that does.
		if len(index) > 0 {
			if err := t.st.DeleteKV(bucketSessions, index); err != nil {
				return total, err
			}
		}
		if err := t.st.DeleteKV(bucketEvents, keys); err != nil {
			return total, err
		}
		total += len(keys)
		t.pruned.Add(uint64(len(keys)))
		if len(keys) < prunePage {
			return total, nil
		}
	}
}
