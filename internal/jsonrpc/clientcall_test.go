package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// FuzzClientRead feeds arbitrary bytes to the client codec as frames read
// from the daemon, with a Call waiting, and checks that nothing panics,
// that the Call is settled only by a reply to its id, with the result
// encoding/json reads there, and that what is not a Call's reply reaches
// jsonrpc2 as it was sent.
func FuzzClientRead(f *testing.F) {
	id := strconv.FormatUint(callIDs+1, 10)
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":` + id + `,"result":{"seq":1}}`,
		`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32001,"message":"no","data":{"reason":"x"}}}`,
		`{"jsonrpc":"2.0","id":` + id + `,"error":null,"result":"x"}`,
		`{"jsonrpc":"2.0","id":` + id + `}`,
		`{"jsonrpc":"2.0","id":` + id + `,"error":7}`,
		`{"jsonrpc":"2.0","id":` + id + `,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"result":1}`,
		`{"jsonrpc":"2.0","id":18446744073709551616,"result":1}`,
		`{"jsonrpc":"2.0","method":"session.idle","params":{"session_id":"s"}}`,
		`{"id":` + id + `,"result":1,"result":2}`,
		`[1]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := NewClientCodec()
		c.hooked = true
		k := c.NewCall()
		c.calls[k.id] = k
		r := bufio.NewReader(bytes.NewReader([]byte("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))))
		var got json.RawMessage
		err := c.ReadObject(r, &got)
		// The input's end ends the connection, and fails the Calls
		// still waiting with ErrClosed.
		settled := len(k.done) == 1 && !errors.Is(k.err, jsonrpc2.ErrClosed)

		var want struct {
			ID     json.RawMessage
			Method json.RawMessage
			Result json.RawMessage
			Error  json.RawMessage
		}
		ok := json.Unmarshal(body, &want) == nil && want.Method == nil && string(want.ID) == id
		if settled {
			if !ok {
				t.Fatalf("%s settled the Call, which encoding/json does not read as its reply", body)
			}
			if want.Error == nil || string(want.Error) == "null" {
				if want.Result == nil {
					want.Result = json.RawMessage("null")
				}
				if k.err != nil || !bytes.Equal(k.result, want.Result) {
					t.Fatalf("%s: result %s (%v), encoding/json reads %s", body, k.result, k.err, want.Result)
				}
			} else if k.err == nil {
				t.Fatalf("%s: an error reply settled the Call with a result", body)
			}
			return
		}
		if err == nil && !bytes.Equal(got, body) && json.Valid(body) {
			t.Fatalf("%s reached jsonrpc2 as %s", body, got)
		}
	})
}
