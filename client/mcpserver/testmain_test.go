package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestMain removes the oriond and orionctl binaries the tests built once
// they end.
func TestMain(m *testing.M) {
	code := m.Run()
	testdaemon.Cleanup()
	if orionctlBin != "" {
		os.RemoveAll(filepath.Dir(orionctlBin))
	}
	os.Exit(code)
}
