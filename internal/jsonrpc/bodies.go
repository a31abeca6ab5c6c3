package jsonrpc

import (
	"errors"
	"io"
	"math/bits"
	"sync"
)

// Frame bodies are recycled: a request's frame is read into a buffer that
// the handler hands back (Raw.Release) once it is done with the params, and
// the next frame of about that size is read into it. An append's chunk is
// most of its frame, and a new buffer for each (64 KiB, or 1 MiB when a
// large file is streamed) cost its zeroing and most of the garbage, and so
// of the collections, an append made. The pools are sync.Pools, emptied by
// the collector, so a burst of large frames leaves nothing held once it is
// over.
//
// Buffers come in size classes a quarter of a power of two apart, so a
// buffer is at most a quarter larger than its frame and frames of about
// one size (the chunks of one client) share one class.
const minBodyClass = 1 << 10

var bodyPools [4 * 64]sync.Pool

// bodyClass returns the pool and the buffer size for a body of n bytes.
func bodyClass(n int) (int, int) {
	if n <= minBodyClass {
		return 0, minBodyClass
	}
	// 2^k <= n-1 < 2^(k+1), k >= 10; q is n-1's top three bits, 4 to 7.
	k := bits.Len(uint(n-1)) - 1
	shift := k - 2
	q := (n - 1) >> shift
	return 1 + 4*(k-10) + (q - 4), (q + 1) << shift
}

// getBody returns a buffer for a body of n bytes: *b is n bytes long, its
// contents whatever a frame before left there.
func getBody(n int) *[]byte {
	i, size := bodyClass(n)
	if v := bodyPools[i].Get(); v != nil {
		b := v.(*[]byte)
		*b = (*b)[:n]
		return b
	}
	buf := make([]byte, n, size)
	return &buf
}

// putBody gives b, from getBody, back for a later frame. Nothing may use
// its bytes after.
func putBody(b *[]byte) {
	if b == nil {
		return
	}
	i, size := bodyClass(cap(*b))
	if size != cap(*b) {
		return
	}
	if poisonBodies {
		full := (*b)[:cap(*b)]
		for j := range full {
			full[j] = 0xDB
		}
	}
	bodyPools[i].Put(b)
}

// readPooledBody is readBody into a buffer of getBody.
func readPooledBody(r io.Reader, length int64) (*[]byte, error) {
	buf := getBody(int(length))
	if _, err := io.ReadFull(r, *buf); err != nil {
		putBody(buf)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
