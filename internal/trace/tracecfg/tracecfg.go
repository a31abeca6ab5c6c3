// Package tracecfg builds the daemon's trace recorder from its settings:
// the flags of `oriond run` that configure tracing, their bounds, and the
// optional PostgreSQL sink.
package tracecfg

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/trace/tracepg"
)

// Settings configure tracing.
type Settings struct {
	Enabled       bool
	Retention     time.Duration
	MaxString     int
	MaxBytes      int64
	Postgres      string
	PostgresTable string
}

// AddFlags declares the trace flags on f, bound to t.
func AddFlags(f *pflag.FlagSet, t *Settings) {
	f.BoolVar(&t.Enabled, "trace", true, "record trace events (requests, stage changes, writes, errors) in the store; orionctl trace reads them")
	f.DurationVar(&t.Retention, "trace-retention", trace.DefaultRetention, "how long trace events are kept")
	f.IntVar(&t.MaxString, "trace-max-string", trace.DefaultMaxString, "longest string kept in a trace event, in bytes; longer ones are cut on a character boundary and marked")
	f.Int64Var(&t.MaxBytes, "trace-max-bytes", trace.DefaultMaxBytes, "cap on the stored trace events, in bytes (0: no cap); over it the oldest are deleted first")
	f.StringVar(&t.Postgres, "trace-postgres", "", "also insert trace events into this PostgreSQL database (a postgres:// URL or key=value DSN) [ORION_TRACE_POSTGRES]")
	f.StringVar(&t.PostgresTable, "trace-postgres-table", tracepg.DefaultTable, "the table, created if missing, trace events go to in PostgreSQL")
}

// MinMaxBytes is the smallest --trace-max-bytes: a few hundred events, so
// that a cap set too low still keeps the last moments of a session.
const MinMaxBytes = 64 << 10

// New builds the trace recorder, or nil when tracing is off. Its errors
// name the flag at fault.
func New(t Settings, log *slog.Logger) (*trace.Tracer, error) {
	if !t.Enabled {
		return nil, nil
	}
	if t.Retention < 0 {
		return nil, fmt.Errorf("--trace-retention %s: give a positive period", t.Retention)
	}
	if t.MaxString < 64 {
		return nil, fmt.Errorf("--trace-max-string %d: give at least 64 bytes", t.MaxString)
	}
	maxBytes := t.MaxBytes
	switch {
	case maxBytes == 0:
		maxBytes = -1 // trace.Options: negative is no cap, zero the default
	case maxBytes < MinMaxBytes:
		return nil, fmt.Errorf("--trace-max-bytes %d: give at least %d bytes, or 0 for no cap", t.MaxBytes, MinMaxBytes)
	}
	var sinks []trace.Sink
	if t.Postgres != "" {
		pg, err := tracepg.New(tracepg.Options{DSN: t.Postgres, Table: t.PostgresTable, Logger: log})
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, pg)
	}
	return trace.New(trace.Options{
		Retention: t.Retention,
		MaxBytes:  maxBytes,
		Limits:    trace.Limits{MaxString: t.MaxString},
		Sinks:     sinks,
		Logger:    log,
	}), nil
}
