package checkpoint

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/orion-agent/orion/internal/blobstore"
)

// Hash is a file's SHA-256, hex in JSON.
type Hash blobstore.Hash

// MarshalText implements encoding.TextMarshaler.
func (h Hash) MarshalText() ([]byte, error) {
	b := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(b, h[:])
	return b, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hash) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(h) {
		return fmt.Errorf("hash of %d hex digits", len(b))
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// Entry types.
const (
	TypeFile    = 'f'
	TypeSymlink = 'l'
	TypeDir     = 'd'
)

// Entry is one path of a workspace as a checkpoint recorded it: what it
// is, its content (by hash) and mode, and the stat fields that tell, as
// git's index does, whether it may have changed since without reading it.
type Entry struct {
	Type byte   `json:"t"`
	Mode uint32 `json:"m"`
	Size int64  `json:"s"`
	Hash Hash   `json:"h"`
	// Link is a symlink's target, its content.
	Link string `json:"l,omitempty"`
	// Big marks a file over --checkpoint-max-file-bytes: seen, not stored.
	Big bool `json:"b,omitempty"`
	// The stat cache.
	Mtime int64  `json:"mt,omitempty"`
	Ctime int64  `json:"ct,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
	// Racy marks an entry stat'ed within the file system's timestamp
	// granularity of a change: its stat cannot prove the next one equal.
	Racy bool `json:"r,omitempty"`
}

// sameState reports whether a and b (nil: absent) hold the same thing:
// type, content and mode. The stat fields do not count.
func sameState(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case TypeFile:
		if a.Big || b.Big {
			// Not hashed: only its stat tells.
			return a.Big && b.Big && a.Size == b.Size && a.Mtime == b.Mtime && a.Ino == b.Ino && a.Mode == b.Mode
		}
		return a.Hash == b.Hash && a.Mode == b.Mode
	case TypeSymlink:
		return a.Link == b.Link
	}
	return a.Mode == b.Mode
}

// sameContent is sameState without the mode.
func sameContent(a, b *Entry) bool {
	if a == nil || b == nil || a.Type != TypeFile || b.Type != TypeFile {
		return sameState(a, b)
	}
	c := *b
	c.Mode = a.Mode
	return sameState(a, &c)
}

// statEqual reports whether the stat cache proves cur unchanged from old.
func statEqual(old, cur *Entry) bool {
	return old != nil && !old.Racy && old.Type == cur.Type && old.Size == cur.Size &&
		old.Mtime == cur.Mtime && old.Ctime == cur.Ctime && old.Ino == cur.Ino && old.Mode == cur.Mode
}

// restorable reports whether e's content is in the blob store.
func (e *Entry) restorable() bool { return e == nil || e.Type != TypeFile || !e.Big }

func (e *Entry) size() int64 {
	if e == nil {
		return -1
	}
	if e.Type == TypeSymlink {
		return int64(len(e.Link))
	}
	return e.Size
}

func (e *Entry) modeString() string {
	if e == nil {
		return ""
	}
	return fmt.Sprintf("%04o", e.Mode&uint32(fs.ModePerm))
}

// The index keeps entries in a compact binary form: a restart reads
// every entry of a workspace back, and JSON cost ten times as much.
const entryVersion = 1

// marshalBinary encodes e for the index.
func (e *Entry) marshalBinary() []byte {
	b := make([]byte, 0, 80+len(e.Link))
	b = append(b, entryVersion, e.Type)
	var flags byte
	if e.Big {
		flags |= 1
	}
	if e.Racy {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, e.Mode)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Size))
	b = append(b, e.Hash[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Mtime))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Ctime))
	b = binary.BigEndian.AppendUint64(b, e.Ino)
	b = append(b, e.Link...)
	return b
}

const entryFixed = 3 + 4 + 8 + 32 + 8 + 8 + 8

// unmarshalEntry decodes what marshalBinary encoded.
func unmarshalEntry(b []byte) (*Entry, error) {
	if len(b) < entryFixed || b[0] != entryVersion {
		return nil, fmt.Errorf("index entry of %d bytes, version %d", len(b), b[0])
	}
	e := &Entry{Type: b[1], Big: b[2]&1 != 0, Racy: b[2]&2 != 0}
	p := b[3:]
	e.Mode = binary.BigEndian.Uint32(p)
	e.Size = int64(binary.BigEndian.Uint64(p[4:]))
	copy(e.Hash[:], p[12:44])
	e.Mtime = int64(binary.BigEndian.Uint64(p[44:]))
	e.Ctime = int64(binary.BigEndian.Uint64(p[52:]))
	e.Ino = binary.BigEndian.Uint64(p[60:])
	if len(b) > entryFixed {
		e.Link = string(b[entryFixed:])
	}
	return e, nil
}
