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
	end := string(eventKey(before, 0))
	n, err := t.dropOldest(func(k []byte, _ int64) bool { return string(k) < end })
	t.pruned.Add(uint64(n))
	return n, err
}

// evict makes room for incoming bytes under MaxBytes: when they would take
// the stored total over it, it deletes the oldest events down to a tenth
// under it (less incoming), so that a store at its cap pays for one
// deletion per tenth of the cap written rather than one per batch.
func (t *Tracer) evict(incoming int64) {
	limit := t.opts.MaxBytes
	if limit <= 0 || t.bytes.Load()+incoming <= limit {
		return
	}
	target := limit - limit/10 - incoming
	t.pruneMu.Lock()
	defer t.pruneMu.Unlock()
	if t.st == nil {
		return
	}
	before := t.bytes.Load()
	n, err := t.dropOldest(func(_ []byte, freed int64) bool { return t.bytes.Load()-freed > target })
	t.evicted.Add(uint64(n))
	if err != nil {
		t.log.Warn("evicting trace events over --trace-max-bytes", "err", err)
		return
	}
	t.log.Debug("evicted the oldest trace events", "events", n, "bytes_before", before,
		"bytes_after", t.bytes.Load(), "max_bytes", limit)
}

// dropOldest deletes events from the oldest up, with their index entries,
// while more says to go on, and returns how many it deleted. more gets the
// next event's key and the bytes already freed in the page being
// collected, which t.bytes does not reflect yet. pruneMu must be held.
func (t *Tracer) dropOldest(more func(k []byte, freed int64) bool) (int, error) {
	if t.st == nil {
		return 0, ErrNotAttached
	}
	total := 0
	for {
		var keys, index [][]byte
		var freed int64
		err := t.st.ScanKV(bucketEvents, nil, func(k, v []byte) (bool, error) {
			if !more(k, freed) {
				return false, nil
			}
			keys = append(keys, append([]byte(nil), k...))
			freed += int64(len(k) + len(v))
			var ev struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal(v, &ev) == nil && ev.SessionID != "" {
				ik := indexKey(ev.SessionID, k)
				index = append(index, ik)
				freed += int64(len(ik))
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
		t.bytes.Add(-freed)
		total += len(keys)
		if len(keys) < prunePage {
			return total, nil
		}
	}
}
