package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/termsafe"
	"github.com/orion-agent/orion/protocol"
)

// wholeInput reads stdin ahead to see whether it fits one session.write:
// a regular file up to limit bytes is read whole; a pipe is read up to
// client.DefaultChunkSize bytes, the most the streamed write would hold
// back before its first chunk anyway. It returns what it read, whether
// that is all of the input, and the input to stream otherwise (what was
// read, then the rest).
func wholeInput(in io.Reader, limit int) (head []byte, all bool, rest io.Reader, err error) {
	peek := client.DefaultChunkSize
	size := int64(-1)
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if fi.Size() > int64(limit) {
				return nil, false, in, nil
			}
			peek, size = limit, fi.Size()
		}
	}
	peek = min(peek, limit)
	head, err = readAll(io.LimitReader(in, int64(peek)+1), size)
	if err != nil {
		return nil, false, nil, err
	}
	if len(head) <= peek {
		return head, true, nil, nil
	}
	return nil, false, io.MultiReader(bytes.NewReader(head), in), nil
}

// readAll is io.ReadAll into a buffer of size bytes (and one more, to
// find the end) where size is known, -1 if not: a file of a MiB read by
// io.ReadAll was copied over and over as its buffer grew from 512 bytes.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			// The file grew since it was measured.
			b = append(b, 0)[:len(b)]
		}
	}
}

// writeWhole writes content with one session.write. ok is false when the
// daemon does not serve session.write (an older daemon): the caller
// writes through a session instead. A write a check refused is aborted,
// as a streamed write's is, so the next run starts afresh.
func writeWhole(cmd *cobra.Command, g *globals, c *client.Client, p protocol.BeginParams, content []byte) (ok bool, err error) {
	ctx := cmd.Context()
	// content is only read from here on (and by the streamed write when
	// this one is not served): a string of it needs no copy of its own.
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: p, Content: unsafe.String(unsafe.SliceData(content), len(content))})
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Data.Reason == protocol.ReasonUnknownMethod {
		return false, nil
	}
	if err != nil {
		return true, refusedWhole(ctx, cmd, c, p, err)
	}
	return true, printSummary(cmd, g, res)
}

// refusedWhole says why a session.write failed, aborting the session it
// left (a refused check keeps one for a corrected attempt, which this
// command does not make).
func refusedWhole(ctx context.Context, cmd *cobra.Command, c *client.Client, p protocol.BeginParams, cause error) error {
	var pe *protocol.Error
	if !errors.As(cause, &pe) {
		return fmt.Errorf("writing %s: the connection to oriond failed before its reply, so whether it was written is unknown (see `orionctl sessions list --all`): %w",
			p.TargetFile, cause)
	}
	if id := pe.Data.SessionID; id != "" {
		if _, err := c.Abort(ctx, id); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "orionctl: aborting session %s: %s\n", termsafe.String(id), termsafe.String(err.Error()))
		}
	}
	name := p.TargetFile
	if !filepath.IsAbs(name) && p.WorkspaceRoot != "" {
		name = filepath.Join(p.WorkspaceRoot, name)
	}
	return refusal(cause, displayName(name), nextAborted)
}
