package main

// service install and the daemon already running: someone who tried oriond
// with `oriond run --allow-root ~/proj` and then installs the service
// expects the service to write where that daemon did. The flags of that
// daemon are nowhere but in its process, so install asks it (daemon.status)
// and carries what it was configured with into the unit, for each setting
// the unit would otherwise leave at its default.

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/internal/config"
	"github.com/orion-agent/orion/protocol"
)

// runningStatus asks the daemon on socket for its status, or says why it
// could not (none running is the usual case).
func runningStatus(ctx context.Context, socket string) (protocol.StatusResult, error) {
	var st protocol.StatusResult
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return st, err
	}
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(nc, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }),
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	defer conn.Close()
	err = conn.Call(ctx, protocol.MethodDaemonStatus, protocol.NoParams{}, &st)
	return st, err
}

// adoptRunning returns the flags that give the unit the configuration of
// the daemon running on the unit's socket, for every setting r left at its
// default, and says on w what it carried. A setting given by a flag, the
// environment or the config file is the person's choice and stays.
func adoptRunning(ctx context.Context, w io.Writer, r *config.Resolved) []string {
	sock, ok := r.Lookup("socket")
	if !ok {
		return nil
	}
	st, err := runningStatus(ctx, sock.Flag.Value.String())
	if err != nil {
		return nil
	}
	var args []string
	adopt := func(key string, running []string, same func(unit, running []string) bool) {
		s, ok := r.Lookup(key)
		if !ok || s.Source != config.SourceDefault || len(running) == 0 {
			return
		}
		if same(values(s.Flag), running) {
			return
		}
		for _, v := range running {
			args = append(args, "--"+key+"="+v)
		}
	}
	samePaths := func(a, b []string) bool {
		return slices.Equal(resolved(a), resolved(b))
	}
	// Roots orionctl allow added are read from the state directory at
	// every start: a flag would keep one its file no longer lists.
	kept, _ := config.ReadAddedRoots(st.StateDir)
	started := slices.DeleteFunc(slices.Clone(st.AllowedRoots), func(r string) bool { return slices.Contains(resolved(kept), r) })
	adopt("allow-root", started, samePaths)
	adopt("allow-protected", st.AllowedProtected, samePaths)
	adopt("state-dir", []string{st.StateDir}, samePaths)
	number := func(n int64) []string {
		if n <= 0 {
			return nil
		}
		return []string{strconv.FormatInt(n, 10)}
	}
	adopt("max-chunk-bytes", number(st.MaxChunkBytes), slices.Equal[[]string])
	adopt("max-session-bytes", number(st.MaxSessionBytes), slices.Equal[[]string])
	adopt("max-inflight", number(int64(st.MaxInflight)), slices.Equal[[]string])
	if len(args) > 0 {
		fmt.Fprintf(w, "oriond: the daemon running on %s (pid %d) was started with %q; the unit carries them too "+
			"(give the flags you want to install, or stop that daemon first, to choose otherwise)\n", st.Socket, st.PID, args)
	}
	return args
}

// values is a flag's current value as a list.
func values(f *pflag.Flag) []string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

// resolved is paths made absolute with their symlinks resolved where they
// exist, as the daemon reports its roots.
func resolved(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out[i] = p
	}
	return out
}
