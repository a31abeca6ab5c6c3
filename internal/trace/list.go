package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/protocol"
)

// Limits of trace.list.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10000
)

// List answers trace.list: the events that match p, oldest first. It
// first waits for events already recorded to be stored, so a caller reads
// its own writes. Invalid params are a *protocol.Error. A filter few
// events match reads the whole store to fill a page: List stops, with
// ctx's error, once ctx is done.
func (t *Tracer) List(ctx context.Context, p protocol.TraceListParams) (protocol.TraceListResult, error) {
	select {
	case <-t.attached:
	default:
		return protocol.TraceListResult{}, ErrNotAttached
	}
	q, err := newQuery(p)
	if err != nil {
		return protocol.TraceListResult{}, err
	}
	t.Flush()
	events, more, err := q.run(ctx, t.st)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return protocol.TraceListResult{}, err
		}
		return protocol.TraceListResult{}, fmt.Errorf("reading trace events: %w", err)
	}
	res := protocol.TraceListResult{Events: events, More: more, Stats: t.Stats()}
	if res.Events == nil {
		res.Events = []protocol.TraceEvent{}
	}
	if more && len(events) > 0 {
		res.Next = events[len(events)-1].ID
		if p.Newest {
			res.Next = events[0].ID
		}
	}
	return res, nil
}

// query is a validated trace.list: a key range [lo, hi) of one bucket and
// the filters applied to what it holds.
type query struct {
	p      protocol.TraceListParams
	limit  int
	lo, hi []byte // event keys; hi nil means no upper bound
}

func newQuery(p protocol.TraceListParams) (*query, error) {
	q := &query{p: p, limit: p.Limit}
	switch {
	case q.limit < 0:
		return nil, invalidParams("limit", "limit %d is negative; give 1 to %d, or 0 for %d", p.Limit, MaxListLimit, DefaultListLimit)
	case q.limit == 0:
		q.limit = DefaultListLimit
	case q.limit > MaxListLimit:
		q.limit = MaxListLimit
	}
	if !p.Since.IsZero() {
		q.lo = eventKey(p.Since, 0)
	}
	if p.After != "" {
		k, err := parseID(p.After)
		if err != nil {
			return nil, invalidParams("after", "after: %v; pass the id of an event, as a previous trace.list returned it", err)
		}
		if next := nextKey(k); next != nil && (q.lo == nil || bytes.Compare(next, q.lo) > 0) {
			q.lo = next
		}
	}
	if !p.Until.IsZero() {
		q.hi = eventKey(p.Until, 0)
	}
	if p.Before != "" {
		k, err := parseID(p.Before)
		if err != nil {
			return nil, invalidParams("before", "before: %v; pass the id of an event, as a previous trace.list returned it", err)
		}
		if q.hi == nil || bytes.Compare(k, q.hi) < 0 {
			q.hi = k
		}
	}
	return q, nil
}

func invalidParams(field, format string, args ...any) error {
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams, format, args...)
	e.Data.Method = protocol.MethodTraceList
	e.Data.Field = field
	return e
}

// scanPage is how many index keys are read in one transaction before their
// events are looked up (bbolt read transactions must not nest).
const scanPage = 256

// checkEvery is how many events a listing reads between two checks that
// its caller is still there.
const checkEvery = 256

// run returns up to limit matching events, oldest first, and whether more
// matched. It stops with ctx's error once ctx is done.
func (q *query) run(ctx context.Context, st Store) ([]protocol.TraceEvent, bool, error) {
	var out []protocol.TraceEvent
	want := q.limit + 1
	read := 0
	take := func(v []byte) error {
		if read++; read%checkEvery == 1 {
			failpoint.Wait(ctx, "trace.list.scan")
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var ev protocol.TraceEvent
		if err := json.Unmarshal(v, &ev); err != nil {
			return nil // not ours to fail on; a corrupt value is skipped
		}
		if matchType(q.p.Types, string(ev.Type)) {
			out = append(out, ev)
		}
		return nil
	}
	var err error
	if q.p.SessionID == "" {
		err = q.scanEvents(st, want, &out, take)
	} else {
		err = q.scanSession(st, want, &out, take)
	}
	if err != nil {
		return nil, false, err
	}
	more := len(out) > q.limit
	if more {
		out = out[:q.limit]
	}
	if q.p.Newest {
		slices.Reverse(out)
	}
	return out, more, nil
}

// scanEvents walks the events bucket in the query's range.
func (q *query) scanEvents(st Store, want int, out *[]protocol.TraceEvent, take func([]byte) error) error {
	fn := func(k, v []byte) (bool, error) {
		if len(k) != keyLen || !q.inRange(k) {
			return q.beforeRange(k), nil
		}
		if err := take(v); err != nil {
			return false, err
		}
		return len(*out) < want, nil
	}
	if q.p.Newest {
		from := q.hi // the greatest key <= hi; hi itself is excluded by inRange
		return st.ScanKVReverse(bucketEvents, from, fn)
	}
	return st.ScanKV(bucketEvents, q.lo, fn)
}

// beforeRange says whether a scan that met k outside the range should go
// on: only when it has not reached the range yet.
func (q *query) beforeRange(k []byte) bool {
	if len(k) != keyLen {
		return true
	}
	if q.p.Newest {
		return q.hi != nil && bytes.Compare(k, q.hi) >= 0
	}
	return q.lo != nil && bytes.Compare(k, q.lo) < 0
}

func (q *query) inRange(k []byte) bool {
	return (q.lo == nil || bytes.Compare(k, q.lo) >= 0) && (q.hi == nil || bytes.Compare(k, q.hi) < 0)
}

// scanSession walks the session index in pages, then looks each page's
// events up.
func (q *query) scanSession(st Store, want int, out *[]protocol.TraceEvent, take func([]byte) error) error {
	prefix := sessionPrefix(q.p.SessionID)
	var from []byte
	switch {
	case q.p.Newest && q.hi != nil:
		from = append(bytes.Clone(prefix), q.hi...)
	case q.p.Newest:
		from = append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, keyLen)...)
	case q.lo != nil:
		from = append(bytes.Clone(prefix), q.lo...)
	default:
		from = bytes.Clone(prefix)
	}
	for {
		var page [][]byte
		done := true
		fn := func(k, _ []byte) (bool, error) {
			if !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+keyLen {
				// Past the session's keys (or, going down, before them).
				return false, nil
			}
			ek := k[len(prefix):]
			if !q.inRange(ek) {
				if q.beforeRange(ek) {
					return true, nil
				}
				return false, nil
			}
			page = append(page, bytes.Clone(ek))
			if len(page) == scanPage {
				done = false
				return false, nil
			}
			return true, nil
		}
		var err error
		if q.p.Newest {
			err = st.ScanKVReverse(bucketSessions, from, fn)
		} else {
			err = st.ScanKV(bucketSessions, from, fn)
		}
		if err != nil {
			return err
		}
		for _, ek := range page {
			if err := lookup(st, ek, take); err != nil {
				return err
			}
			if len(*out) >= want {
				return nil
			}
		}
		if done || len(page) == 0 {
			return nil
		}
		last := page[len(page)-1]
		if q.p.Newest {
			prev := prevKey(last)
			if prev == nil {
				return nil
			}
			from = append(bytes.Clone(prefix), prev...)
		} else {
			next := nextKey(last)
			if next == nil {
				return nil
			}
			from = append(bytes.Clone(prefix), next...)
		}
	}
}

// lookup hands the stored event under key k to take; a missing event (its
// index entry outlived it) is skipped.
func lookup(st Store, k []byte, take func([]byte) error) error {
	return st.ScanKV(bucketEvents, k, func(got, v []byte) (bool, error) {
		if bytes.Equal(got, k) {
			return false, take(v)
		}
		return false, nil
	})
}

// prevKey is the greatest key smaller than k of the same length, or nil
// when k is all zeros.
func prevKey(k []byte) []byte {
	p := bytes.Clone(k)
	for i := len(p) - 1; i >= 0; i-- {
		p[i]--
		if p[i] != 0xff {
			return p
		}
	}
	return nil
}
