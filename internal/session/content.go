package session

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/protocol"
)

// Content reads, bounded, what a session holds: its streamed content as
// journaled, or the backup of the file its write replaced. It changes
// nothing. Content a store no longer holds answers Available false, not an
// error, so a viewer can say so. It stops, with ctx's error, once ctx is
// done: up to protocol.MaxContentBytes are read for a caller still there.
func (m *Manager) Content(ctx context.Context, p protocol.ContentParams) (protocol.ContentResult, error) {
	e, err := m.lookup(p.SessionID)
	if err != nil {
		return protocol.ContentResult{}, err
	}
	limit := p.MaxBytes
	if limit <= 0 || limit > protocol.MaxContentBytes {
		limit = protocol.MaxContentBytes
	}
	e.mu.Lock()
	r := e.rec
	e.mu.Unlock()
	res := protocol.ContentResult{SessionID: r.ID, Source: p.Source}
	var buf bytes.Buffer
	switch p.Source {
	case "", protocol.ContentStreamed:
		res.Source = protocol.ContentStreamed
		res.Total = r.Scanner.ContentLen()
		n := min(res.Total, limit)
		if _, err := m.cfg.Store.CopyRange(r.ID, ctxWriter{ctx, &buf}, 0, n); err != nil {
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				return res, err
			}
			// The chunks of a finished session are gone once cleaned.
			return res, nil
		}
	case protocol.ContentBackup:
		if r.BackupPieces == 0 {
			return res, nil
		}
		// A prefix scan reads no value past the last piece.
		err := m.cfg.Store.ScanKVPrefix(backupBucket, append([]byte(r.ID), '/'), func(k, v []byte) (bool, error) {
			if err := readOn(ctx, "session.content.piece"); err != nil {
				return false, err
			}
			res.Total += int64(len(v))
			if room := limit - int64(buf.Len()); room > 0 {
				buf.Write(v[:min(int64(len(v)), room)])
			}
			return true, nil
		})
		if err != nil {
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				return res, err
			}
			return res, ioError(r.ID, "reading the backup", err)
		}
	default:
		pe := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"source %q: want %q or %q", p.Source, protocol.ContentStreamed, protocol.ContentBackup)
		pe.Data.Field = "source"
		return res, pe
	}
	res.Available = true
	raw := buf.Bytes()[:encodedPrefix(buf.Bytes(), protocol.MaxContentBytes)]
	res.Bytes = int64(len(raw))
	res.Truncated = res.Bytes < res.Total
	res.Content = strings.ToValidUTF8(string(raw), "\uFFFD")
	return res, nil
}

// encodedPrefix is the length of the longest prefix of raw, cut between
// characters, whose content encodes in a JSON reply to at most limit
// bytes. The reply's size is what the daemon holds in memory and writes:
// control bytes escape to six bytes each, so raw bytes alone would let a
// 4 MiB session make a 24 MiB reply. The cost is encoding/json's, the
// encoder of replies: HTML characters escaped, invalid bytes sent as
// U+FFFD.
func encodedPrefix(raw []byte, limit int64) int {
	var size int64
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		cost := int64(n)
		switch {
		case r == utf8.RuneError && n == 1:
			cost = 3 // U+FFFD
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			cost = 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			cost = 6
		}
		if size+cost > limit {
			return i
		}
		size += cost
		i += n
	}
	return len(raw)
}

// readOn is where a long read checks that its caller is still there: it
// returns ctx's error once ctx is done. point is the failpoint of that
// step, where a test holds the read until the caller has gone.
func readOn(ctx context.Context, point string) error {
	failpoint.Wait(ctx, point)
	return ctx.Err()
}

// ctxWriter is a writer that refuses to go on once ctx is done, so that a
// copy into it stops between two chunks when its caller has gone.
type ctxWriter struct {
	ctx context.Context
	w   *bytes.Buffer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := readOn(c.ctx, "session.content.chunk"); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
