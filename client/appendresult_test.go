package client

import (
	"encoding/json"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// TestDecodeAppendResult: an append's reply as the daemon writes it (as
// encoding/json writes it) is read by the short path; any other shape is
// left to encoding/json.
func TestDecodeAppendResult(t *testing.T) {
	for _, r := range []protocol.AppendResult{
		{SessionID: "5f0c2c7e-8a1b-4c1e-9f3a-0d2b6c1e7a90", Seq: 42, Stage: protocol.StageStreaming, Bytes: 172032, Lines: 2688},
		{SessionID: "s", Seq: 1<<64 - 1, Duplicate: true, Stage: protocol.StageFinalizing, Bytes: 1<<63 - 1,
			Lines: 0, EndMarkerSeen: true, TrailingBytes: 7},
		{},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got protocol.AppendResult
		if !decodeAppendResult(b, &got, r.SessionID) || got != r {
			t.Errorf("%s: read %+v, want %+v", b, got, r)
		}
		// A reply naming another session than the append's says so.
		if !decodeAppendResult(b, &got, "other") || got != r {
			t.Errorf("%s, the append naming another session: read %+v, want %+v", b, got, r)
		}
	}
	for _, b := range []string{
		`{"seq":1,"session_id":"s","stage":"streaming","bytes":1,"lines":1,"end_marker_seen":false}`,
		`{"session_id":"s\u00e9","seq":1,"stage":"streaming","bytes":1,"lines":1,"end_marker_seen":false}`,
		`{"session_id":"s","seq":1,"stage":"streaming","bytes":-1,"lines":1,"end_marker_seen":false}`,
		`{"session_id":"s","seq":1,"stage":"streaming","bytes":1,"lines":1,"end_marker_seen":false,"new":1}`,
		`{"session_id":"s", "seq":1,"stage":"streaming","bytes":1,"lines":1,"end_marker_seen":false}`,
		`{"session_id":"s","seq":1,"stage":"streaming","bytes":1,"lines":1,"end_marker_seen":false,"trailing_bytes":0}`,
	} {
		var got protocol.AppendResult
		if decodeAppendResult([]byte(b), &got, "s") {
			t.Errorf("%s: read by the short path, as %+v", b, got)
		}
	}
}

// FuzzDecodeAppendResult: what the short path reads, encoding/json reads
// the same.
func FuzzDecodeAppendResult(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","seq":3,"duplicate":true,"stage":"streaming","bytes":10,"lines":2,"end_marker_seen":true,"trailing_bytes":4}`))
	f.Add([]byte(`{"session_id":"s","seq":3,"stage":"streaming","bytes":10,"lines":2,"end_marker_seen":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got protocol.AppendResult
		if !decodeAppendResult(b, &got, "s") {
			return
		}
		var want protocol.AppendResult
		if err := json.Unmarshal(b, &want); err != nil || got != want {
			t.Fatalf("%s: read %+v, encoding/json %+v (%v)", b, got, want, err)
		}
	})
}
