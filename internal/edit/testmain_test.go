package edit_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestMain removes the oriond and orionctl binaries the daemon tests built
// once they end.
func TestMain(m *testing.M) { testdaemon.Main(m) }
