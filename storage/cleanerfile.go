package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook/vfs"
)

// Frozen names and layout of the cleaner's files; see the package doc.
const (
	cleanerFile   = "CLEANER"
	cleanedSuffix = ".cleaned" // <base>.log.cleaned and its indexes: a cleaned segment being written
	formatLine2   = "passbook-partition 2\n"
	maxMarks      = 64
	cleanerFixed  = 4 + 1 + 5*8 + 2 + 4 // magic, version, five offsets, mark count, CRC
	markSize      = 3 * 8
)

// cleanerState is what CLEANER holds: how far the cleaner got, the swap it
// committed last, and when it first saw the tombstones it keeps.
type cleanerState struct {
	// cleaned is the first dirty offset: every record below it was
	// compared, by key, with every later record below it.
	cleaned int64
	// rewritten: a segment whose base is below it may have been rewritten
	// by the cleaner, so records inside its batches may skip offsets.
	rewritten int64
	// horizon: tombstones below it have been kept for DeleteRetention
	// since the cleaner first saw them; the next pass removes them.
	horizon int64
	// swapBase and swapEnd name the last swap committed (swapEnd >
	// swapBase): the cleaned segment at swapBase replaces the segments
	// with bases in [swapBase, swapEnd). Open completes it.
	swapBase, swapEnd int64
	// marks, by end: the tombstones below end (and at or above the end
	// of the mark before) were first seen by a pass at ms.
	marks []tombMark
}

type tombMark struct {
	end        int64
	ms         int64 // the log's clock when the pass ended
	tombstones int64 // tombstones it kept in its range
}

func (c cleanerState) encode() []byte {
	b := make([]byte, 0, cleanerFixed+markSize*len(c.marks))
	b = append(b, "PBCL"...)
	b = append(b, 1)
	for _, v := range []int64{c.cleaned, c.rewritten, c.horizon, c.swapBase, c.swapEnd} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.marks)))
	for _, m := range c.marks {
		b = binary.BigEndian.AppendUint64(b, uint64(m.end))
		b = binary.BigEndian.AppendUint64(b, uint64(m.ms))
		b = binary.BigEndian.AppendUint64(b, uint64(m.tombstones))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeCleaner(b []byte) (cleanerState, error) {
	var c cleanerState
	if len(b) < cleanerFixed || string(b[:4]) != "PBCL" || b[4] != 1 {
		return c, errors.New("not a version 1 cleaner file")
	}
	n := int(binary.BigEndian.Uint16(b[45:]))
	if n > maxMarks || len(b) != cleanerFixed+n*markSize {
		return c, fmt.Errorf("cleaner file of %d bytes with %d marks", len(b), n)
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return c, errors.New("cleaner file crc mismatch")
	}
	v := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[5+8*i:])) }
	c.cleaned, c.rewritten, c.horizon, c.swapBase, c.swapEnd = v(0), v(1), v(2), v(3), v(4)
	for i := range n {
		p := 47 + i*markSize
		c.marks = append(c.marks, tombMark{
			end:        int64(binary.BigEndian.Uint64(b[p:])),
			ms:         int64(binary.BigEndian.Uint64(b[p+8:])),
			tombstones: int64(binary.BigEndian.Uint64(b[p+16:])),
		})
	}
	return c, nil
}

// readCleaner reads dir's CLEANER; a missing one is the zero state.
func readCleaner(fsys vfs.FS, dir string) (cleanerState, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, cleanerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return cleanerState{}, nil
	}
	if err != nil {
		return cleanerState{}, err
	}
	c, err := decodeCleaner(b)
	if err != nil {
		return c, &CorruptError{File: filepath.Join(dir, cleanerFile), Pos: 0, Err: err}
	}
	return c, nil
}

// writeCleanerLocked replaces CLEANER atomically, first marking the
// partition as format 2 (one that may hold compacted segments) so that an
// older passbook refuses it rather than taking its gaps for corruption.
// The caller holds cleanMu.
func (l *Log) writeCleanerLocked(c cleanerState) error {
	if !l.format2 {
		if err := vfs.WriteFileAtomic(l.fs, l.dir, formatFile, []byte(formatLine2)); err != nil {
			return err
		}
		l.format2 = true
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, cleanerFile, c.encode()); err != nil {
		return err
	}
	l.clean.state = c
	return nil
}

// segmentFile parses a segment file name, "<base>.log", ".index" or
// ".timeindex".
func segmentFile(name string) (base int64, ext string, ok bool) {
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, "", false
	}
	switch ext = name[i:]; ext {
	case ".log", ".index", ".timeindex":
	default:
		return 0, "", false
	}
	b, err := strconv.ParseInt(name[:i], 10, 64)
	return b, ext, err == nil && b >= 0
}

// recoverCleaner runs on Open before the segments are listed: it completes
// the swap CLEANER names, if it did not finish, and removes the cleaned
// files of a cleaning that never committed. See the package doc for the
// states this goes through. It returns the directory's names as it leaves
// them.
func (l *Log) recoverCleaner(names []string) ([]string, error) {
	st, err := readCleaner(l.fs, l.dir)
	if err != nil {
		return nil, err
	}
	swapped := st.swapEnd > st.swapBase
	if swapped {
		if err := completeSwap(l.fs, l.dir, names, st.swapBase, st.swapEnd); err != nil {
			return nil, fmt.Errorf("complete the swap of segment %d: %w", st.swapBase, err)
		}
		l.o.Logger.Debug("completed the last compaction swap", "dir", l.dir, "base", st.swapBase, "end", st.swapEnd)
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return nil, err
		}
	}
	removed := false
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) {
			if err := l.fs.Remove(filepath.Join(l.dir, n)); err != nil {
				return nil, fmt.Errorf("remove an unfinished cleaned segment: %w", err)
			}
			removed = true
			l.o.Logger.Info("removed a cleaned segment an interrupted compaction left", "dir", l.dir, "file", n)
		}
	}
	if removed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return nil, fmt.Errorf("sync directory: %w", err)
		}
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasSuffix(n, cleanedSuffix) })
	}
	l.clean.state = st
	if swapped {
		st.swapBase, st.swapEnd = 0, 0
		return names, l.writeCleanerLocked(st)
	}
	return names, nil
}

// completeSwap puts the cleaned segment at base in place of the segments
// with bases in [base, end): it renames each of its files that is still
// under its .cleaned name, removes the other segments' files, and syncs
// the directory. It is idempotent, so a crash anywhere in it (or in the
// cleaner's own swap) is recovered by running it again.
func completeSwap(fsys vfs.FS, dir string, names []string, base, end int64) error {
	for _, ext := range []string{".index", ".timeindex", ".log"} {
		final := segmentName(base, ext)
		if slices.Contains(names, final+cleanedSuffix) {
			if err := fsys.Rename(filepath.Join(dir, final+cleanedSuffix), filepath.Join(dir, final)); err != nil {
				return err
			}
		}
	}
	// The .log first, as retention does: Open ignores indexes without one.
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		for _, n := range names {
			if b, e, ok := segmentFile(n); ok && e == ext && b > base && b < end {
				if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
					return err
				}
			}
		}
	}
	return fsys.SyncDir(dir)
}
