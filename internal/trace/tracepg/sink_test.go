package tracepg_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/trace/tracepg"
	"github.com/orion-agent/orion/protocol"
)

// dsn is the test database, from ORION_TEST_POSTGRES_DSN
// (packaging/ci-postgres.sh prints one); tests that need it skip without.
func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv("ORION_TEST_POSTGRES_DSN")
	if d == "" {
		t.Skip("ORION_TEST_POSTGRES_DSN is not set; packaging/ci-postgres.sh starts PostgreSQL and prints one")
	}
	return d
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// tempTable names a table of this test run and drops it afterwards.
func tempTable(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "orion_trace_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		c.Exec(context.Background(), "DROP TABLE IF EXISTS "+name)
	})
	return name
}

type withNaN struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// adversarial are payloads that break trace persistence into a jsonb
// column when stored raw: each must end up stored.
func adversarial() map[string]map[string]any {
	deep := map[string]any{"leaf": "x"}
	for range 10000 {
		deep = map[string]any{"d": deep}
	}
	var deepList any = "x"
	for range 10000 {
		deepList = []any{deepList}
	}
	self := map[string]any{}
	self["me"] = self
	return map[string]map[string]any{
		"invalid_utf8":      {"s": "a\xff\xfeb\xc3", "k\xff": "v", "bytes": []byte{0xc0, 0xaf, 'x'}},
		"nul":               {"s": "a\x00b", "k\x00": "\x00", "only": "\x00"},
		"escaped_nul":       {"raw": json.RawMessage(`{"a":"\u0000","\u0000":1}`)},
		"lone_surrogates":   {"raw": json.RawMessage(`["\ud800","\udfff","x\ud83dy","\ude00\ud83d"]`), "wtf8": "\xed\xa0\x80\xed\xbf\xbf"},
		"surrogate_pair_ok": {"raw": json.RawMessage(`"\ud83d\ude00"`)},
		"ten_mb":            {"big": strings.Repeat("é", 5<<20)},
		"ten_mb_dirty":      {"big": strings.Repeat("ab\x00\xff", (10<<20)/4)},
		"deep_map":          {"deep": deep},
		"deep_list":         {"deep": deepList},
		"deep_raw":          {"raw": json.RawMessage(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))},
		"cycle":             {"self": self},
		"non_finite":        {"nan": math.NaN(), "inf": math.Inf(1), "ninf": float32(math.Inf(-1)), "struct": withNaN{"n", math.NaN()}},
		"numbers":           {"huge": json.Number("1e400"), "tiny": json.Number("1e-400"), "bad": json.Number("0x10"), "max": uint64(math.MaxUint64), "min": int64(math.MinInt64)},
		"controls":          {"s": "\x01\x1f\x7f\u2028\u2029\ufffe\uffff\\\"'<>&"},
		"empty_key":         {"": "", "  ": nil},
		"invalid_raw":       {"raw": json.RawMessage(`{"unterminated": "`)},
		"many_items":        {"list": make([]any, 50000)},
	}
}

// runSink records every adversarial payload through a Tracer that stores
// in bbolt and copies to PostgreSQL, closes it (which flushes the sink) and
// returns the events as the tracer stored them.
func runSink(t *testing.T, dsn, table string, lim trace.Limits) map[string]protocol.TraceEvent {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "orion.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sink, err := tracepg.New(tracepg.Options{DSN: dsn, Table: table, Source: "test", CloseTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tr := trace.New(trace.Options{Limits: lim, Sinks: []trace.Sink{sink}})
	if err := tr.Attach(st); err != nil {
		t.Fatal(err)
	}
	payloads := adversarial()
	for name, fields := range payloads {
		tr.Record(trace.Event{Type: "adversarial", SessionID: name, Method: "m\x00\xff", Fields: fields})
	}
	res, err := tr.List(context.Background(), protocol.TraceListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if s := sink.Stats(); s.Inserted != uint64(len(payloads)) || s.Rejected+s.Dropped+s.Undelivered != 0 {
		t.Fatalf("sink stats %+v; want all %d inserted", s, len(payloads))
	}
	stored := map[string]protocol.TraceEvent{}
	for _, ev := range res.Events {
		stored[ev.ID] = ev
	}
	if len(stored) != len(payloads) {
		t.Fatalf("%d events in bbolt, want %d", len(stored), len(payloads))
	}
	return stored
}

// checkStored finds every event in the table and compares its jsonb with
// what bbolt holds.
func checkStored(t *testing.T, c *pgx.Conn, table string, stored map[string]protocol.TraceEvent) map[string]json.RawMessage {
	t.Helper()
	rows, err := c.Query(context.Background(), "SELECT id, session_id, event::text FROM "+table+" WHERE source = 'test'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	bySession := map[string]json.RawMessage{}
	for rows.Next() {
		var id, session, event string
		if err := rows.Scan(&id, &session, &event); err != nil {
			t.Fatal(err)
		}
		want, ok := stored[id]
		if !ok {
			t.Fatalf("row %s is not an event the tracer stored", id)
		}
		wantJSON, _ := json.Marshal(want)
		if !sameJSON(t, []byte(event), wantJSON) {
			t.Errorf("%s: PostgreSQL holds\n%.300s\nbbolt holds\n%.300s", session, event, wantJSON)
		}
		bySession[session] = json.RawMessage(event)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, ev := range stored {
		if _, ok := bySession[ev.SessionID]; !ok {
			t.Errorf("payload %q is not in PostgreSQL", ev.SessionID)
		}
	}
	return bySession
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(b []byte) any {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding %.100s: %v", b, err)
		}
		return normalize(v)
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// normalize makes numbers comparable across encoders (jsonb prints 1.50 as
// 1.50 and 1e3 as 1000).
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// TestAdversarialPayloadsReachJSONB is that failure turned into a test: payloads that made PostgreSQL refuse trace events ("invalid input
// syntax for type json", "unsupported Unicode escape sequence") are
// inserted into a real jsonb column, and every one is found there.
func TestAdversarialPayloadsReachJSONB(t *testing.T) {
	dsn := dsn(t)
	c := connect(t, dsn)

	t.Run("UnsanitizedIsRefused", func(t *testing.T) {
		// The control: PostgreSQL does refuse these when nobody cleans
		// them, so the test below proves something.
		for _, bad := range []string{`{"a":"\u0000"}`, `["\ud800"]`, `{"a":` + "\"\xff\"}"} {
			_, err := c.Exec(context.Background(), "SELECT $1::text::jsonb", bad)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("PostgreSQL accepted %q as jsonb (err %v)", bad, err)
			}
		}
	})
	t.Run("DefaultLimits", func(t *testing.T) {
		table := tempTable(t, c)
		stored := runSink(t, dsn, table, trace.Limits{})
		got := checkStored(t, c, table, stored)
		var big struct {
			Fields struct{ Big string }
		}
		json.Unmarshal(got["ten_mb"], &big)
		if !strings.HasSuffix(big.Fields.Big, "…[truncated: 10485760 bytes in all]") {
			t.Fatalf("the 10 MB string is not cut with its marker: …%s", big.Fields.Big[len(big.Fields.Big)-60:])
		}
	})
	t.Run("WholeTenMegabytes", func(t *testing.T) {
		// With limits above the payloads, the 10 MB strings go in whole.
		table := tempTable(t, c)
		stored := runSink(t, dsn, table, trace.Limits{MaxString: 32 << 20, MaxFields: 64 << 20, MaxItems: 100000})
		checkStored(t, c, table, stored)
		var n int
		err := c.QueryRow(context.Background(),
			"SELECT length(event->'fields'->>'big') FROM "+table+" WHERE session_id = 'ten_mb'").Scan(&n)
		if err != nil || n != 5<<20 {
			t.Fatalf("the 10 MB string is %d characters in jsonb (err %v), want %d", n, err, 5<<20)
		}
		err = c.QueryRow(context.Background(),
			"SELECT octet_length(event->'fields'->>'big') FROM "+table+" WHERE session_id = 'ten_mb_dirty'").Scan(&n)
		if err != nil || n != (10<<20)/4*8 { // "ab" + ␀ (3 bytes) + � (3 bytes)
			t.Fatalf("the dirty 10 MB string is %d bytes in jsonb (err %v)", n, err)
		}
	})
}

// flakyProxy forwards TCP connections to target while up, and closes them
// at once while down, as a database that restarts would.
type flakyProxy struct {
	ln     net.Listener
	target string
	up     atomic.Bool
	wg     sync.WaitGroup
}

func newFlakyProxy(t *testing.T, target string) *flakyProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.up.Load() {
				c.Close()
				continue
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func TestRetriesWhileDatabaseIsAway(t *testing.T) {
	dsn := dsn(t)
	c := connect(t, dsn)
	table := tempTable(t, c)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFlakyProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	viaProxy := strings.Replace(dsn, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), proxy.ln.Addr().String(), 1)
	if viaProxy == dsn {
		t.Skip("ORION_TEST_POSTGRES_DSN is not a URL with host:port; cannot route it through the proxy")
	}
	sink, err := tracepg.New(tracepg.Options{DSN: viaProxy, Table: table, Source: "test",
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, CloseTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	for i := range 20 {
		sink.Send(entry(i))
	}
	waitFor(t, "failed attempts while the database is away", func() bool { return sink.Stats().Failures >= 3 })
	if s := sink.Stats(); s.Inserted != 0 || s.Dropped != 0 {
		t.Fatalf("stats %+v while the database is away", s)
	}
	proxy.up.Store(true)
	waitFor(t, "every event inserted once the database is back", func() bool { return sink.Stats().Inserted == 20 })
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 20 {
		t.Fatalf("%d rows (err %v), want 20", n, err)
	}
}

func entry(i int) trace.Entry {
	id := hex.EncodeToString([]byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	ev := protocol.TraceEvent{ID: id, Time: time.Now().UTC(), Type: "x", SessionID: "s", Fields: json.RawMessage(`{"i":1}`)}
	b, _ := json.Marshal(ev)
	return trace.Entry{Event: ev, JSON: b}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSendNeverBlocks needs no database: with PostgreSQL unreachable the
// queue fills, Send keeps returning at once, and Close gives up in time.
func TestSendNeverBlocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	sink, err := tracepg.New(tracepg.Options{DSN: "postgres://nobody@" + addr + "/none?connect_timeout=1",
		Buffer: 4, MinBackoff: time.Millisecond, CloseTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 10000 {
		sink.Send(entry(i % 200))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("10000 sends took %v", d)
	}
	closed := make(chan struct{})
	go func() { sink.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on an unreachable database")
	}
	if s := sink.Stats(); s.Queued+s.Dropped != 10000 || s.Dropped == 0 || s.Inserted != 0 || s.Undelivered != s.Queued {
		t.Fatalf("stats %+v", s)
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts tracepg.Options
		want string
	}{
		{"BadDSN", tracepg.Options{DSN: "postgres://u:secret@[::1"}, "does not parse"},
		{"BadTable", tracepg.Options{DSN: "postgres://u@localhost/db", Table: "x; DROP TABLE y"}, "not a plain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tracepg.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("err %v, want one mentioning %q and no password", err, tt.want)
			}
		})
	}
}
