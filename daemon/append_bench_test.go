package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/daemon"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/trace/tracecfg"
	"github.com/orion-agent/orion/protocol"
)

// benchDaemon runs the daemon in this process, so that the benchmark's
// allocation counts are the daemon's: the client below writes prepared
// frames and reads replies into one buffer, allocating nothing per request.
func benchDaemon(b *testing.B) string {
	b.Helper()
	// A short directory for the socket: TMPDIR may be longer than a socket
	// path may be.
	sockDir, err := paths.SocketTempDir("ob", "s/oriond.sock")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sockDir) })
	base := b.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Tracing as oriond runs by default: appends folded into one event
	// per session per second.
	var traces tracecfg.Settings
	tracecfg.AddFlags(pflag.NewFlagSet("trace", pflag.ContinueOnError), &traces)
	tracer, err := tracecfg.New(traces, logger)
	if err != nil {
		b.Fatal(err)
	}
	cfg := daemon.Config{
		Socket: filepath.Join(sockDir, "oriond.sock"), StateDir: filepath.Join(base, "state"),
		AllowRoots: []string{root}, MaxSessionBytes: 1 << 40,
		Logger: logger, Home: base, Trace: tracer,
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- daemon.Run(ctx, cfg, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return cfg.Socket + "\x00" + root
}

// rawConn speaks JSON-RPC over the socket with prepared frames.
type rawConn struct {
	c     net.Conn
	r     *bufio.Reader
	frame []byte
	body  []byte
	id    int
}

func dialRaw(b *testing.B, socket string) *rawConn {
	b.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// call sends a request whose params are the JSON in params and returns
// the reply's body, valid until the next call.
func (rc *rawConn) call(method string, params []byte) ([]byte, error) {
	rc.id++
	rc.body = rc.body[:0]
	rc.body = append(rc.body, `{"jsonrpc":"2.0","id":`...)
	rc.body = strconv.AppendInt(rc.body, int64(rc.id), 10)
	rc.body = append(rc.body, `,"method":"`...)
	rc.body = append(rc.body, method...)
	rc.body = append(rc.body, `","params":`...)
	rc.body = append(rc.body, params...)
	rc.body = append(rc.body, '}')
	rc.frame = append(rc.frame[:0], "Content-Length: "...)
	rc.frame = strconv.AppendInt(rc.frame, int64(len(rc.body)), 10)
	rc.frame = append(rc.frame, "\r\n\r\n"...)
	rc.frame = append(rc.frame, rc.body...)
	if _, err := rc.c.Write(rc.frame); err != nil {
		return nil, err
	}
	n := -1
	for {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			if n, err = strconv.Atoi(string(v)); err != nil {
				return nil, err
			}
		}
	}
	if cap(rc.body) < n {
		rc.body = make([]byte, n)
	}
	rc.body = rc.body[:n]
	if _, err := io.ReadFull(rc.r, rc.body); err != nil {
		return nil, err
	}
	if bytes.Contains(rc.body, []byte(`"error":`)) {
		return nil, fmt.Errorf("%s: %s", method, rc.body)
	}
	return rc.body, nil
}

// begin opens a session on rc and returns its id.
func (rc *rawConn) begin(b *testing.B, root, name string) string {
	b.Helper()
	p, _ := json.Marshal(protocol.BeginParams{Intent: "benchmark", Operation: protocol.OpCreate, TargetFile: filepath.Join(root, name)})
	body, err := rc.call(protocol.MethodSessionBegin, p)
	if err != nil {
		b.Fatal(err)
	}
	var res struct {
		Result protocol.BeginResult `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		b.Fatal(err)
	}
	return res.Result.SessionID
}

// appender sends a session's appends of chunk, each params prepared in
// one buffer.
type appender struct {
	rc     *rawConn
	id     string
	seq    uint64
	chunk  string
	params []byte
}

func (a *appender) next() error {
	a.seq++
	a.params = append(a.params[:0], `{"session_id":"`...)
	a.params = append(a.params, a.id...)
	a.params = append(a.params, `","seq":`...)
	a.params = strconv.AppendUint(a.params, a.seq, 10)
	a.params = append(a.params, `,"chunk":"`...)
	a.params = append(a.params, a.chunk...)
	a.params = append(a.params, `"}`...)
	_, err := a.rc.call(protocol.MethodSessionAppend, a.params)
	return err
}

// benchChunk is 4 KiB of text lines, nothing to escape in JSON.
var benchChunk = strings.Repeat(strings.Repeat("x", 63)+`\n`, 4096/64)

// BenchmarkAppendThroughDaemon measures one 4 KiB session.append through
// the daemon's whole request path (framing, params, ordering, the session,
// the store's group commit, the reply), in this process: allocs/op and
// B/op are the daemon's per append. One session, appends one after another.
func BenchmarkAppendThroughDaemon(b *testing.B) {
	at := benchDaemon(b)
	socket, root, _ := strings.Cut(at, "\x00")
	rc := dialRaw(b, socket)
	a := &appender{rc: rc, id: rc.begin(b, root, "one.txt"), chunk: benchChunk}
	// Warm: the first appends grow buffers that later ones reuse.
	for range 50 {
		if err := a.next(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	for b.Loop() {
		if err := a.next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendThroughDaemon64 is BenchmarkAppendThroughDaemon with 64
// sessions, each on its own connection, appending at once.
func BenchmarkAppendThroughDaemon64(b *testing.B) {
	at := benchDaemon(b)
	socket, root, _ := strings.Cut(at, "\x00")
	const sessions = 64
	as := make([]*appender, sessions)
	for i := range as {
		rc := dialRaw(b, socket)
		as[i] = &appender{rc: rc, id: rc.begin(b, root, fmt.Sprintf("s%d.txt", i)), chunk: benchChunk}
		for range 5 {
			if err := as[i].next(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i, a := range as {
		n := b.N / sessions
		if i < b.N%sessions {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := a.next(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	_ = start
}
