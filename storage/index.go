package storage

import (
	"encoding/binary"
	"fmt"
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
// keeps its entries in memory and appends them to its files as it goes;
// a closed segment reads them from its files on demand, so memory does
// not grow with the number of segments.
type index struct {
	mu                sync.RWMutex // guards the fields below against readers' lookups
	offFile, timeFile vfs.File
	inMemory          bool
	offs              []offsetEntry // when inMemory
	times             []timeEntry   // when inMemory
	offCount          int           // entries in offFile
	timeCount         int           // entries in timeFile
	buf               [timeEntrySize]byte
}

func (x *index) appendOffset(e offsetEntry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := x.buf[:offsetEntrySize]
	binary.BigEndian.PutUint32(b, e.rel)
	binary.BigEndian.PutUint32(b[4:], e.pos)
	if _, err := x.offFile.Write(b); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	x.offCount++
	if x.inMemory {
		x.offs = append(x.offs, e)
	}
	return nil
}

func (x *index) appendTime(e timeEntry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := x.buf[:timeEntrySize]
	binary.BigEndian.PutUint64(b, uint64(e.ms))
	binary.BigEndian.PutUint32(b[8:], e.rel)
	if _, err := x.timeFile.Write(b); err != nil {
		return fmt.Errorf("write time index: %w", err)
	}
	x.timeCount++
	if x.inMemory {
		x.times = append(x.times, e)
	}
	return nil
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
	i := sort.Search(x.offCount, func(i int) bool {
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
	i := sort.Search(x.timeCount, func(i int) bool {
		if err != nil {
			return true
		}
		var e timeEntry
		e, err = x.timeAt(i)
		return e.ms >= ms
	})
	if err != nil || i == x.timeCount {
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
	if x.timeCount == 0 {
		return timeEntry{}, false, nil
	}
	e, err := x.timeAt(x.timeCount - 1)
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
			return fmt.Errorf("index entries out of order or past the log end")
		}
	}
	if inMemory {
		offs := make([]offsetEntry, x.offCount)
		for i := range offs {
			if offs[i], err = x.offsetAt(i); err != nil {
				return err
			}
		}
		times := make([]timeEntry, x.timeCount)
		for i := range times {
			if times[i], err = x.timeAt(i); err != nil {
				return err
			}
		}
		x.offs, x.times, x.inMemory = offs, times, true
	}
	return nil
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

func (x *index) sync() error {
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
