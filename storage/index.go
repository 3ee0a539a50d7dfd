package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/passbook-log/passbook/vfs"
)

// Frozen index entry sizes; see the package doc.
const (
	offsetEntrySize = 8  // relative offset uint32, position uint32
	timeEntrySize   = 12 // timestamp int64, relative offset uint32
)

type offsetEntry struct {
	rel uint32 // base offset of the batch − segment base
	pos uint32 // byte position of the batch in the .log file
}

type timeEntry struct {
	ms  int64  // largest timestamp in the segment up to this batch
	rel uint32 // base offset of the batch that raised it − segment base
}

// index is a segment's sparse offset and time index. The active segment
// keeps its entries in memory and writes them to its files in runs of
// up to indexFlushEntries (the first entry of each file at once), and
// whole when it is synced (sealed, or the log closed): after a crash
// Open rebuilds the active segment's index from its batches, so the
// files only need to be complete once the segment is, and the entries
// they do hold are always right. A closed segment reads its entries from
// its files on demand, so memory does not grow with the number of
// segments.
type index struct {
	mu                sync.RWMutex // guards the fields below against readers' lookups
	offFile, timeFile vfs.File
	inMemory          bool
	offs              []offsetEntry // when inMemory: every entry, written or not
	times             []timeEntry   // when inMemory
	offCount          int           // entries in offFile
	timeCount         int           // entries in timeFile
	buf               []byte        // encoding buffer of flush
}

// indexFlushEntries is how many entries of an in-memory index wait
// before they are written out together.
const indexFlushEntries = 64

func (x *index) appendOffset(e offsetEntry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inMemory {
		x.offs = append(x.offs, e)
		if x.offCount > 0 && len(x.offs)-x.offCount < indexFlushEntries {
			return nil
		}
		return x.flushOffsLocked()
	}
	b := binary.BigEndian.AppendUint32(x.buf[:0], e.rel)
	x.buf = binary.BigEndian.AppendUint32(b, e.pos)
	if _, err := x.offFile.Write(x.buf); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	x.offCount++
	return nil
}

func (x *index) appendTime(e timeEntry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inMemory {
		x.times = append(x.times, e)
		if x.timeCount > 0 && len(x.times)-x.timeCount < indexFlushEntries {
			return nil
		}
		return x.flushTimesLocked()
	}
	b := binary.BigEndian.AppendUint64(x.buf[:0], uint64(e.ms))
	x.buf = binary.BigEndian.AppendUint32(b, e.rel)
	if _, err := x.timeFile.Write(x.buf); err != nil {
		return fmt.Errorf("write time index: %w", err)
	}
	x.timeCount++
	return nil
}

// flushOffsLocked writes the in-memory offset entries the file lacks, in
// one write. A failed write leaves offCount where it was: a retry
// truncates the file to it (recoverWritesLocked) and writes them again.
func (x *index) flushOffsLocked() error {
	if !x.inMemory || len(x.offs) == x.offCount {
		return nil
	}
	b := x.buf[:0]
	for _, e := range x.offs[x.offCount:] {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	x.buf = b
	if _, err := x.offFile.Write(b); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	x.offCount = len(x.offs)
	return nil
}

func (x *index) flushTimesLocked() error {
	if !x.inMemory || len(x.times) == x.timeCount {
		return nil
	}
	b := x.buf[:0]
	for _, e := range x.times[x.timeCount:] {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ms))
		b = binary.BigEndian.AppendUint32(b, e.rel)
	}
	x.buf = b
	if _, err := x.timeFile.Write(b); err != nil {
		return fmt.Errorf("write time index: %w", err)
	}
	x.timeCount = len(x.times)
	return nil
}

// flush writes every entry the files lack.
func (x *index) flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.flushOffsLocked(); err != nil {
		return err
	}
	return x.flushTimesLocked()
}

// cut drops the entries past the first offs and times, which name a
// batch a failed write never published (see segment.rollback); the
// files keep whole entries only up to the counts, as a retry truncates
// them (recoverWritesLocked).
func (x *index) cut(offs, times int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inMemory {
		x.offs, x.times = x.offs[:min(offs, len(x.offs))], x.times[:min(times, len(x.times))]
	}
	x.offCount, x.timeCount = min(x.offCount, offs), min(x.timeCount, times)
}

// offLen and timeLen are the numbers of entries, written or not.
func (x *index) offLen() int {
	if x.inMemory {
		return len(x.offs)
	}
	return x.offCount
}

func (x *index) timeLen() int {
	if x.inMemory {
		return len(x.times)
	}
	return x.timeCount
}

func (x *index) offsetAt(i int) (offsetEntry, error) {
	if x.inMemory {
		return x.offs[i], nil
	}
	var b [offsetEntrySize]byte
	if _, err := x.offFile.ReadAt(b[:], int64(i)*offsetEntrySize); err != nil {
		return offsetEntry{}, fmt.Errorf("read index entry %d: %w", i, err)
	}
	return offsetEntry{rel: binary.BigEndian.Uint32(b[:]), pos: binary.BigEndian.Uint32(b[4:])}, nil
}

func (x *index) timeAt(i int) (timeEntry, error) {
	if x.inMemory {
		return x.times[i], nil
	}
	var b [timeEntrySize]byte
	if _, err := x.timeFile.ReadAt(b[:], int64(i)*timeEntrySize); err != nil {
		return timeEntry{}, fmt.Errorf("read time index entry %d: %w", i, err)
	}
	return timeEntry{ms: int64(binary.BigEndian.Uint64(b[:])), rel: binary.BigEndian.Uint32(b[8:])}, nil
}

// lookup returns the position of a batch whose base offset is at most rel,
// as late as the index allows: scanning forward from it finds rel.
func (x *index) lookup(rel uint32) (uint32, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var err error
	i := sort.Search(x.offLen(), func(i int) bool {
		if err != nil {
			return true
		}
		var e offsetEntry
		e, err = x.offsetAt(i)
		return e.rel > rel
	})
	if err != nil || i == 0 {
		return 0, err
	}
	e, err := x.offsetAt(i - 1)
	return e.pos, err
}

// lookupTime returns the relative offset of a batch from which scanning
// finds the first record with a timestamp ≥ ms: the batch before the first
// entry whose timestamp reaches ms. ok is false when no entry reaches ms.
func (x *index) lookupTime(ms int64) (rel uint32, ok bool, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.timeLen()
	i := sort.Search(n, func(i int) bool {
		if err != nil {
			return true
		}
		var e timeEntry
		e, err = x.timeAt(i)
		return e.ms >= ms
	})
	if err != nil || i == n {
		return 0, false, err
	}
	if i == 0 {
		return 0, true, nil
	}
	e, err := x.timeAt(i - 1)
	return e.rel, true, err
}

// lastTime returns the newest time entry, if any.
func (x *index) lastTime() (timeEntry, bool, error) {
	n := x.timeLen()
	if n == 0 {
		return timeEntry{}, false, nil
	}
	e, err := x.timeAt(n - 1)
	return e, err == nil, err
}

// load reads a closed segment's index files, checking that they are
// well-formed: whole entries, increasing offsets and positions inside the
// log file. A damaged index returns an error; the caller rebuilds it.
func (x *index) load(logSize int64, inMemory bool) error {
	x.inMemory = false
	offSize, err := fileSize(x.offFile)
	if err != nil {
		return err
	}
	timeSize, err := fileSize(x.timeFile)
	if err != nil {
		return err
	}
	if offSize%offsetEntrySize != 0 || timeSize%timeEntrySize != 0 {
		return fmt.Errorf("index sizes %d and %d are not whole entries", offSize, timeSize)
	}
	x.offCount, x.timeCount = int(offSize/offsetEntrySize), int(timeSize/timeEntrySize)
	if inMemory {
		// One read per file, not one per entry; the checks below then
		// read the entries from memory.
		b := make([]byte, max(offSize, timeSize))
		if err := readFullAt(x.offFile, b[:offSize]); err != nil {
			return fmt.Errorf("read index: %w", err)
		}
		offs := make([]offsetEntry, x.offCount)
		for i := range offs {
			e := b[i*offsetEntrySize:]
			offs[i] = offsetEntry{rel: binary.BigEndian.Uint32(e), pos: binary.BigEndian.Uint32(e[4:])}
		}
		if err := readFullAt(x.timeFile, b[:timeSize]); err != nil {
			return fmt.Errorf("read time index: %w", err)
		}
		times := make([]timeEntry, x.timeCount)
		for i := range times {
			e := b[i*timeEntrySize:]
			times[i] = timeEntry{ms: int64(binary.BigEndian.Uint64(e)), rel: binary.BigEndian.Uint32(e[8:])}
		}
		x.offs, x.times, x.inMemory = offs, times, true
	}
	if x.offCount > 0 {
		// Checking the whole file would cost a read per entry; the
		// ends and their order catch truncation and garbage.
		first, err := x.offsetAt(0)
		if err != nil {
			return err
		}
		last, err := x.offsetAt(x.offCount - 1)
		if err != nil {
			return err
		}
		if first.pos != 0 || first.rel != 0 || int64(last.pos) >= logSize || last.rel < first.rel || last.pos < first.pos {
			x.inMemory, x.offs, x.times = false, nil, nil
			return fmt.Errorf("index entries out of order or past the log end")
		}
	}
	return nil
}

// readFullAt fills b from the start of f.
func readFullAt(f vfs.File, b []byte) error {
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// dropMemory makes a sealed index read from its files from now on.
func (x *index) dropMemory() {
	x.mu.Lock()
	x.inMemory, x.offs, x.times = false, nil, nil
	x.mu.Unlock()
}

// reset empties the index and its files, for a rebuild.
func (x *index) reset() error {
	if err := x.offFile.Truncate(0); err != nil {
		return fmt.Errorf("truncate index: %w", err)
	}
	if err := x.timeFile.Truncate(0); err != nil {
		return fmt.Errorf("truncate time index: %w", err)
	}
	x.offs, x.times = x.offs[:0], x.times[:0]
	x.offCount, x.timeCount = 0, 0
	return nil
}

// sync writes out the entries the files lack and fsyncs both files.
func (x *index) sync() error {
	if err := x.flush(); err != nil {
		return err
	}
	if err := x.offFile.Sync(); err != nil {
		return fmt.Errorf("sync index: %w", err)
	}
	if err := x.timeFile.Sync(); err != nil {
		return fmt.Errorf("sync time index: %w", err)
	}
	return nil
}

func fileSize(f vfs.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return fi.Size(), nil
}
