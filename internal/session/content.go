package session

import (
	"bytes"
	"strings"

	"github.com/orion-agent/orion/protocol"
)

// Content reads, bounded, what a session holds: its streamed content as
// journaled, or the backup of the file its write replaced. It changes
// nothing. Content a store no longer holds answers Available false, not an
// error, so a viewer can say so.
func (m *Manager) Content(p protocol.ContentParams) (protocol.ContentResult, error) {
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
		if _, err := m.cfg.Store.CopyRange(r.ID, &buf, 0, n); err != nil {
			// The chunks of a finished session are gone once cleaned.
			return res, nil
		}
	case protocol.ContentBackup:
		if r.BackupPieces == 0 {
			return res, nil
		}
		prefix := append([]byte(r.ID), '/')
		err := m.cfg.Store.ScanKV(backupBucket, backupKey(r.ID, 0), func(k, v []byte) (bool, error) {
			if !bytes.HasPrefix(k, prefix) {
				return false, nil
			}
			res.Total += int64(len(v))
			if room := limit - int64(buf.Len()); room > 0 {
				buf.Write(v[:min(int64(len(v)), room)])
			}
			return true, nil
		})
		if err != nil {
			return res, ioError(r.ID, "reading the backup", err)
		}
	default:
		pe := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"source %q: want %q or %q", p.Source, protocol.ContentStreamed, protocol.ContentBackup)
		pe.Data.Field = "source"
		return res, pe
	}
	res.Available = true
	res.Bytes = int64(buf.Len())
	res.Truncated = res.Bytes < res.Total
	res.Content = strings.ToValidUTF8(buf.String(), "\uFFFD")
	return res, nil
}
