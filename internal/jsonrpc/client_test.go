package jsonrpc

import (
	"bytes"
	"testing"
)

// TestSplice: held params take the place of their placeholder as the value
// of "params", wherever jsonrpc2 puts that member; a placeholder anywhere
// else fails the send instead of sending a request without its params.
func TestSplice(t *testing.T) {
	c := NewClientCodec()
	placeholder, release := c.Hold([]byte(`{"chunk":"x"}`))
	defer release()
	p := string(placeholder)
	tests := []struct {
		name, in, want string
	}{
		{"ParamsLast", `{"id":1,"jsonrpc":"2.0","method":"m","params":` + p + `}`,
			`{"id":1,"jsonrpc":"2.0","method":"m","params":{"chunk":"x"}}`},
		{"ParamsFirst", `{"params":` + p + `,"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`,
			`{"params":{"chunk":"x"},"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`},
		{"Spaced", `{ "id" : 1 , "params" : ` + p + ` }`, `{"id":1,"params":{"chunk":"x"}}`},
		{"Misplaced", `{"id":1,"jsonrpc":"2.0","method":"m","meta":` + p + `}`, ""},
		{"NotJSON", `{"id":1,"params":` + p, ""},
		// Other requests, whatever their strings, pass untouched.
		{"Other", `{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`,
			`{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := c.splice([]byte(tc.in))
			out := bytes.Join(parts, nil)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("splice = %s, want an error", out)
				}
				return
			}
			if err != nil || string(out) != tc.want {
				t.Fatalf("splice = %s, %v; want %s", out, err, tc.want)
			}
		})
	}
	release()
	if n := c.Held(); n != 0 {
		t.Fatalf("%d params held after release", n)
	}
}
