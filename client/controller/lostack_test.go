package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// ackDropper is a proxy in front of the daemon that lets the Nth
// session.append through and then cuts the connection instead of passing
// its reply on: the chunk is committed, the client never hears so.
type ackDropper struct {
	ln      net.Listener
	daemon  string
	dropNth int64
	appends atomic.Int64
	dropped atomic.Bool
}

func newAckDropper(t *testing.T, daemon string, nth int64) *ackDropper {
	dir, err := paths.SocketTempDir("orion-proxy", "p.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &ackDropper{ln: ln, daemon: daemon, dropNth: nth}
	go p.serve()
	return p
}

func (p *ackDropper) socket() string { return p.ln.Addr().String() }

func (p *ackDropper) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("unix", p.daemon)
		if err != nil {
			c.Close()
			continue
		}
		go p.pipe(c, d)
	}
}

// pipe forwards frames both ways, noting the id of the append to drop.
func (p *ackDropper) pipe(c, d net.Conn) {
	var once sync.Once
	cut := func() { once.Do(func() { c.Close(); d.Close() }) }
	var dropID atomic.Value
	go func() {
		defer cut()
		br := bufio.NewReader(c)
		for {
			frame, body, err := readFrame(br)
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal(body, &req)
			if req.Method == "session.append" && p.appends.Add(1) == p.dropNth {
				dropID.Store(string(req.ID))
			}
			if _, err := d.Write(frame); err != nil {
				return
			}
		}
	}()
	defer cut()
	br := bufio.NewReader(d)
	for {
		frame, body, err := readFrame(br)
		if err != nil {
			return
		}
		var resp struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &resp)
		if id, _ := dropID.Load().(string); id != "" && string(resp.ID) == id {
			p.dropped.Store(true)
			return
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// readFrame reads one Content-Length framed message, returning it whole
// and its body.
func readFrame(br *bufio.Reader) (frame, body []byte, err error) {
	var head bytes.Buffer
	n := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, err
		}
		head.WriteString(line)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	if n < 0 {
		return nil, nil, fmt.Errorf("frame without Content-Length")
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, nil, err
	}
	return append(head.Bytes(), body...), body, nil
}

// TestLostAckIsNotResent: the connection breaks after the daemon committed
// a chunk but before its ack arrived. The controller reconnects, learns
// from session.resume that the chunk is in, and goes on with the next
// seq: the file holds every line exactly once.
func TestLostAckIsNotResent(t *testing.T) {
	d := testdaemon.Start(t)
	proxy := newAckDropper(t, d.Socket, 3)
	var content strings.Builder
	for i := range 100 {
		fmt.Fprintf(&content, "line %03d of a file whose third chunk's ack is lost\n", i)
	}
	r := newRecorder()
	r.start()
	r.toolStart(0, "call_1", "WritePlanTool_begin")
	r.toolArgs(0, `{"intent":"x","target_file":"lost.txt","operation":"create"}`)
	r.finish("tool_calls")
	r.start()
	r.content(lines(content.String())...)
	r.content("{{marker}}\n")
	r.finish("stop")

	var events []controller.Event
	opts := harnessOptions(d)
	opts.Dial = func(ctx context.Context, co client.Options) (*client.Client, error) {
		return client.Dial(ctx, proxy.socket(), co)
	}
	opts.OnEvent = func(e controller.Event) { events = append(events, e) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl, err := controller.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := ctl.Run(ctx, strings.NewReader(r.String())); err != nil {
		t.Fatal(err)
	}
	if !proxy.dropped.Load() {
		t.Fatal("the proxy never dropped an ack")
	}
	got, err := os.ReadFile(filepath.Join(d.Root, "lost.txt"))
	if err != nil {
		t.Fatalf("%v; events %+v", err, events)
	}
	if string(got) != content.String() {
		t.Fatalf("file differs: %d bytes, want %d", len(got), content.Len())
	}
}
