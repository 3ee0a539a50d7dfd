package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
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
	torn  bool  // read from a torn CHECKPOINT: says nothing (readCheckpoint)
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
// checkpoint: nothing known to be synced, not clean. So is a torn one (see
// tornCheckpoint), with torn set: a power loss during its in-place update.
// Any other damage is a *CorruptError.
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
		if tornCheckpoint(b) {
			return checkpoint{torn: true}, nil
		}
		return checkpoint{}, &CorruptError{File: filepath.Join(dir, checkpointFile), Pos: 0, Err: err}
	}
	return c, nil
}

// tornCheckpoint reports whether b, which fails its CRC, is what a power
// loss during writeCheckpoint's in-place update can leave: some bytes of
// the old checkpoint and some of the new. Every checkpoint has the same
// size, magic, version and zero reserved bytes, and a clean flag of 0 or
// 1, so such a mix has them too; a file without them was damaged some
// other way. A torn checkpoint says nothing: the update it tore was
// being made after an fsync that had returned, so the older one it
// replaced held a recovery point no later than the truth, and without
// either the active segment is re-validated from its start, every
// damaged batch in it treated as a torn tail. Nothing fsync'd is lost
// (fsync'd bytes are not damaged by a power loss) and the partition
// opens.
func tornCheckpoint(b []byte) bool {
	if len(b) != checkpointSize || string(b[:4]) != "PBCK" || b[4] != 1 || b[21] > 1 {
		return false
	}
	for _, r := range b[22:29] {
		if r != 0 {
			return false
		}
	}
	return true
}

// writeCheckpoint records c in dir's checkpoint, durably. An existing
// checkpoint of the right size is updated in place: one write of its 33
// bytes at offset 0 and one fdatasync, no rename, no directory fsync (the
// file's size and name do not change). A power loss during it may tear
// it; readCheckpoint knows a torn one. A missing or odd-sized one is
// replaced atomically (write, fsync, rename, fsync directory).
func writeCheckpoint(fsys vfs.FS, dir string, c checkpoint) error {
	name := filepath.Join(dir, checkpointFile)
	if fi, err := fsys.Stat(name); err != nil || fi.Size() != checkpointSize {
		return vfs.WriteFileAtomic(fsys, dir, checkpointFile, c.encode())
	}
	f, err := fsys.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", checkpointFile, err)
	}
	if _, err := f.Write(c.encode()); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", checkpointFile, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", checkpointFile, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", checkpointFile, err)
	}
	return nil
}
