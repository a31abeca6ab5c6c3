package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

func request(method, params string) *jsonrpc2.Request {
	req := &jsonrpc2.Request{Method: method}
	if params != "" {
		raw := json.RawMessage(params)
		req.Params = &raw
	}
	return req
}

// TestDecodeAppend: a chunk that is not there is refused, not taken as an
// empty one; everything else decodes as before.
func TestDecodeAppend(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params string
		chunk  string // the chunk decoded, when accepted
		reason string // the reason refused, else ""
	}{
		{"OK", `{"session_id":"s","seq":1,"chunk":"hello\n"}`, "hello\n", ""},
		{"EmptyChunk", `{"session_id":"s","seq":1,"chunk":""}`, "", ""},
		{"NullChunk", `{"session_id":"s","seq":1,"chunk":null}`, "", protocol.ReasonMissingField},
		{"MissingChunk", `{"session_id":"s","seq":1}`, "", protocol.ReasonMissingField},
		{"NoParams", ``, "", protocol.ReasonMissingField},
		{"NullParams", `null`, "", protocol.ReasonMissingField},
		{"SessionIDTooLong", `{"session_id":"` + strings.Repeat("s", 200) + `","seq":1,"chunk":"x"}`, "", protocol.ReasonFieldTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := (&handler{}).decodeParams(request(protocol.MethodSessionAppend, tc.params))
			if tc.reason != "" {
				var pe *protocol.Error
				if !errors.As(err, &pe) || pe.Data.Reason != tc.reason {
					t.Fatalf("decodeParams: %v, want reason %s", err, tc.reason)
				}
				if tc.reason != protocol.ReasonFieldTooLarge && pe.Data.Field != "chunk" {
					t.Fatalf("error names field %q, want chunk", pe.Data.Field)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeParams: %v", err)
			}
			p := v.(*protocol.AppendParams)
			if p.Chunk != tc.chunk || p.SessionID != "s" || p.Seq != 1 {
				t.Fatalf("decoded %+v, want chunk %q", p, tc.chunk)
			}
		})
	}
}

// TestDecodeParamsChecksLimits: every method's params and the method name
// itself are checked before anything uses them.
func TestDecodeParamsChecksLimits(t *testing.T) {
	for _, tc := range []struct {
		name, method, params string
		reason, field        string
	}{
		{"Method", strings.Repeat("m", 16<<10), `{}`, protocol.ReasonFieldTooLarge, "method"},
		{"Intent", protocol.MethodSessionBegin, `{"intent":"` + strings.Repeat("i", 5000) + `","target_file":"a","operation":"create"}`, protocol.ReasonFieldTooLarge, "intent"},
		{"Duration", protocol.MethodSessionBegin, `{"target_file":"a","operation":"create","auto_finalize_ms":9223372036854775807}`, protocol.ReasonInvalidDuration, "auto_finalize_ms"},
		{"TxIntent", protocol.MethodTxBegin, `{"files":[{"target_file":"a","operation":"create","intent":"` + strings.Repeat("i", 5000) + `"}]}`, protocol.ReasonFieldTooLarge, "files[0].intent"},
		{"TraceSession", protocol.MethodTraceList, `{"session_id":"` + strings.Repeat("s", 200) + `"}`, protocol.ReasonFieldTooLarge, "session_id"},
		{"Clean", protocol.MethodSessionClean, `{"older_than_ms":-1}`, protocol.ReasonInvalidDuration, "older_than_ms"},
		{"Malformed", protocol.MethodSessionGet, `{"session_id":5}`, protocol.ReasonMalformedParams, "session_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&handler{}).decodeParams(request(tc.method, tc.params))
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Data.Reason != tc.reason || pe.Data.Field != tc.field {
				t.Fatalf("decodeParams: %v (data %+v), want reason %s field %s", err, pe, tc.reason, tc.field)
			}
			if len(pe.Message) > 512 {
				t.Fatalf("the error quotes the value: %d bytes", len(pe.Message))
			}
		})
	}
}

// TestInvalidText: invalid UTF-8 and lone surrogate escapes, which
// encoding/json turns into U+FFFD, are caught on the params as the client
// sent them (the frame reader hands them over raw) and refused as
// invalid_utf8; valid text, a real U+FFFD among it, passes untouched.
func TestInvalidText(t *testing.T) {
	for _, tc := range []struct {
		name, chunk string
		reason      string
		field       string
	}{
		{"OK", `hello\n`, "", ""},
		{"SurrogatePair", `\ud83d\ude00`, "", ""},
		{"ReplacementChar", "\uFFFD and \\ufffd", "", ""},
		{"EscapedBackslash", `\\ud800`, "", ""},
		{"InvalidByte", "caf\xe9", protocol.ReasonInvalidUTF8, "chunk"},
		{"TruncatedRune", "\xf0\x9f\x98", protocol.ReasonInvalidUTF8, "chunk"},
		{"LoneHighSurrogate", `a\ud83d`, protocol.ReasonInvalidUTF8, "chunk"},
		{"LoneLowSurrogate", `\ude00b`, protocol.ReasonInvalidUTF8, "chunk"},
		{"HighThenOther", `\ud83d\u0041`, protocol.ReasonInvalidUTF8, "chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(protocol.MethodSessionAppend, `{"session_id":"s","seq":1,"chunk":"`+tc.chunk+`"}`)
			v, err := (&handler{}).decodeParams(req)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("decodeParams: %v", err)
				}
				var want struct{ Chunk string }
				json.Unmarshal([]byte(`{"chunk":"`+tc.chunk+`"}`), &want)
				if got := v.(*protocol.AppendParams).Chunk; got != want.Chunk {
					t.Fatalf("chunk %q, want %q", got, want.Chunk)
				}
				return
			}
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Data.Reason != tc.reason || pe.Data.Field != tc.field || pe.Data.SessionID != "s" {
				t.Fatalf("decodeParams: %v, want %s on %s", err, tc.reason, tc.field)
			}
		})
	}
	// Elsewhere in the params, the field is the params.
	req := request(protocol.MethodSessionBegin, "{\"target_file\":\"caf\xe9\",\"operation\":\"create\"}")
	if _, err := (&handler{}).decodeParams(req); err == nil || err.(*protocol.Error).Data.Field != "params" {
		t.Fatalf("invalid target_file: %v", err)
	}
}

// TestDecodeAppendReadsAsEncodingJSON: the faster decoder of an append's
// params reads every one of these as encoding/json does (names matched
// without case but with '_' kept, the last of repeated members, a later
// null, numbers seq does not take).
func TestDecodeAppendReadsAsEncodingJSON(t *testing.T) {
	for _, params := range []string{
		`{"session_id":"a","seq":1,"chunk":"x"}`,
		`{"SESSION_ID":"a","SEQ":1,"Chunk":"x"}`,
		`{"sessionId":"b","session_id":"a","seq":1,"chunk":"x"}`,
		`{"session_id":"a","sessionId":"b","seq":1,"chunk":"x"}`,
		`{"session-id":"b","sessionid":"c","session_id":"a","seq":1,"chunk":"x"}`,
		`{"session_id":"a","seq":1,"chunk":"x","session_id":null}`,
		`{"session_id":"a","seq":1,"chunk":"x","seq":2}`,
		`{"session_id":"a","seq":1,"chunk":"x","chunk":"y"}`,
		`{"session_id":"a","seq":1e2,"chunk":"x"}`,
		`{"session_id":"a","seq":1.0,"chunk":"x"}`,
		`{"session_id":"a","seq":-1,"chunk":"x"}`,
		`{"session_id":"a","seq":"1","chunk":"x"}`,
		`{"session_id":"a","seq":18446744073709551616,"chunk":"x"}`,
		`{"session_id":"a","seq":1,"chunk":"x","extra":{"nested":[1,2,3]}}`,
		`{"session_id":1,"seq":1,"chunk":"x"}`,
		`{"session_id":"a","seq":1,"chunk":["x"]}`,
	} {
		var want appendWire
		wantErr := json.Unmarshal([]byte(params), &want)
		got, err := decodeAppend([]byte(params), jsonrpc.LongString{})
		if wantErr != nil || want.Chunk == nil {
			if err == nil {
				t.Errorf("%s: decoded %+v, encoding/json refuses it (%v)", params, got, wantErr)
			}
			continue
		}
		want.AppendParams.Chunk = *want.Chunk
		if err != nil || *got != want.AppendParams {
			t.Errorf("%s: decoded %+v, %v; encoding/json reads %+v", params, got, err, want.AppendParams)
		}
	}
}

// TestWriteParamsReadAsEncodingJSON: session.write's params, read by the
// faster decoder, come out as encoding/json reads them, and what it refuses
// is refused with the same reasons as before.
func TestWriteParamsReadAsEncodingJSON(t *testing.T) {
	decode := fastParams[protocol.WriteParams](protocol.MethodSessionWrite)
	for _, params := range []string{
		`{"target_file":"/w/a.go","operation":"create","content":"package a\n"}`,
		`{"TARGET_FILE":"/w/a.go","Operation":"overwrite","content":"x","content":"y"}`,
		`{"target_file":"/w/a.go","targetFile":"/w/b.go","operation":"create","content":null}`,
		`{"target_file":"/w/a.go","operation":"append","content":"\ud83d\ude00","expected_bytes":4}`,
		`{"target_file":"/w/a.go","operation":"create","content":"x","validation":{"all":"warn","categories":{"syntax":"off"}}}`,
		`{"target_file":"/w/a.go","operation":"create","content":"x","backup_required":false,"extra":[1,{"a":2}]}`,
		`{"target_file":"/w/a.go","operation":"create","content":"x","truncation_policy":"keep"}`,
		`{"target_file":"/w/a.go","operation":"create","content":"x","content":null,"intent":"","workspace_root":"/w"}`,
		`{"target_file":"/w/\u00e9.go","operation":"create","content":"\"q\" \\ \/ \b\f\n\r\t \u00e9\u20ac \ud83d\ude00 café end","intent":"fix \u0007"}`,
		`{"target_file":"/w/a.go","operation":"create","content":""}`,
	} {
		var want protocol.WriteParams
		if err := json.Unmarshal([]byte(params), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", params, err)
		}
		got, err := decode(json.RawMessage(params), jsonrpc.LongString{}, nil)
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: decoded %+v, %v; encoding/json reads %+v", params, got, err, want)
		}
	}
	for _, tc := range []struct{ params, reason, field string }{
		{"{\"target_file\":\"/w/a\",\"operation\":\"create\",\"content\":\"caf\xe9\"}", protocol.ReasonInvalidUTF8, "params"},
		{`{"target_file":"/w/a","operation":"create","content":"\ud800"}`, protocol.ReasonInvalidUTF8, "params"},
		{`{"target_file":"/w/a","operation":"create","content":7}`, protocol.ReasonMalformedParams, "content"},
		{`{"target_file":"/w/a","operation":"create","content":"\udc00x"}`, protocol.ReasonInvalidUTF8, "params"},
		{`{"target_file":"/w/a","operation":"create","content":"\ud83d\u0041"}`, protocol.ReasonInvalidUTF8, "params"},
		{"{\"target_file\":\"/w/a\",\"operation\":\"create\",\"content\":\"a\tb\"}", protocol.ReasonMalformedParams, ""},
		{`{"target_file":"/w/a","operation":"create","content":"\x"}`, protocol.ReasonMalformedParams, ""},
		{`{"target_file":["/w/a"],"operation":"create","content":"x"}`, protocol.ReasonMalformedParams, "target_file"},
		{`{"target_file":"/w/a","operation":"create","content":"x"`, protocol.ReasonMalformedParams, ""},
	} {
		_, err := decode(json.RawMessage(tc.params), jsonrpc.LongString{}, nil)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Data.Reason != tc.reason || pe.Data.Field != tc.field {
			t.Errorf("%s: %v, want %s on %q", tc.params, err, tc.reason, tc.field)
		}
	}
}

// The content decoded is a string of its own, not a view of the frame's
// buffer: the frame is read into again once the handler returns, while the
// engine may still hold the content.
func TestWriteParamsOwnTheirContent(t *testing.T) {
	decode := fastParams[protocol.WriteParams](protocol.MethodSessionWrite)
	for _, content := range []string{`plain text`, `escaped\n text`} {
		raw := []byte(`{"target_file":"/w/a","operation":"create","content":"` + content + `"}`)
		p, err := decode(raw, jsonrpc.LongString{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Clone(p.Content)
		for i := range raw {
			raw[i] = '#'
		}
		if p.Content != want {
			t.Errorf("content %q became %q when the frame's buffer was read into again", want, p.Content)
		}
	}
	// Sent raw, the content is copied out of the frame's buffer too.
	frame := []byte(`{"target_file":"/w/a","operation":"create"}raw text`)
	p, err := writeRawParams(frame[:43], frame[43:], nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frame {
		frame[i] = '#'
	}
	if p.Content != "raw text" {
		t.Errorf("raw content became %q when the frame's buffer was read into again", p.Content)
	}
}

// BenchmarkWriteParams: session.write's params of a 64 KiB file, read as
// every other method's are (encoding/json, then a pass to check the text)
// and by the faster decoder it uses.
func BenchmarkWriteParams(b *testing.B) {
	text := []byte(strings.Repeat("func f() { return \"x\" }\n", 64<<10/25))
	content, _ := json.Marshal(string(text))
	raw := json.RawMessage(`{"target_file":"/w/a.go","operation":"create","content":` + string(content) + `}`)
	begin := json.RawMessage(`{"target_file":"/w/a.go","operation":"create"}`)
	for _, tc := range []struct {
		name   string
		decode func(json.RawMessage) (*protocol.WriteParams, error)
	}{
		{"encoding-json", func(raw json.RawMessage) (*protocol.WriteParams, error) {
			return decodeParams[protocol.WriteParams](protocol.MethodSessionWrite, raw)
		}},
		{"fast", func(raw json.RawMessage) (*protocol.WriteParams, error) {
			return fastParams[protocol.WriteParams](protocol.MethodSessionWrite)(raw, jsonrpc.LongString{}, nil)
		}},
		{"raw", func(json.RawMessage) (*protocol.WriteParams, error) {
			// The same params, the content sent raw (Orion-Raw-Length).
			return writeRawParams(begin, text, nil)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeAppendFast: params as clients send them are read by the one-pass
// decoder, in any order and with any spacing, and a chunk that is not
// Unicode refused by it as the general decoder refuses it; everything else
// is left to the general decoder, untouched. All of this with and without
// what the frame reader learned of the chunk.
func TestDecodeAppendFast(t *testing.T) {
	for _, tc := range []struct {
		params string
		fast   bool
	}{
		{`{"session_id":"s","seq":1,"chunk":"hello\n"}`, true},
		{` { "chunk" : "a\"b\u00e9\ud83d\ude00\\" , "seq" : 18446744073709551615 , "session_id" : "s\u00e9" } `, true},
		{`{"session_id":"s","seq":0,"chunk":""}`, true},
		{"{\"session_id\":\"s\",\"seq\":1,\"chunk\":\"caf\xe9\"}", true},
		{`{"session_id":"s","seq":1,"chunk":"\ud800"}`, true},
		{`{"chunk":"a\udc00b","session_id":"s","seq":3}`, true},
		{"{\"session_id\":\"caf\xe9\",\"seq\":1,\"chunk\":\"x\"}", false},
		{`{"session_id":"s","seq":1,"chunk":null}`, false},
		{`{"session_id":"s","seq":1}`, false},
		{`{"session_id":"s","seq":01,"chunk":""}`, false},
		{`{"session_id":"s","seq":1.0,"chunk":""}`, false},
		{`{"session_id":"s","seq":1e0,"chunk":""}`, false},
		{`{"session_id":"s","seq":18446744073709551616,"chunk":""}`, false},
		{`{"session_id":"s","seq":1,"chunk":"\n","chunk":"x"}`, false},
		{`{"Session_ID":"s","seq":1,"chunk":""}`, false},
		{`{"session_id":"s","seq":1,"chunk":"\t","x":1}`, false},
		{`{"session_id":"s","seq":1,"chunk":""}x`, false},
		{`{"session_id":"s","seq":1,"chunk":"",}`, false},
		{`{"session_id":"s","seq":1 "chunk":""}`, false},
		{`{"session_id":"s","seq":1,"chunk":"plain text, no escape"}`, true},
		{`{"session_id":"a longer session id than the chunk","seq":1,"chunk":"x\n"}`, true},
	} {
		for _, scanned := range []bool{false, true} {
			raw := []byte(tc.params)
			var long jsonrpc.LongString
			if scanned {
				long = frameLong(raw)
			}
			p, ok, err := decodeAppendFast(raw, long)
			if ok != tc.fast {
				t.Errorf("%s (scanned %v): read in one pass %v, want %v", tc.params, scanned, ok, tc.fast)
				continue
			}
			if !ok && string(raw) != tc.params {
				t.Errorf("%s (scanned %v): left to the general decoder as %s", tc.params, scanned, raw)
			}
			if ok {
				want, wantErr := decodeAppendGeneral([]byte(tc.params))
				if !sameAppend(p, err, want, wantErr) {
					t.Errorf("%s (scanned %v): read %+v (%v), the general decoder %+v (%v)", tc.params, scanned, p, err, want, wantErr)
				}
			}
		}
	}
}

// frameLong is what the frame reader notes of params, valid JSON, that it
// passed over: their longest string value, as jsonstr.Scan reads it.
func frameLong(raw []byte) jsonrpc.LongString {
	var long jsonrpc.LongString
	if !json.Valid(raw) {
		return long
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		n, sc, _ := jsonstr.Scan(raw[i:])
		if k := jsonstr.SkipSpace(raw, i+n); (k >= len(raw) || raw[k] != ':') && n > len(long.JSON) {
			long = jsonrpc.LongString{JSON: raw[i : i+n], Scanned: sc}
		}
		i += n - 1
	}
	return long
}

// sameAppend reports whether two decodings of an append's params agree: the
// same params, or the same error.
func sameAppend(p *protocol.AppendParams, err error, q *protocol.AppendParams, qerr error) bool {
	if err != nil || qerr != nil {
		return reflect.DeepEqual(err, qerr)
	}
	return *p == *q
}

// FuzzDecodeAppend: whatever the one-pass decoder reads, the general
// decoder reads the same, or refuses the same way; what it leaves to the
// general decoder it leaves untouched. So it does when it is told (as by
// the frame reader) what jsonstr.Scan makes of the string at any place of
// the params: the chunk's, or any other, which it must not take for the
// chunk's.
func FuzzDecodeAppend(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","seq":1,"chunk":"hello\n"}`,
		` { "chunk" : "a\"b\ud83d\ude00" , "seq" : 42 , "session_id" : "s" } `,
		`{"session_id":"s","seq":1,"chunk":"\ud800"}`,
		`{"session_id":"s","seq":1,"chunk":null}`,
		`{"session_id":"s","seq":1,"chunk":"","chunk":"x"}`,
		`{"session_id":"s","seq":1e0,"chunk":""}`,
	} {
		f.Add([]byte(s), uint16(len(s)))
		if i := strings.Index(s, `"chunk"`); i >= 0 {
			f.Add([]byte(s), uint16(i+len(`"chunk"`)+strings.IndexByte(s[i+len(`"chunk"`):], '"')))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, at uint16) {
		in := bytes.Clone(raw)
		var long jsonrpc.LongString
		if i := int(at); i < len(raw) {
			if n, sc, ok := jsonstr.Scan(raw[i:]); ok {
				long = jsonrpc.LongString{JSON: raw[i : i+n], Scanned: sc}
			}
		} else if i == len(raw) {
			long = frameLong(raw)
		}
		// Into a request's room, the connection's last session id "s":
		// the id read is the same whether it is that one or not.
		last := "s"
		p, ok, err := decodeAppendFastInto(raw, long, &requestRoom{lastSession: &last})
		if !ok {
			if !bytes.Equal(raw, in) {
				t.Fatalf("%q: left to the general decoder as %q", in, raw)
			}
			return
		}
		want, wantErr := decodeAppendGeneral(in)
		if !sameAppend(p, err, want, wantErr) {
			t.Fatalf("%q: read %+v (%v), the general decoder %+v (%v)", in, p, err, want, wantErr)
		}
	})
}

// TestAppendResultEncodesAsEncodingJSON: an append's reply, encoded by hand,
// is byte for byte what encoding/json writes for it, whatever its fields
// hold: clients decode it with their own JSON libraries.
func TestAppendResultEncodesAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    protocol.AppendResult
	}{
		{"Zero", protocol.AppendResult{}},
		{"Streaming", protocol.AppendResult{SessionID: "5f0c2c7e-8a1b-4c1e-9f3a-0d2b6c1e7a90", Seq: 42,
			Stage: protocol.StageStreaming, Bytes: 172032, Lines: 2688}},
		{"DuplicateAfterMarker", protocol.AppendResult{SessionID: "s", Seq: 1<<64 - 1, Duplicate: true,
			Stage: protocol.StageFinalizing, Bytes: 1<<63 - 1, Lines: -1, EndMarkerSeen: true, TrailingBytes: 7}},
		{"StringsToEscape", protocol.AppendResult{SessionID: "a\"b\\c<d>&e\u2028\x01\xff", Stage: "é\t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeResult(nil, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encodeResult = %s\nencoding/json = %s", got, want)
			}
		})
	}
}

func FuzzAppendResultJSON(f *testing.F) {
	f.Add("id", uint64(1), true, "streaming", int64(10), int64(2), false, int64(0))
	f.Fuzz(func(t *testing.T, id string, seq uint64, dup bool, stage string, bytes, lines int64, seen bool, trailing int64) {
		r := protocol.AppendResult{SessionID: id, Seq: seq, Duplicate: dup, Stage: protocol.Stage(stage),
			Bytes: bytes, Lines: lines, EndMarkerSeen: seen, TrailingBytes: trailing}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendResultJSON(nil, r); string(got) != string(want) {
			t.Errorf("appendResultJSON = %s\nencoding/json = %s", got, want)
		}
	})
}

// TestAppendRawParams: an append whose chunk came raw decodes its session
// and seq from the JSON, by the fast decoder or the general one alike, and
// its chunk is the raw bytes themselves, not a copy; a chunk in the JSON
// too, raw bytes that are not UTF-8 and malformed JSON are refused with
// their reasons.
func TestAppendRawParams(t *testing.T) {
	for _, tc := range []struct {
		name, params, content string
		reason                string
	}{
		{"Fast", `{"session_id":"a","seq":3}`, "x\x00\"\\ é\r\n", ""},
		{"FastEmpty", `{"session_id":"a","seq":3}`, "", ""},
		{"General", ` { "seq" : 3 , "Session_ID" : "a", "extra": [1] } `, "text", ""},
		{"GeneralNullChunk", `{"session_id":"a","seq":3,"chunk":null}`, "text", ""},
		{"ChunkToo", `{"session_id":"a","seq":3,"chunk":"x"}`, "text", protocol.ReasonContentSentTwice},
		{"ChunkTooFirst", `{"chunk":"","session_id":"a","seq":3}`, "text", protocol.ReasonContentSentTwice},
		{"ChunkTooGeneral", `{"session_id":"a","seq":3,"chunk":"x","more":true}`, "text", protocol.ReasonContentSentTwice},
		{"InvalidUTF8", `{"session_id":"a","seq":3}`, "caf\xe9", protocol.ReasonInvalidUTF8},
		{"InvalidUTF8General", `{"seq":3,"session_id":"a","x":1}`, "\xed\xa0\x80", protocol.ReasonInvalidUTF8},
		{"Malformed", `{"session_id":"a","seq":"3"}`, "text", protocol.ReasonMalformedParams},
		{"SessionNotText", `{"session_id":"\ud800","seq":3}`, "text", protocol.ReasonInvalidUTF8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := []byte(tc.content)
			var last string
			p, err := methods[protocol.MethodSessionAppend].decodeRaw([]byte(tc.params), content, &requestRoom{lastSession: &last})
			if tc.reason != "" {
				var pe *protocol.Error
				if !errors.As(err, &pe) || pe.Data.Reason != tc.reason {
					t.Fatalf("decoded %+v, %v; want refused %s", p, err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.(*protocol.AppendParams)
			if got.SessionID != "a" || got.Seq != 3 || got.Chunk != tc.content {
				t.Fatalf("decoded %+v, want session a, seq 3, chunk %q", got, tc.content)
			}
			if len(content) > 0 && unsafe.StringData(got.Chunk) != &content[0] {
				t.Fatal("the chunk is a copy of the raw content, not the content itself")
			}
		})
	}
}

// TestWriteRawParams: session.write's content sent raw comes out as the
// content, with begin's fields read from the JSON as the faster decoder
// reads them; content in the JSON too, or raw bytes that are not UTF-8,
// are refused with their reasons.
func TestWriteRawParams(t *testing.T) {
	for _, tc := range []struct {
		name, params, content string
		reason, field         string
	}{
		{"OK", `{"target_file":"/w/a.go","operation":"create","intent":"x"}`, "package a\n\"q\" \\ é\x00", "", ""},
		{"Empty", `{"TARGET_FILE":"/w/a.go","operation":"create"}`, "", "", ""},
		{"NullContent", `{"target_file":"/w/a.go","operation":"create","content":null}`, "x", "", ""},
		{"ContentToo", `{"target_file":"/w/a.go","operation":"create","content":""}`, "x", protocol.ReasonContentSentTwice, "content"},
		{"InvalidUTF8", `{"target_file":"/w/a.go","operation":"create"}`, "caf\xe9", protocol.ReasonInvalidUTF8, "content"},
		{"ParamsNotText", "{\"target_file\":\"/w/\xff.go\",\"operation\":\"create\"}", "x", protocol.ReasonInvalidUTF8, "params"},
		{"Malformed", `{"target_file":1}`, "x", protocol.ReasonMalformedParams, "target_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := methods[protocol.MethodSessionWrite].decodeRaw([]byte(tc.params), []byte(tc.content), &requestRoom{})
			if tc.reason != "" {
				var pe *protocol.Error
				if !errors.As(err, &pe) || pe.Data.Reason != tc.reason || pe.Data.Field != tc.field {
					t.Fatalf("decoded %+v, %v; want refused %s naming %q", p, err, tc.reason, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.(*protocol.WriteParams)
			if got.TargetFile != "/w/a.go" || got.Operation != protocol.OpCreate || got.Content != tc.content {
				t.Fatalf("decoded %+v, want /w/a.go created with %q", got, tc.content)
			}
		})
	}
}
