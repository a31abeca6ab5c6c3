package contentlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
)

// TestHeaderAsWritten: a record's header is the one the format defines (see
// the package comment), computed here the plain way: magic, length, the
// payload's CRC-32C, and the CRC-32C of the place (segment id and offset,
// 16 big-endian bytes) followed by the header's first 12 bytes.
func TestHeaderAsWritten(t *testing.T) {
	for _, tc := range []struct {
		seg   uint64
		off   int64
		parts [][]byte
	}{
		{1, 0, [][]byte{[]byte("x")}},
		{2, 4096, [][]byte{[]byte("head"), bytes.Repeat([]byte("chunk\n"), 700)}},
		{math.MaxUint64, math.MaxInt64, nil},
		{0x0102030405060708, 0x1122334455667788, [][]byte{{}, {0xff}}},
	} {
		var payload []byte
		for _, p := range tc.parts {
			payload = append(payload, p...)
		}
		want := make([]byte, headerSize)
		binary.BigEndian.PutUint32(want, recordMagic)
		binary.BigEndian.PutUint32(want[4:], uint32(len(payload)))
		binary.BigEndian.PutUint32(want[8:], crc32.Checksum(payload, castagnoli))
		var place [16]byte
		binary.BigEndian.PutUint64(place[:], tc.seg)
		binary.BigEndian.PutUint64(place[8:], uint64(tc.off))
		binary.BigEndian.PutUint32(want[12:], crc32.Checksum(append(place[:], want[:12]...), castagnoli))

		prefix := []byte("before")
		got := appendHeader(bytes.Clone(prefix), tc.seg, tc.off, tc.parts)
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Errorf("segment %d offset %d: header % x, want % x", tc.seg, tc.off, got[len(prefix):], want)
		}
		if placeCRC(tc.seg, tc.off) != crc32.Checksum(place[:], castagnoli) {
			t.Errorf("segment %d offset %d: placeCRC differs from crc32's", tc.seg, tc.off)
		}
	}
}
