package client

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// BenchmarkAppend is the client's own cost of one 4 KiB append (and of one
// of 64 KiB, the streaming chunk), its allocations included: the peer is a responder that allocates nothing
// (it reads each frame into one buffer and writes a reply made ahead,
// with the request's id), over a Unix socket pair as the daemon's.
// Parallel is 64 clients at once, each on its own connection, as
// orionbench's 64 sessions.
func BenchmarkAppend(b *testing.B) {
	chunk := strings.Repeat(strings.Repeat("x", 63)+"\n", 64)
	serial := func(chunk string) func(b *testing.B) {
		return func(b *testing.B) {
			c := benchClient(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(chunk)))
			seq := uint64(0)
			for b.Loop() {
				seq++
				if _, err := c.Append(context.Background(), protocol.AppendParams{SessionID: benchSession, Seq: seq, Chunk: chunk}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("Serial", serial(chunk))
	b.Run("Serial64KiB", serial(strings.Repeat(chunk, 16)))
	b.Run("Parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunk)))
		b.SetParallelism(32) // 64 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			c := benchClient(b)
			seq := uint64(0)
			for pb.Next() {
				seq++
				if _, err := c.Append(context.Background(), protocol.AppendParams{SessionID: benchSession, Seq: seq, Chunk: chunk}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

const benchSession = "0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11"

// benchClient is a Client whose peer answers every request with an
// append's reply as the daemon writes it.
func benchClient(b *testing.B) *Client {
	b.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	go respond(conns[1])
	c := newClient(conns[0], Options{})
	b.Cleanup(func() {
		c.Close()
		conns[1].Close()
	})
	return c
}

// respond answers each request read from conn with a reply to its id,
// allocating nothing per request.
func respond(conn net.Conn) {
	r := bufio.NewReaderSize(conn, 64<<10)
	var body, out []byte
	const result = `,"result":{"session_id":"` + benchSession + `","seq":1,"stage":"streaming","bytes":4096,"lines":64,"end_marker_seen":false}}`
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimPrefix(line, []byte("Content-Length:")))))
		if err != nil {
			return
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			return
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := readFull(r, body); err != nil {
			return
		}
		_, rest, _ := bytes.Cut(body, []byte(`"id":`))
		end := bytes.IndexByte(rest, ',')
		if end < 0 {
			return
		}
		id := rest[:end]
		out = out[:0]
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, int64(len(`{"jsonrpc":"2.0","id":`)+len(id)+len(result)), 10)
		out = append(out, "\r\n\r\n"...)
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, id...)
		out = append(out, result...)
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
