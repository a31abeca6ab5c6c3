package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Every sync strace shows counts once: fsync and fdatasync as called, and
// also as submitted to the kernel to make while the daemon goes on (Linux
// AIO, which a whole-file write uses for its file and its directory); a
// call resumed after an interruption is the same call, and a segment
// being prepared is counted apart.
func TestSyncLogCounts(t *testing.T) {
	log := `100 fdatasync(7</s/log/0000000000000001.seg>) = 0
101 io_submit(0x7f0dd300d000, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_FSYNC, aio_fildes=11</w/#10003865>(deleted)}]) = 1
101 io_submit(0x7f0dd300d000, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_FSYNC, aio_fildes=9</w>}]) = 1
102 fsync(17</w/.orion-tmp--d284ad70f5ad3e58-c> <unfinished ...>
102 <... fsync resumed>) = 0
103 io_submit(0x7f0dd300e000, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_FDSYNC, aio_fildes=12</s/log/x.seg>}]) = 1
104 fdatasync(8</s/log/spare.tmp>) = 0
105 io_submit(0x7f0dd300e000, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PWRITE, aio_fildes=12</s/log/x.seg>, aio_buf=0x1, aio_nbytes=1, aio_offset=0}]) = 1
`
	path := filepath.Join(t.TempDir(), "strace.out")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	fsync, fdatasync, prep, err := syncLog{path: path}.countsAll()
	if err != nil {
		t.Fatal(err)
	}
	if fsync != 3 || fdatasync != 2 || prep != 1 {
		t.Errorf("counted %d fsync, %d fdatasync, %d of a segment prepared; want 3, 2, 1", fsync, fdatasync, prep)
	}
}
