package attack

import (
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestMain removes the oriond binary the tests built once they end, and
// keeps orionctl proxy's secret file out of the real configuration directory.
func TestMain(m *testing.M) { testdaemon.MainOwnConfig(m) }
