package tracecfg_test

import (
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/trace/tracecfg"
)

// A cap too small to keep a session's events is refused with the flag's
// name; 0 is no cap.
func TestMaxBytes(t *testing.T) {
	for _, tc := range []struct {
		max  int64
		want string // "" for accepted
	}{
		{trace.DefaultMaxBytes, ""},
		{0, ""},
		{64 << 10, ""},
		{1000, "--trace-max-bytes 1000: give at least 65536 bytes, or 0 for no cap"},
		{-1, "--trace-max-bytes -1: give at least 65536 bytes, or 0 for no cap"},
	} {
		tr, err := tracecfg.New(tracecfg.Settings{Enabled: true, Retention: time.Hour, MaxString: 1024, MaxBytes: tc.max}, nil)
		if tc.want == "" {
			if err != nil {
				t.Fatalf("--trace-max-bytes %d: %v", tc.max, err)
			}
			want := tc.max
			if want == 0 {
				want = -1
			}
			if got := tr.Stats().MaxBytes; got != max(want, 0) {
				t.Fatalf("--trace-max-bytes %d: the tracer caps at %d", tc.max, got)
			}
			tr.Close()
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Fatalf("--trace-max-bytes %d: %v, want %q", tc.max, err, tc.want)
		}
	}
}

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		s    tracecfg.Settings
		want string
	}{
		{tracecfg.Settings{Enabled: true, Retention: -time.Second, MaxString: 1024}, "--trace-retention -1s: give a positive period"},
		{tracecfg.Settings{Enabled: true, Retention: time.Hour, MaxString: 10}, "--trace-max-string 10: give at least 64 bytes"},
	} {
		if _, err := tracecfg.New(tc.s, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	if tr, err := tracecfg.New(tracecfg.Settings{}, nil); tr != nil || err != nil {
		t.Fatalf("tracing off: %v, %v", tr, err)
	}
}
