package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/textfmt"
)

// The long string of each tool is the last field its schema lists, as the
// wire carries it: hosts have been seen to drop the fields after a long
// string.
func TestLongStringLast(t *testing.T) {
	for name, c := range map[string]struct {
		schema json.RawMessage
		long   string
	}{
		"write_append": {schemaWriteAppend, "chunk"},
		"write_file":   {schemaWriteFile, "content"},
		"edit_file":    {schemaEditFile, "edit"},
	} {
		if got := lastProperty(t, c.schema); got != c.long {
			t.Errorf("%s: last property %q, want %q", name, got, c.long)
		}
	}
	// Every schema is JSON.
	for _, s := range []json.RawMessage{schemaWriteBegin, schemaWriteAppend, schemaWriteFinalize, schemaWriteAbort,
		schemaWriteFile, schemaEditFile, schemaUndo, schemaListSessions} {
		if !json.Valid(s) {
			t.Errorf("invalid schema: %s", s)
		}
	}
}

// lastProperty is the last key of the schema's top-level properties.
func lastProperty(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var last string
	depth := 0
	inProps, expectKey := false, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return last
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				if inProps && depth == 2 {
					expectKey = true
				}
			} else {
				depth--
				if depth == 1 {
					inProps = false
				}
				if inProps && depth == 2 {
					expectKey = true
				}
			}
		case string:
			if depth == 1 && v == "properties" {
				inProps = true
			} else if inProps && depth == 2 && expectKey {
				last = v
				expectKey = false
			}
		}
	}
}

// The texts name the server's own limits.
func TestTextsNameTheLimits(t *testing.T) {
	lines := fmt.Sprintf("about %d lines", ChunkAdviceLines)
	for name, text := range map[string]string{"instructions": Instructions, "write_begin": descWriteBegin, "write_append": descWriteAppend} {
		if !strings.Contains(text, lines) {
			t.Errorf("%s does not say %q", name, lines)
		}
	}
	if size := textfmt.Size(WriteFileMaxBytes); !strings.Contains(descWriteFile, "at most "+size) {
		t.Errorf("write_file's description does not say at most %s", size)
	}
}
