package daemon

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// decodeParams is decode for tests that only look at the params.
func (h *handler) decodeParams(req *jsonrpc2.Request) (any, error) {
	in, _ := incomingOf(req)
	_, p, _, err := h.decode(in, nil)
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

// TestRawContentMethodsAreTheProtocol: the methods whose params the daemon
// decodes with their content sent raw are exactly those
// protocol.RawContentFields names.
func TestRawContentMethodsAreTheProtocol(t *testing.T) {
	var raw []string
	for name, m := range methods {
		if m.decodeRaw != nil {
			raw = append(raw, name)
		}
	}
	slices.Sort(raw)
	if declared := slices.Sorted(maps.Keys(protocol.RawContentFields)); !slices.Equal(raw, declared) {
		t.Fatalf("the daemon takes raw content for %v, protocol.RawContentFields names %v", raw, declared)
	}
}

// FuzzDecode gives every method of the table arbitrary params: each is
// decoded or refused with a protocol error, never a panic, and a request
// that decodes names its session (when the method is about one) without a
// panic either.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{}`, `null`, `[]`, `{"session_id":"s","seq":1,"chunk":"x"}`, `{"files":[{}]}`,
		`{"session_id":"\ud800"}`, `{"seq":-1}`, `"x"`, `{"chunk":null}`, `{"idle_ms":1e30}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for name, m := range methods {
			p, err := m.decode([]byte(raw), frameLong([]byte(raw)), &requestRoom{})
			if err != nil {
				var pe *protocol.Error
				if !errors.As(err, &pe) {
					t.Fatalf("%s: %q refused with %T %v, want a *protocol.Error", name, raw, err, err)
				}
				continue
			}
			m.session(p)
		}
		for name, m := range methods {
			if m.decodeRaw == nil {
				continue
			}
			// The same bytes as the JSON without a chunk and as the
			// chunk sent raw.
			p, err := m.decodeRaw([]byte(raw), []byte(raw), &requestRoom{})
			if err != nil {
				var pe *protocol.Error
				if !errors.As(err, &pe) {
					t.Fatalf("%s raw: %q refused with %T %v, want a *protocol.Error", name, raw, err, err)
				}
				continue
			}
			m.session(p)
		}
	})
}
