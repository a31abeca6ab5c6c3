package trace

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"
)

// Buckets of the store that hold traces. Events are keyed by time, so a
// cursor walks them in time order; the session index maps
// <session id> NUL <event key> to nothing, so one session's events are a
// contiguous, time-ordered range of it.
const (
	bucketEvents   = "trace.events"
	bucketSessions = "trace.sessions"
)

// keyLen is the length of an event key: 8 bytes of Unix nanoseconds and 8
// bytes of a sequence number that keeps events of the same nanosecond
// apart, both big-endian so byte order is time order.
const keyLen = 16

func eventKey(t time.Time, seq uint64) []byte {
	k := make([]byte, keyLen)
	binary.BigEndian.PutUint64(k, timeNanos(t))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

// timeNanos is t in Unix nanoseconds, clamped to what a key can hold.
func timeNanos(t time.Time) uint64 {
	if t.IsZero() || t.Before(time.Unix(0, 0)) {
		return 0
	}
	if t.After(time.Unix(0, math.MaxInt64)) {
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

func keySeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[8:]) }

func keyTime(k []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC() }

// eventID is the key as the event's public id.
func eventID(k []byte) string { return hex.EncodeToString(k) }

// parseID is the inverse of eventID.
func parseID(id string) ([]byte, error) {
	k, err := hex.DecodeString(id)
	if err != nil || len(k) != keyLen {
		return nil, fmt.Errorf("%q is not a trace event id (32 hex digits)", id)
	}
	return k, nil
}

// sessionPrefix is the start of every index key of a session.
func sessionPrefix(id string) []byte {
	p := make([]byte, 0, len(id)+1+keyLen)
	p = append(p, id...)
	return append(p, 0)
}

func indexKey(sessionID string, ek []byte) []byte {
	return append(sessionPrefix(sessionID), ek...)
}

// nextKey is the smallest key greater than k of the same length, or nil
// when k is all 0xff.
func nextKey(k []byte) []byte {
	n := append([]byte(nil), k...)
	for i := len(n) - 1; i >= 0; i-- {
		n[i]++
		if n[i] != 0 {
			return n
		}
	}
	return nil
}
