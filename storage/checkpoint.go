package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/passbook-log/passbook/vfs"
)

// Frozen file names and formats; see the package doc.
const (
	formatFile     = "FORMAT"
	formatLine     = "passbook-partition 1\n"
	lockFile       = "LOCK"
	checkpointFile = "CHECKPOINT"
	checkpointSize = 33
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpoint records how far the active segment is known to be fsync'd.
type checkpoint struct {
	base  int64 // active segment's base offset
	pos   int64 // bytes of it that were fsync'd
	clean bool  // written by a clean Close
}

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointSize)
	copy(b, "PBCK")
	b[4] = 1
	binary.BigEndian.PutUint64(b[5:], uint64(c.base))
	binary.BigEndian.PutUint64(b[13:], uint64(c.pos))
	if c.clean {
		b[21] = 1
	}
	binary.BigEndian.PutUint32(b[29:], crc32.Checksum(b[:29], castagnoli))
	return b
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	if len(b) != checkpointSize || string(b[:4]) != "PBCK" || b[4] != 1 {
		return checkpoint{}, errors.New("not a version 1 checkpoint")
	}
	if crc32.Checksum(b[:29], castagnoli) != binary.BigEndian.Uint32(b[29:]) {
		return checkpoint{}, errors.New("checkpoint crc mismatch")
	}
	return checkpoint{
		base:  int64(binary.BigEndian.Uint64(b[5:])),
		pos:   int64(binary.BigEndian.Uint64(b[13:])),
		clean: b[21] == 1,
	}, nil
}

// readCheckpoint reads dir's checkpoint. A missing one is the zero
// checkpoint: nothing known to be synced, not clean.
func readCheckpoint(fsys vfs.FS, dir string) (checkpoint, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, checkpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, nil
	}
	if err != nil {
		return checkpoint{}, err
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return checkpoint{}, &CorruptError{File: filepath.Join(dir, checkpointFile), Pos: 0, Err: err}
	}
	return c, nil
}

// writeCheckpoint replaces dir's checkpoint atomically.
func writeCheckpoint(fsys vfs.FS, dir string, c checkpoint) error {
	return vfs.WriteFileAtomic(fsys, dir, checkpointFile, c.encode())
}
