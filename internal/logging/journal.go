package logging

import (
	"context"
	"io"
	"log/slog"
	"sync"
)

// journalWriter prefixes each record with its priority, in one write.
type journalWriter struct {
	w      io.Writer
	prefix string
}

func (j *journalWriter) Write(p []byte) (int, error) {
	buf := make([]byte, 0, len(j.prefix)+len(p))
	buf = append(append(buf, j.prefix...), p...)
	if _, err := j.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// journalHandler sets the priority prefix for each record; the built-in
// handlers write a record in a single Write, under mu here.
type journalHandler struct {
	inner slog.Handler
	mu    *sync.Mutex
	jw    *journalWriter
}

func (h journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jw.prefix = syslogPriority(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return journalHandler{inner: h.inner.WithAttrs(as), mu: h.mu, jw: h.jw}
}

func (h journalHandler) WithGroup(name string) slog.Handler {
	return journalHandler{inner: h.inner.WithGroup(name), mu: h.mu, jw: h.jw}
}

func syslogPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	}
	return "<7>"
}
