package storage

// The log start offset a caller set (Kafka's DeleteRecords).
//
// Retention moves the log start offset by deleting whole segments, so the
// start is always a segment's base and needs no file of its own. A caller
// may also move it to any offset up to the head (DeleteRecords): records
// below it are gone for every reader (ErrOutOfRange, as with retention),
// segments wholly below it are deleted, and the rest of the segment that
// holds it stays on disk but is never served. That start is kept in
// LOGSTART, so that it survives a restart or a crash:
//
//	LOGSTART  17 bytes: magic "PBLS" (4), version 1 (1), the log start
//	          offset (int64, big-endian, 8), CRC-32C of the preceding
//	          bytes (4). Replaced atomically (write, fsync, rename, fsync directory).
//
// The file is frozen like the others. It needs no new FORMAT version: a
// passbook that does not know it ignores it and serves the hidden records
// again, which loses nothing. Open takes the larger of the first
// segment's base and LOGSTART's offset, but never more than the head (a
// power loss may take unsynced records the start had covered: the next
// ones appended get those offsets, and are served).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/passbook-log/passbook/vfs"
)

const (
	logStartFile = "LOGSTART"
	logStartSize = 17
)

func encodeLogStart(off int64) []byte {
	b := make([]byte, logStartSize)
	copy(b, "PBLS")
	b[4] = 1
	binary.BigEndian.PutUint64(b[5:], uint64(off))
	binary.BigEndian.PutUint32(b[13:], crc32.Checksum(b[:13], castagnoli))
	return b
}

func decodeLogStart(b []byte) (int64, error) {
	if len(b) != logStartSize || string(b[:4]) != "PBLS" || b[4] != 1 {
		return 0, errors.New("not a version 1 LOGSTART file")
	}
	if crc32.Checksum(b[:13], castagnoli) != binary.BigEndian.Uint32(b[13:]) {
		return 0, errors.New("LOGSTART crc mismatch")
	}
	off := int64(binary.BigEndian.Uint64(b[5:]))
	if off < 0 {
		return 0, fmt.Errorf("LOGSTART holds a negative offset %d", off)
	}
	return off, nil
}

// readLogStart reads dir's LOGSTART: 0 when there is none. A damaged one
// is a *CorruptError: serving records a user deleted is not a thing to do
// in silence.
func readLogStart(fsys vfs.FS, dir string) (int64, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, logStartFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	off, err := decodeLogStart(b)
	if err != nil {
		return 0, &CorruptError{File: filepath.Join(dir, logStartFile), Pos: 0, Err: err}
	}
	return off, nil
}

// loadedStart is the log start offset Open publishes: the first segment's
// base, raised to LOGSTART's offset, but not past the head.
func (l *Log) loadedStart(base, head int64) (int64, error) {
	ls, err := readLogStart(l.fs, l.dir)
	if err != nil {
		return 0, err
	}
	return max(base, min(ls, head)), nil
}

// DeleteRecords moves the log start offset up to offset, for good: the
// records below it are no longer read (a reader there gets an
// *OutOfRangeError, as below retention's start), and the segments wholly
// below it are deleted; a segment that holds it stays until retention or
// a later DeleteRecords passes its end, its records below offset hidden.
// It is Kafka's DeleteRecords. When it returns the new start is fsync'd
// (LOGSTART, see above) and survives a crash. An offset at or below the
// start changes nothing; one past the head is an *OutOfRangeError. It
// returns the log start offset now.
//
// A reader already past the start reading a segment it holds goes on, as
// with retention; Kafka's fetch sessions behave the same.
func (l *Log) DeleteRecords(offset int64) (int64, error) {
	l.retainMu.Lock()
	defer l.retainMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	start, head := l.start.Load(), l.head.Load()
	if offset < 0 || offset > head {
		return start, &OutOfRangeError{Offset: offset, Start: start, Head: head}
	}
	if offset <= start {
		return start, nil
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, logStartFile, encodeLogStart(offset)); err != nil {
		return start, fmt.Errorf("storage: delete records below %d: %w", offset, err)
	}
	l.start.Store(offset)
	l.o.Logger.Info("log start offset moved", "dir", l.dir, "from", start, "to", offset)
	if _, err := l.retainLocked(); err != nil {
		// The start is durable; the segments below it go on the next
		// retention pass or Open.
		l.o.Logger.Warn("delete records: removing segments below the log start", "dir", l.dir, "err", err)
	}
	return offset, nil
}

// trimBelowStart deletes the segments wholly below the log start offset
// that a crash left behind (between LOGSTART's rename and their
// removal), at Open.
func (l *Log) trimBelowStart() {
	segs := l.segments()
	if len(segs) < 2 || segs[0].next.Load() > l.start.Load() {
		return
	}
	l.retainMu.Lock()
	defer l.retainMu.Unlock()
	if _, err := l.retainLocked(); err != nil {
		l.o.Logger.Warn("open: removing segments below the log start", "dir", l.dir, "err", err)
	}
}
