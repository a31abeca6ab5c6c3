package ui_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestMain removes the oriond binary the tests built once they end.
func TestMain(m *testing.M) { testdaemon.Main(m) }
