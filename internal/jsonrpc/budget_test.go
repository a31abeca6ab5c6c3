package jsonrpc

import (
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// TestTotalBudgetAcrossConnections: the bytes of unanswered requests are
// bounded across connections, not only per connection. A second
// connection waits while a first holds the budget; a reply, or the first
// connection closing with its replies unwritten, lets it in.
func TestTotalBudgetAcrossConnections(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	size := int64(len(body))
	for _, free := range []string{"Reply", "Close"} {
		t.Run(free, func(t *testing.T) {
			total := NewBudget(size + size/2)
			limits := Limits{MaxMessage: 1 << 20, MaxInflight: 10, MaxInflightBytes: 1 << 20, Total: total}
			a := NewServerStream(&pipeConn{in: strings.NewReader(frame(body))}, limits, nil)
			b := NewServerStream(&pipeConn{in: strings.NewReader(frame(body))}, limits, nil)
			defer b.Close()
			first, err := readRequest(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := total.inUse(); got != size {
				t.Fatalf("budget holds %d bytes, want %d", got, size)
			}
			next := make(chan error, 1)
			go func() {
				var req jsonrpc2.Request
				next <- b.ReadObject(&req)
			}()
			select {
			case err := <-next:
				t.Fatalf("the second connection was read with the budget used up (err %v)", err)
			case <-time.After(50 * time.Millisecond):
			}
			if free == "Reply" {
				resp := &jsonrpc2.Response{ID: first.RPCID()}
				resp.SetResult(true)
				if err := a.WriteObject(resp); err != nil {
					t.Fatal(err)
				}
			} else {
				a.Close()
			}
			select {
			case err := <-next:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not free the budget", free)
			}
			if free == "Close" {
				// A reply written after the close gives nothing back twice.
				resp := &jsonrpc2.Response{ID: first.RPCID()}
				resp.SetResult(true)
				a.WriteObject(resp)
				if got := total.inUse(); got != size {
					t.Fatalf("budget holds %d bytes after a late reply, want %d", got, size)
				}
			}
		})
	}
}
