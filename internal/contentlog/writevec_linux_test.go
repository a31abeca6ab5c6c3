package contentlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteVecAt: buffers written in one go land one after another from
// the offset, empty ones and more than one system call takes included.
func TestWriteVecAt(t *testing.T) {
	f, err := openOSFile(filepath.Join(t.TempDir(), "seg"), os.O_RDWR|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bufs [][]byte
	for i := range 2*maxIOV + 5 {
		switch i % 7 {
		case 0:
			bufs = append(bufs, nil)
		case 3:
			bufs = append(bufs, bytes.Repeat([]byte{byte(i)}, 70<<10))
		default:
			bufs = append(bufs, []byte(strconv.Itoa(i)+";"))
		}
	}
	want := bytes.Join(bufs, nil)
	const off = 4096 + 5
	if err := f.(osFile).writeVecAt(bufs, off); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want)+1)
	n, _ := f.ReadAt(got, off)
	if n != len(want) || !bytes.Equal(got[:n], want) {
		t.Fatalf("read back %d bytes, want %d as written", n, len(want))
	}
}
