package textfmt_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/textfmt"
)

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 lines"}, {1, "1 line"}, {2, "2 lines"}, {-1, "-1 lines"}, {1204, "1204 lines"}} {
		if got := textfmt.Count(tt.n, "line", "lines"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := textfmt.Count(uint8(1), "byte", "bytes"); got != "1 byte" {
		t.Errorf("uint8: %q", got)
	}
	if got := textfmt.CountGrouped(1204, "line", "lines"); got != "1,204 lines" {
		t.Errorf("CountGrouped: %q", got)
	}
	if got := textfmt.Word(1, "request", "requests"); got != "request" {
		t.Errorf("Word: %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234",
		-999: "-999", -9223372036854775808: "-9,223,372,036,854,775,808"} {
		if got := textfmt.Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestIBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 65536: "64.0 KiB",
		3 << 20: "3.0 MiB", 12 << 20: "12.0 MiB", 1536 << 20: "1.5 GiB", 5 << 40: "5.0 TiB", 5 << 50: "5120.0 TiB"} {
		if got := textfmt.IBytes(n); got != want {
			t.Errorf("IBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1: "1 byte", 812: "812 bytes", 1024: "1 KiB", 1535: "1 KiB", 1536: "2 KiB",
		1023 << 10: "1,023 KiB", 1 << 20: "1.0 MiB", 3670016: "3.5 MiB"} {
		if got := textfmt.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
