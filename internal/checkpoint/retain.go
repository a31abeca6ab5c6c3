package checkpoint

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// retainEvery spaces retention runs: each reads every record.
const retainEvery = time.Minute

// retain drops what is past --checkpoint-retention, then the oldest
// unpinned turns while the blobs are over --store-max-bytes, then every
// blob nothing kept refers to. It runs in the background, at most once a
// retainEvery.
func (e *Engine) retain() {
	e.mu.Lock()
	if e.closed || e.retaining || time.Since(e.lastRetain) < retainEvery {
		e.mu.Unlock()
		return
	}
	e.retaining = true
	e.lastRetain = time.Now()
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		if err := e.Retain(); err != nil {
			e.cfg.Logger.Warn("checkpoint retention", "err", err)
		}
		e.mu.Lock()
		e.retaining = false
		e.mu.Unlock()
	}()
}

// Retain runs retention now.
func (e *Engine) Retain() error {
	e.sweepMu.Lock()
	defer e.sweepMu.Unlock()
	cutoff := e.cfg.Clock.Now().Add(-e.cfg.Retention)
	turns, cps, err := e.records()
	if err != nil {
		return err
	}
	pinned := map[string]bool{}
	for _, cp := range cps {
		if cp.Pinned {
			pinned[cp.ID] = true
		}
	}
	keepTurn := func(t *turnRecord) bool {
		return t.EndedAt == nil || pinned[t.Start] || pinned[t.End]
	}
	var dropTurns []*turnRecord
	var live []*turnRecord
	for _, t := range turns {
		if !keepTurn(t) && t.EndedAt.Before(cutoff) {
			dropTurns = append(dropTurns, t)
		} else {
			live = append(live, t)
		}
	}
	why := "retention"
	dropped, err := e.drop(dropTurns, cps, live, cutoff)
	if err != nil {
		return err
	}
	// Over their share of the store's cap (half: the rest is the
	// sessions' and their undo backups'), the oldest unpinned turns go,
	// a tenth at a time, until the blobs fit.
	for e.cfg.StoreMaxBytes > 0 {
		_, size := e.cfg.Blobs.Stats()
		if size <= e.cfg.StoreMaxBytes/2 {
			break
		}
		var batch []*turnRecord
		var rest []*turnRecord
		n := max(1, len(live)/10)
		for _, t := range live {
			if len(batch) < n && !keepTurn(t) {
				batch = append(batch, t)
			} else {
				rest = append(rest, t)
			}
		}
		if len(batch) == 0 {
			break
		}
		why = "store_max_bytes"
		more, err := e.drop(batch, nil, rest, time.Time{})
		if err != nil {
			return err
		}
		dropped.add(more)
		live = rest
	}
	if dropped.turns+dropped.checkpoints+dropped.blobs > 0 {
		e.mu.Lock()
		e.dropped += int64(dropped.checkpoints + dropped.turns)
		e.mu.Unlock()
		e.cfg.Trace.Record(trace.Event{Time: e.cfg.Clock.Now(), Type: protocol.TraceCheckpointDropped, Fields: map[string]any{
			"turns": dropped.turns, "checkpoints": dropped.checkpoints, "blobs": dropped.blobs, "bytes": dropped.bytes, "why": why}})
	}
	return nil
}

type dropCount struct {
	turns, checkpoints, blobs int
	bytes                     int64
}

func (d *dropCount) add(o dropCount) {
	d.turns += o.turns
	d.checkpoints += o.checkpoints
	d.blobs += o.blobs
	d.bytes += o.bytes
}

// drop deletes turns (and their operations) and the checkpoints older
// than cutoff no kept turn needs, then sweeps the blobs.
func (e *Engine) drop(turns []*turnRecord, cps []*cpRecord, live []*turnRecord, cutoff time.Time) (dropCount, error) {
	var d dropCount
	needed := map[string]bool{}
	for _, t := range live {
		needed[t.Start], needed[t.End] = true, true
	}
	e.mu.Lock()
	for _, w := range e.ws {
		needed[w.rec.LastCheckpoint] = true
	}
	e.mu.Unlock()
	var turnKeys, cpKeys, opKeys [][]byte
	gone := map[string]bool{}
	for _, t := range turns {
		turnKeys = append(turnKeys, []byte(t.ID))
		gone[t.ID] = true
	}
	for _, cp := range cps {
		if !cp.Pinned && !needed[cp.ID] && cp.CreatedAt.Before(cutoff) {
			cpKeys = append(cpKeys, []byte(cp.ID))
		}
	}
	_ = e.cfg.Store.ScanKV(bucketOps, nil, func(k, v []byte) (bool, error) {
		var op opRecord
		if json.Unmarshal(v, &op) == nil && gone[op.Turn] && op.State == opDone {
			opKeys = append(opKeys, append([]byte(nil), k...))
		}
		return true, nil
	})
	// Writes a session reported as its turn was ending stay behind the
	// turn's record; they go with it.
	var writeKeys [][]byte
	_ = e.cfg.Store.ScanKeys(bucketWrites, func(k []byte) bool {
		if turn, _, ok := strings.Cut(string(k), "\x00"); ok && gone[turn] {
			writeKeys = append(writeKeys, append([]byte(nil), k...))
		}
		return true
	})
	for _, del := range []struct {
		bucket string
		keys   [][]byte
	}{{bucketTurns, turnKeys}, {bucketCheckpoints, cpKeys}, {bucketOps, opKeys}, {bucketWrites, writeKeys}} {
		if len(del.keys) > 0 {
			if err := e.cfg.Store.DeleteKV(del.bucket, del.keys); err != nil {
				return d, err
			}
		}
	}
	d.turns, d.checkpoints = len(turnKeys), len(cpKeys)
	blobs, bytes, err := e.sweep()
	d.blobs, d.bytes = blobs, bytes
	return d, err
}

// records reads every turn and checkpoint, oldest first.
func (e *Engine) records() ([]*turnRecord, []*cpRecord, error) {
	var turns []*turnRecord
	var cps []*cpRecord
	err := e.cfg.Store.ScanKV(bucketTurns, nil, func(k, v []byte) (bool, error) {
		var t turnRecord
		if err := json.Unmarshal(v, &t); err != nil {
			return false, err
		}
		turns = append(turns, &t)
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	err = e.cfg.Store.ScanKV(bucketCheckpoints, nil, func(k, v []byte) (bool, error) {
		var cp cpRecord
		if err := json.Unmarshal(v, &cp); err != nil {
			return false, err
		}
		cps = append(cps, &cp)
		return true, nil
	})
	return turns, cps, err
}

// sweep releases every blob that no index entry, kept turn, kept
// checkpoint or operation refers to. The caller holds sweepMu, so no
// checkpoint is between storing blobs and recording them.
func (e *Engine) sweep() (int, int64, error) {
	live := map[blobstore.Hash]bool{}
	mark := func(en *Entry) {
		if en != nil && en.Type == TypeFile && !en.Big {
			live[blobstore.Hash(en.Hash)] = true
		}
	}
	err := e.cfg.Store.ScanKV(bucketIndex, nil, func(k, v []byte) (bool, error) {
		if len(v) > 0 {
			if en, err := unmarshalEntry(v); err == nil {
				mark(en)
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	turns, cps, err := e.records()
	if err != nil {
		return 0, 0, err
	}
	for _, t := range turns {
		for _, c := range t.Changes {
			mark(c.Old)
			mark(c.New)
		}
	}
	for _, cp := range cps {
		for _, c := range cp.Changes {
			mark(c.Old)
			mark(c.New)
		}
	}
	err = e.cfg.Store.ScanKV(bucketOps, nil, func(k, v []byte) (bool, error) {
		var op opRecord
		if json.Unmarshal(v, &op) == nil {
			for _, a := range op.Actions {
				mark(a.Pre)
				mark(a.Post)
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	var dead []blobstore.Hash
	if err := e.cfg.Blobs.ForEach(func(h blobstore.Hash) bool {
		if !live[h] {
			dead = append(dead, h)
		}
		return true
	}); err != nil {
		return 0, 0, err
	}
	_, before := e.cfg.Blobs.Stats()
	if err := e.cfg.Blobs.Release(dead); err != nil {
		return 0, 0, err
	}
	_, after := e.cfg.Blobs.Stats()
	// The walk mapped every record's pages into the daemon.
	_ = e.cfg.Store.DropMappedPages()
	return len(dead), before - after, nil
}

var _ = store.KV{}
