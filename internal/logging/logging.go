// Package logging builds the daemon's log/slog handler: text or JSON on
// stderr, and, when stderr is a journald stream, records without
// timestamps and with syslog priority prefixes (journal.go).
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/orion-agent/orion/internal/termsafe"
)

// Target is where the process's log goes, as far as it can tell.
type Target struct {
	// Manager is "systemd" or "launchd" when one started this process.
	Manager string
	// Journal is true when stderr is a journald stream: journald adds
	// timestamps itself and reads a <N> syslog priority at the start of
	// each line.
	Journal bool
}

// DetectTarget says where the log goes. It looks at the environment a
// service manager sets and at stderr. systemd sets JOURNAL_STREAM to the device and inode of the
// journal stream it connects stderr to (children that inherit the variable
// but not the stream, such as a shell started from a service, do not
// match); launchd sets XPC_SERVICE_NAME and is the parent of its jobs. A
// terminal on stderr means someone is watching: never a service.
func DetectTarget(getenv func(string) string, stderr *os.File) Target {
	return detectTargetWith(getenv, stderr, parentIsSystemd)
}

// parentIsSystemd reports whether the parent process is systemd: PID 1, or
// a user manager (a process named systemd).
func parentIsSystemd() bool {
	ppid := os.Getppid()
	if ppid == 1 {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}

func detectTargetWith(getenv func(string) string, stderr *os.File, parentIsSystemd func() bool) Target {
	if term.IsTerminal(int(stderr.Fd())) {
		return Target{}
	}
	if js := getenv("JOURNAL_STREAM"); js != "" {
		var dev, ino uint64
		if _, err := fmt.Sscanf(js, "%d:%d", &dev, &ino); err == nil {
			if fi, err := stderr.Stat(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino {
					return Target{Manager: "systemd", Journal: true}
				}
			}
		}
	}
	// Every process under a service inherits INVOCATION_ID; only the one
	// systemd started has it for a parent.
	if getenv("INVOCATION_ID") != "" && parentIsSystemd() {
		return Target{Manager: "systemd"}
	}
	if x := getenv("XPC_SERVICE_NAME"); x != "" && x != "0" && os.Getppid() == 1 {
		return Target{Manager: "launchd"}
	}
	return Target{}
}

// NewHandler is the slog handler for format and level. Written to the
// journal, records have no time (journald stamps each line) and start with
// their syslog priority (<3> error, <4> warning, <6> info, <7> debug), so
// `journalctl -p warning` filters them.
func NewHandler(w io.Writer, format string, level slog.Level, t Target) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: level}
	var jw *journalWriter
	if t.Journal {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
		jw = &journalWriter{w: w}
		w = jw
	}
	var h slog.Handler
	switch format {
	case "text":
		// Logs quote targets, intents and clients' names: a text log
		// shows them inert on a terminal. JSON keeps them exact.
		h = termsafe.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: use text or json", format)
	}
	if jw != nil {
		h = journalHandler{inner: h, mu: &sync.Mutex{}, jw: jw}
	}
	return h, nil
}

// New is the logger for format ("text" or "json") and level ("debug",
// "info", "warn" or "error") writing to w. Its errors name the flag at
// fault.
func New(w io.Writer, format, level string, t Target) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	h, err := NewHandler(w, format, lv, t)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}
