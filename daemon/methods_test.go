package daemon

import (
	"slices"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// decodeParams is decode for tests that only look at the params.
func (h *handler) decodeParams(req *jsonrpc2.Request) (any, error) {
	_, p, err := h.decode(req)
	return p, err
}

// The daemon serves exactly the methods of protocol.MethodSpecs, each
// once: protocol.Methods (daemon.status), the Node package's protocol file
// and the Go clients come from those.
func TestMethodTableIsTheProtocol(t *testing.T) {
	var served []string
	for name := range methods {
		served = append(served, name)
	}
	slices.Sort(served)
	declared := slices.Sorted(slices.Values(protocol.Methods))
	if !slices.Equal(served, declared) {
		t.Fatalf("the daemon serves %v, protocol.Methods declares %v", served, declared)
	}
}
