package daemon_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// BenchmarkWriteThroughDaemon measures one session.write of a new file
// through the daemon's whole request path (params, path checks, the
// journal's record and sync, the file written, fsynced, renamed and its
// directory fsynced, the reply), in this process: allocs/op and B/op are the
// daemon's per file. One client, files one after another, as orionbench's
// write rounds.
func BenchmarkWriteThroughDaemon(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			at := benchDaemon(b)
			socket, root, _ := strings.Cut(at, "\x00")
			rc := dialRaw(b, socket)
			// A text of lines, nothing to escape in JSON.
			content := strings.Repeat(strings.Repeat("x", 63)+`\n`, size/64)
			var params []byte
			n := 0
			write := func() error {
				n++
				target, _ := json.Marshal(filepath.Join(root, "w"+strconv.Itoa(n)+".txt"))
				params = append(params[:0], `{"intent":"bench","operation":"create","target_file":`...)
				params = append(params, target...)
				params = append(params, `,"content":"`...)
				params = append(params, content...)
				params = append(params, `"}`...)
				_, err := rc.call(protocol.MethodSessionWrite, params)
				return err
			}
			for range 20 {
				if err := write(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				if err := write(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
