package session

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// contentSum is the SHA-256 of a session's content, computed as its chunks
// are appended, while each waits for its sync, so that a finalize that
// writes the content as journaled need not hash it on its own path (for a
// large file, hashing was most of the finalize's time). It lives in memory
// only: a session read back from the store (after a restart) has none, and
// its finalize hashes as before.
//
// The end marker is not content, and whether a line is the marker is known
// only at the line's end: the bytes of a line that may still be the marker
// are held until that is known. A line that holds more than maxHeld such
// bytes (blanks before a marker, say) ends the running sum.
type contentSum struct {
	h hash.Hash
	// hashed is how many content bytes h has taken; fed how many bytes
	// of the stream the sum has seen; held the bytes from hashed to fed.
	hashed, fed int64
	held        []byte
	// lost is set once add failed: the sum no longer follows the
	// content, whatever comes next.
	lost bool
}

// maxHeld bounds the bytes a contentSum holds back.
const maxHeld = 4 << 10

func newContentSum() *contentSum { return &contentSum{h: sha256.New()} }

// add takes chunk, the bytes of the stream from offset at, which s
// (already fed chunk) has scanned. It returns false when the sum can no
// longer follow the content (chunk is not the next of the stream, or too
// much is held); the sum is then of no use.
func (c *contentSum) add(at int64, chunk []byte, s *Scanner) bool {
	if !c.follow(at, chunk, s) {
		c.lost = true
		return false
	}
	return true
}

func (c *contentSum) follow(at int64, chunk []byte, s *Scanner) bool {
	if c.lost || at != c.fed {
		return false
	}
	c.fed += int64(len(chunk))
	// sure: the bytes before it are content whatever comes next.
	sure := s.LineStart
	switch {
	case s.Found:
		sure = s.ContentEnd
	case s.Match < 0:
		sure = s.Total
	}
	if sure > c.hashed {
		n := sure - c.hashed
		h := min(n, int64(len(c.held)))
		c.h.Write(c.held[:h])
		c.held = c.held[h:]
		c.h.Write(chunk[:n-h])
		c.hashed = sure
		chunk = chunk[n-h:]
	}
	if s.Found {
		// Nothing after the marker is content.
		c.held, c.fed = nil, s.Total
		return true
	}
	if len(c.held)+len(chunk) > maxHeld {
		return false
	}
	c.held = append(c.held, chunk...)
	return true
}

// sum returns the hex SHA-256 of the first n bytes of the content of a
// stream of total bytes, or "" when the sum does not cover exactly them
// (it has not seen all the stream: something else fed its scanner).
func (c *contentSum) sum(n, total int64) string {
	if c == nil || c.fed != total || n < c.hashed || n > c.hashed+int64(len(c.held)) {
		return ""
	}
	if n == c.hashed {
		return hex.EncodeToString(c.h.Sum(nil))
	}
	// Held bytes are content after all (the input ended on them): hashed
	// into a copy, the running sum is left as it stands.
	cl, ok := c.h.(hash.Cloner)
	if !ok {
		return ""
	}
	h, err := cl.Clone()
	if err != nil {
		return ""
	}
	h.Write(c.held[:n-c.hashed])
	return hex.EncodeToString(h.Sum(nil))
}

// sumChunk adds chunk, the next of r's stream, which after scanned the
// scanner stands as after (r.Scanner is before it), to r's running sum. A
// sum starts with a session's first chunk when that is as large as the
// chunks of a file streamed whole (orionctl write, streamFirstChunk), whose
// finalize streams it from the journal; a model's stream, in small chunks,
// or a client's of 64 KiB, is checked in memory at its finalize, which
// hashes it there, and its appends are not made to hash it too (nor to
// start a goroutine each to do so). A large chunk is hashed beside the caller's journaling of it, after
// prev, the session's chunk before it (nil: none is being hashed): wait for
// the result before using the sum, and before returning. streamed says the
// session's file is written as it streams (streamed.go), whose finalize
// needs the sum however small its chunks.
func (r *record) sumChunk(chunk []byte, after Scanner, prev *sumJob, streamed bool) pendingSum {
	sum := r.sum
	if sum == nil && r.Scanner.Total == 0 && (len(chunk) >= streamFirstChunk || streamed) {
		sum = newContentSum()
	}
	if sum == nil {
		return pendingSum{}
	}
	at := r.Scanner.Total
	if len(chunk) < parallelSum && prev.finished() {
		return pendingSum{sum: sum, ok: sum.add(at, chunk, &after)}
	}
	j := &sumJob{done: make(chan struct{})}
	go func() {
		if prev != nil {
			<-prev.done
		}
		j.ok = sum.add(at, chunk, &after)
		close(j.done)
	}()
	return pendingSum{sum: sum, job: j}
}

// sumJob is a chunk being added to a running sum beside its journaling.
type sumJob struct {
	done chan struct{} // closed once ok is set
	ok   bool
}

// finished reports whether j (nil: none) is done.
func (j *sumJob) finished() bool {
	if j == nil {
		return true
	}
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// pendingSum is a running sum being added to.
type pendingSum struct {
	sum *contentSum
	ok  bool
	job *sumJob
}

// wait returns the sum once it took its chunk, or nil if it could not.
func (p pendingSum) wait() *contentSum {
	if p.job != nil {
		<-p.job.done
		p.ok = p.job.ok
	}
	if !p.ok {
		return nil
	}
	return p.sum
}

// parallelSum is the chunk size from which the hash runs beside the
// journal's write and sync rather than before them.
const parallelSum = 64 << 10
