package termsafe_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/termsafe"
)

func TestTextHandler(t *testing.T) {
	dropTime := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"UnquotedEscaped",
			func(l *slog.Logger) { l.Info("wrote", "path", "a\u3164b", "intent", `x\y`) },
			`level=INFO msg=wrote path=a\u3164b intent=x\\y`},
		{"ControlsInMessage",
			func(l *slog.Logger) { l.Info("wrote \x1b[1A\x1b[2K") },
			`level=INFO msg="wrote \x1b[1A\x1b[2K"`},
		{"ControlsUnquotedValue",
			func(l *slog.Logger) { l.Info("m", "path", "evil\u202etxt.exe\x1b]0;t\x07") },
			`level=INFO msg=m path=evil\u202etxt.exe\x1b]0;t\x07`},
		{"Error",
			func(l *slog.Logger) { l.Warn("m", "err", errors.New("refused\x1b]52;c;aGk=\x07")) },
			`level=WARN msg=m err="refused\x1b]52;c;aGk=\a"`},
		{"ErrorUnquoted",
			func(l *slog.Logger) { l.Warn("m", "err", errors.New("x\u3164")) },
			`level=WARN msg=m err=x\u3164`},
		{"IgnorableInQuotedValue",
			func(l *slog.Logger) { l.Info("m", "path", "a b\u3164", "q", `a "\u3164"`) },
			`level=INFO msg=m path="a b\u3164" q="a \"\\u3164\""`},
		{"Grouped",
			func(l *slog.Logger) { l.WithGroup("s").Info("m", "target", "\u200b") },
			`level=INFO msg=m s.target=\u200b`},
		{"NumbersUntouched",
			func(l *slog.Logger) { l.Info("m", "n", 3, "ok", true) },
			`level=INFO msg=m n=3 ok=true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(termsafe.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})))
			got := strings.TrimSuffix(buf.String(), "\n")
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			checkInert(t, "log line", got)
		})
	}
}

func FuzzTextHandler(f *testing.F) {
	f.Add("wrote", "\x1b[1A\x1b[2K~/.bash_aliases", "\u202e")
	f.Add("", `a\b`, "\u3164")
	f.Fuzz(func(t *testing.T, msg, v1, v2 string) {
		var buf bytes.Buffer
		l := slog.New(termsafe.NewTextHandler(&buf, nil))
		l.Info(msg, "a", v1, "err", errors.New(v2))
		checkInert(t, msg+v1+v2, strings.TrimSuffix(buf.String(), "\n"))
	})
}
