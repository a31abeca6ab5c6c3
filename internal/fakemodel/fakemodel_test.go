package fakemodel_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/fakemodel"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestResponses(t *testing.T) {
	m := fakemodel.Responses(func(t *fakemodel.Turn) { t.Message("a", "b") })
	srv := httptest.NewServer(m)
	defer srv.Close()
	code, body := post(t, srv.URL+"/v1/responses", `{"turn":1}`)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for i, want := range []string{"event: response.created\ndata: {", `"sequence_number":0`, "response.output_text.delta",
		`"text":"ab"`, "event: response.completed\n", `"status":"completed"`, `"sequence_number":5`} {
		if !strings.Contains(body, want) {
			t.Errorf("%d: the stream has no %q:\n%s", i, want, body)
		}
	}
	if code, _ := post(t, srv.URL+"/v1/chat/completions", `{}`); code != http.StatusNotFound {
		t.Errorf("a request that is not a turn: status %d, want 404", code)
	}
	if got := m.Bodies(); len(got) != 1 || got[0] != `{"turn":1}` {
		t.Errorf("Bodies() = %q, want the one turn's body", got)
	}
}

func TestGemini(t *testing.T) {
	m := fakemodel.Gemini(func(t *fakemodel.Turn) { t.Chunk("STOP", map[string]string{"text": "hi"}) })
	srv := httptest.NewServer(m)
	defer srv.Close()
	_, body := post(t, srv.URL+"/v1beta/models/x:streamGenerateContent", `{}`)
	if !strings.HasPrefix(body, "data: {") || !strings.HasSuffix(body, "}\r\n\r\n") || !strings.Contains(body, `"finishReason":"STOP"`) {
		t.Errorf("the chunk is not framed as Google's server frames it: %q", body)
	}
}

func TestSplits(t *testing.T) {
	s := fakemodel.Table(250)
	if got := strings.Join(fakemodel.Pieces(s, 40), ""); got != s {
		t.Errorf("Pieces lost or added text")
	}
	if n := len(fakemodel.Pieces(s, 40)); n < 39 || n > 41 {
		t.Errorf("Pieces(s, 40) made %d pieces", n)
	}
	chunks := fakemodel.LineChunks(s, 100)
	if len(chunks) != 3 || strings.Join(chunks, "") != s || strings.Count(chunks[2], "\n") != 50 {
		t.Errorf("LineChunks(250 lines, 100): %d chunks", len(chunks))
	}
}
