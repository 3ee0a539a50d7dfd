package storage

import (
	"os"
	"sort"
)

// What a fetch need not check again (see the package doc's Reading
// section). Each segment keeps checked, the end of the prefix of its log
// file known to hold only good batches since the log was opened: the
// writer extends it over each batch it writes (validated before it was
// written, CRC and all), and a reader over each batch whose CRC it
// checked, when the batch starts where the prefix ends. ReadBatches
// checks the CRC only of batches past the prefix; the Reader, whose
// records reach callers that check nothing, checks every batch.
//
// The prefix only ever covers bytes below the segment's size, which a
// live log never truncates (a failed write's recovery cuts only what was
// never published, and Open starts every segment's prefix at 0), and
// segments rewritten by the cleaner or replaced by a repair are new
// segments with a prefix of their own.

// markChecked records that the batches at [from, to) of the segment's log
// file are known good: the checked prefix grows to to if it reaches from.
func (s *segment) markChecked(from, to int64) {
	for {
		c := s.checked.Load()
		if c < from || c >= to {
			return
		}
		if s.checked.CompareAndSwap(c, to) {
			return
		}
	}
}

// knownGood reports whether the bytes of the segment's log file below end
// are in the checked prefix.
func (s *segment) knownGood(end int64) bool { return end <= s.checked.Load() }

// OSFile returns the *os.File of the chunk's segment file, for handing
// [Pos, Pos+Size) to sendfile(2), when the log's file system is the real
// one (vfs.OS, or a wrapper that keeps its OSFile method); nil otherwise
// (Mem, Faulty: copy with ReadAt or WriteTo). The file stays open, even
// if retention deletes the segment meanwhile, until Release; it must not
// be closed, read through its own offset or kept past Release.
func (c *Chunk) OSFile() *os.File {
	if c.seg == nil {
		return nil
	}
	return c.seg.files[0].osFile()
}

// osFile returns the open file's *os.File, if it has one. The caller has
// the file pinned, so that it stays open.
func (f *cachedFile) osFile() *os.File {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if f.f == nil || f.closed {
		return nil
	}
	if of, ok := f.f.(interface{ OSFile() *os.File }); ok {
		return of.OSFile()
	}
	return nil
}

// lastAtOrBefore returns the offset index's last entry whose batch starts
// at or before pos; found is false when there is none.
func (x *index) lastAtOrBefore(pos uint32) (e offsetEntry, found bool, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(x.offLen(), func(i int) bool {
		if err != nil {
			return true
		}
		var e offsetEntry
		e, err = x.offsetAt(i)
		return e.pos > pos
	})
	if err != nil || i == 0 {
		return e, false, err
	}
	e, err = x.offsetAt(i - 1)
	return e, err == nil, err
}
