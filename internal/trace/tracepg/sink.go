// Package tracepg is an optional trace sink that copies every trace event
// into a PostgreSQL table with a jsonb column, for teams whose agent
// backend keeps its traces in PostgreSQL.
//
// The sink never slows the daemon: Send only queues (dropping and counting
// when the queue is full); one goroutine inserts queued events in batches,
// and while the database is away it keeps them and retries with backoff.
// Events are valid JSON by construction (package trace sanitizes them), so
// the jsonb cast that fails on raw payloads (invalid UTF-8, NUL, lone
// surrogates) succeeds; should
// PostgreSQL still refuse one event, the batch is inserted event by event
// and only the refused one is dropped, so it cannot block the queue.
package tracepg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orion-agent/orion/internal/trace"
)

// Options configure a Sink.
type Options struct {
	// DSN is a PostgreSQL connection string, as a URL
	// (postgres://user:pass@host/db) or key=value pairs; libpq's
	// environment variables (PGHOST, PGPASSWORD, …) and ~/.pgpass apply.
	DSN string
	// Table is the table events go to, optionally schema-qualified
	// (default orion_trace_events). It is created if missing.
	Table string
	// Source names this daemon in the source column (default
	// user@hostname), so several daemons can share a table.
	Source string
	// Buffer is how many events may wait for the database (default
	// 10000); more are dropped and counted.
	Buffer int
	// MaxBatch and MaxBatchBytes bound one INSERT (default 500 events,
	// 8 MiB).
	MaxBatch      int
	MaxBatchBytes int
	// MinBackoff and MaxBackoff bound the wait between attempts while the
	// database is away (default 250ms and 30s).
	MinBackoff, MaxBackoff time.Duration
	// CloseTimeout is how long Close tries to deliver what is queued
	// (default 5s).
	CloseTimeout time.Duration
	Logger       *slog.Logger
}

// DefaultTable is the table events go to unless Options.Table says
// otherwise.
const DefaultTable = "orion_trace_events"

// Stats count what the sink did since New.
type Stats struct {
	// Queued events were accepted by Send; Dropped ones were not (the
	// queue was full, or the sink closed).
	Queued, Dropped uint64
	// Undelivered events were queued but still not inserted when Close
	// gave up.
	Undelivered uint64
	// Inserted events are in the table (or were already: inserts are
	// idempotent by source and id); Rejected ones PostgreSQL refused.
	Inserted, Rejected uint64
	// Failures counts failed attempts to reach or write to the database.
	Failures uint64
}

// Sink is a trace.Sink writing to PostgreSQL.
type Sink struct {
	opts   Options
	cfg    *pgx.ConnConfig
	table  pgx.Identifier
	log    *slog.Logger
	insert string
	schema []string

	mu     sync.RWMutex
	closed bool
	ch     chan trace.Entry
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	queued, dropped, undelivered, inserted, rejected, failures atomic.Uint64
}

var tableName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$`)

// New checks opts and starts the sink. It does not connect: the first
// batch does, so a database that is away when the daemon starts delays
// nothing.
func New(opts Options) (*Sink, error) {
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		// pgx's message may quote the DSN, password included.
		return nil, errors.New("trace-postgres: the connection string does not parse; use postgres://user@host:5432/db or host=... dbname=... (see libpq's connection strings)")
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "oriond"
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if !tableName.MatchString(opts.Table) {
		return nil, fmt.Errorf("trace-postgres: table %q is not a plain [schema.]name of letters, digits and _", opts.Table)
	}
	if opts.Source == "" {
		opts.Source = defaultSource()
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 10000
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 500
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = 8 << 20
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 5 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	table := pgx.Identifier(strings.Split(opts.Table, "."))
	s := &Sink{
		opts:  opts,
		cfg:   cfg,
		table: table,
		log:   log.With("sink", "postgres", "table", opts.Table),
		ch:    make(chan trace.Entry, opts.Buffer),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	name := table.Sanitize()
	base := table[len(table)-1]
	s.schema = []string{
		`CREATE TABLE IF NOT EXISTS ` + name + ` (
			source     text        NOT NULL,
			id         text        NOT NULL,
			time       timestamptz NOT NULL,
			type       text        NOT NULL,
			session_id text,
			method     text,
			event      jsonb       NOT NULL,
			PRIMARY KEY (source, id)
		)`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{base + "_session_time"}.Sanitize() + ` ON ` + name + ` (session_id, time)`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{base + "_time"}.Sanitize() + ` ON ` + name + ` (time)`,
	}
	// One statement per batch, whatever its size: arrays unnested into
	// rows. The event text is cast to jsonb by PostgreSQL itself.
	s.insert = `INSERT INTO ` + name + ` (source, id, time, type, session_id, method, event)
		SELECT $1, e.id, e.time, e.type, NULLIF(e.session_id, ''), NULLIF(e.method, ''), e.event::jsonb
		FROM unnest($2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[])
			AS e(id, time, type, session_id, method, event)
		ON CONFLICT (source, id) DO NOTHING`
	go s.loop()
	return s, nil
}

func defaultSource() string {
	name := "oriond"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return name + "@" + host
}

// Send queues e without waiting.
func (s *Sink) Send(e trace.Entry) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.dropped.Add(1)
		return
	}
	select {
	case s.ch <- e:
		s.queued.Add(1)
	default:
		s.dropped.Add(1)
	}
}

// Stats reports the sink's counters.
func (s *Sink) Stats() Stats {
	return Stats{
		Queued:      s.queued.Load(),
		Dropped:     s.dropped.Load(),
		Undelivered: s.undelivered.Load(),
		Inserted:    s.inserted.Load(),
		Rejected:    s.rejected.Load(),
		Failures:    s.failures.Load(),
	}
}

// Close delivers what is queued within CloseTimeout, then drops the rest
// (counted) and disconnects.
func (s *Sink) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.quit)
		<-s.done
	})
	return nil
}

// loop is the sink's only goroutine: it owns the connection.
func (s *Sink) loop() {
	defer close(s.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Close(ctx)
			cancel()
		}
	}()
	// Close interrupts an attempt in flight; finish then tries once more
	// within CloseTimeout.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.quit
		cancel()
	}()
	backoff := s.opts.MinBackoff
	away := false
	var batch []trace.Entry
	for {
		if len(batch) == 0 {
			select {
			case e := <-s.ch:
				batch = append(batch, e)
			case <-s.quit:
				s.finish(&conn, nil)
				return
			}
		}
		batch = s.fill(batch)
		err := s.deliver(ctx, &conn, batch)
		if err == nil {
			if away {
				s.log.Info("PostgreSQL is back; trace events delivered again")
				away = false
			}
			batch = batch[:0]
			backoff = s.opts.MinBackoff
			continue
		}
		s.failures.Add(1)
		if !away {
			s.log.Warn("PostgreSQL trace sink cannot deliver; keeping events and retrying", "err", err)
			away = true
		}
		select {
		case <-time.After(backoff):
		case <-s.quit:
			s.finish(&conn, batch)
			return
		}
		backoff = min(backoff*2, s.opts.MaxBackoff)
	}
}

// fill adds queued events to batch, up to the batch limits.
func (s *Sink) fill(batch []trace.Entry) []trace.Entry {
	size := 0
	for _, e := range batch {
		size += len(e.JSON)
	}
	for len(batch) < s.opts.MaxBatch && size < s.opts.MaxBatchBytes {
		select {
		case e := <-s.ch:
			batch = append(batch, e)
			size += len(e.JSON)
		default:
			return batch
		}
	}
	return batch
}

// finish tries, until CloseTimeout, to deliver batch and everything still
// queued, then counts the rest as undelivered.
func (s *Sink) finish(conn **pgx.Conn, batch []trace.Entry) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CloseTimeout)
	defer cancel()
	for {
		batch = s.fill(batch)
		if len(batch) == 0 {
			return
		}
		if err := s.deliver(ctx, conn, batch); err != nil {
			lost := uint64(len(batch) + len(s.ch))
			s.undelivered.Add(lost)
			s.log.Warn("PostgreSQL trace sink closed with events undelivered", "events", lost, "err", err)
			return
		}
		batch = batch[:0]
	}
}

// deliver inserts batch, connecting first if needed. A batch PostgreSQL
// refuses for its data is retried event by event, and the refused events
// are dropped; any other failure drops the connection and is returned, so
// the batch is retried.
func (s *Sink) deliver(ctx context.Context, conn **pgx.Conn, batch []trace.Entry) error {
	if *conn == nil {
		c, err := s.connect(ctx)
		if err != nil {
			return err
		}
		*conn = c
	}
	err := s.insertBatch(ctx, *conn, batch)
	if err == nil {
		s.inserted.Add(uint64(len(batch)))
		return nil
	}
	if !refused(err) {
		s.drop(conn)
		return err
	}
	for _, e := range batch {
		err := s.insertBatch(ctx, *conn, []trace.Entry{e})
		switch {
		case err == nil:
			s.inserted.Add(1)
		case refused(err):
			s.rejected.Add(1)
			s.log.Error("PostgreSQL refused a trace event; dropping it", "id", e.Event.ID, "type", e.Event.Type, "err", err)
		default:
			// Events inserted so far are inserted again on the retry;
			// ON CONFLICT makes that harmless.
			s.drop(conn)
			return err
		}
	}
	return nil
}

func (s *Sink) drop(conn **pgx.Conn) {
	if *conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		(*conn).Close(ctx)
		cancel()
		*conn = nil
	}
}

func (s *Sink) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(cctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	for _, stmt := range s.schema {
		if _, err := c.Exec(cctx, stmt); err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("creating the table: %w", err)
		}
	}
	return c, nil
}

func (s *Sink) insertBatch(ctx context.Context, c *pgx.Conn, batch []trace.Entry) error {
	n := len(batch)
	ids, types, sessions, methods, events := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	times := make([]time.Time, n)
	for i, e := range batch {
		ids[i], times[i], types[i] = e.Event.ID, e.Event.Time, string(e.Event.Type)
		sessions[i], methods[i], events[i] = e.Event.SessionID, e.Event.Method, string(e.JSON)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.Exec(ictx, s.insert, s.opts.Source, ids, times, types, sessions, methods, events)
	return err
}

// refused reports whether PostgreSQL rejected the data itself (a data
// exception such as invalid JSON, or a value over a size limit), which
// retrying cannot fix.
func refused(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "54")
}
