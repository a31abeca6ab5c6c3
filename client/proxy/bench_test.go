package proxy_test

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// textUpstream streams a reply of size bytes of text in 100-byte deltas,
// to every request, pausing after the first delta for firstPause.
func textUpstream(t testing.TB, size int, firstPause time.Duration) *httptest.Server {
	delta := strings.Repeat("x", 99) + "\n"
	ev := oaText(delta).raw
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for sent := 0; sent < size; sent += len(delta) {
			io.WriteString(w, ev)
			if sent == 0 {
				fl.Flush()
				time.Sleep(firstPause)
			}
		}
		io.WriteString(w, oaFinish("stop").raw+oaUsage(1, 1).raw+oaDone().raw)
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// timeStream posts a streaming chat request and returns the time to the
// first content byte and to the end.
func timeStream(t testing.TB, url string) (first, total time.Duration) {
	start := time.Now()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(js(chatRequest(true, "hi"))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if first == 0 && strings.Contains(line, `"content":"x`) {
			first = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	return first, time.Since(start)
}

func newTextProxy(t testing.TB, upstream string) *httptest.Server {
	d := testdaemon.Start(t.(*testing.T))
	p, err := proxy.New(proxy.Config{OpenAIUpstream: upstream + "/v1", Socket: d.Socket, WorkspaceRoot: d.Root,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

// The first text reaches the agent while the upstream is still paused:
// nothing is held back for the end of the response.
func TestNoBuffering(t *testing.T) {
	up := textUpstream(t, 20<<10, time.Second)
	srv := newTextProxy(t, up.URL)
	first, total := timeStream(t, srv.URL+"/v1")
	if first > 500*time.Millisecond || total < time.Second {
		t.Errorf("first byte after %v, end after %v: the proxy held the first delta back", first, total)
	}
}

// TestOverhead measures time to first byte and total time of a 200 KiB
// streamed reply, straight from the upstream and through the proxy
// (medians of interleaved runs). It runs with ORION_PROXY_BENCH=1 only:
// timings on a shared machine are for a person to read, not to fail a
// build on. The first byte includes the proxy's dial of oriond.
//
// Two upstreams: "burst" sends the whole reply at once, so the first byte
// also waits for CPU the rest of the stream takes (the client, the proxy
// and the upstream share this process's two cores); "paced" pauses 5 ms
// after the first delta, as a model does between tokens, which leaves the
// hop's own latency.
func TestOverhead(t *testing.T) {
	if testing.Short() || !strings.EqualFold(getenv("ORION_PROXY_BENCH"), "1") {
		t.Skip("set ORION_PROXY_BENCH=1 to measure the proxy's overhead")
	}
	for _, c := range []struct {
		name  string
		pause time.Duration
	}{{"burst", 0}, {"paced", 5 * time.Millisecond}} {
		up := textUpstream(t, 200<<10, c.pause)
		srv := newTextProxy(t, up.URL)
		const runs = 41
		var df, dt, pf, pt []time.Duration
		for range 3 { // warm both paths' connections
			timeStream(t, up.URL+"/v1")
			timeStream(t, srv.URL+"/v1")
		}
		for range runs {
			f, tot := timeStream(t, up.URL+"/v1")
			df, dt = append(df, f), append(dt, tot)
			f, tot = timeStream(t, srv.URL+"/v1")
			pf, pt = append(pf, f), append(pt, tot)
		}
		med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
		t.Logf("%s: 200 KiB reply, %d runs, p50: first byte direct %v, through the proxy %v (+%v); total direct %v, through the proxy %v (+%v)",
			c.name, runs, med(df), med(pf), med(pf)-med(df), med(dt), med(pt), med(pt)-med(dt))
	}
}

func getenv(k string) string { return os.Getenv(k) }
