package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// BenchmarkRestartScan is the checkpoint after a restart: the index read
// back from the store, then every file compared with the stat cache.
func BenchmarkRestartScan(b *testing.B) {
	en := newEnvB(b)
	for i := range 20000 {
		p := filepath.Join(en.ws, fmt.Sprintf("d%03d/f%d.txt", i/100, i))
		if i%100 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		os.WriteFile(p, []byte(fmt.Sprintf("content %d\n", i)), 0o644)
	}
	if _, err := en.e.Checkpoint(protocol.CheckpointCreateParams{WorkspaceRoot: en.ws}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		en.close()
		en.open()
		b.StartTimer()
		if _, err := en.e.Checkpoint(protocol.CheckpointCreateParams{WorkspaceRoot: en.ws}); err != nil {
			b.Fatal(err)
		}
	}
}
