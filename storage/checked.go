package storage

import (
	"io"
	"os"
	"sort"

	"github.com/passbook-log/passbook/batch"
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

// ReadBatchesVerified is ReadBatches reading every batch whole and
// checking its CRC, whatever is known good: what every fetch did before
// the segments kept their checked prefix. It is the baseline of the
// Kafka server's fetch benchmark, and for a caller that wants every
// batch checked on every read.
func (l *Log) ReadBatchesVerified(from int64, maxBytes int) (Chunk, error) {
	r := l.NewReader(from)
	defer r.Close()
	for {
		if r.seg == nil {
			found, err := r.seek()
			if err != nil {
				return Chunk{}, err
			}
			if !found {
				return Chunk{Next: from}, nil
			}
		}
		pos, b, h, err := r.br.next()
		if err == io.EOF {
			if segs := l.segments(); segs[len(segs)-1] == r.seg {
				return Chunk{Next: from}, nil // at the head
			}
			r.seg.release()
			r.seg = nil
			continue
		}
		if err == nil {
			_, err = batch.Check(b)
		}
		if err != nil {
			return Chunk{}, r.seg.corrupt(pos, err)
		}
		if h.NextOffset() > l.head.Load() {
			return Chunk{Next: from}, nil // written, not yet published (see Reader.nextBatch)
		}
		if h.NextOffset() <= from {
			continue
		}
		c := Chunk{File: r.seg.log, Pos: pos, Size: int64(h.Size()), Next: h.NextOffset()}
		for c.Size < int64(maxBytes) {
			_, b, h, err := r.br.next()
			if err != nil || c.Size+int64(h.Size()) > int64(maxBytes) {
				break
			}
			if _, err := batch.Check(b); err != nil {
				break // served on its own next time, as an error
			}
			if h.NextOffset() > l.head.Load() {
				break // not yet published
			}
			c.Size += int64(h.Size())
			c.Next = h.NextOffset()
		}
		c.seg, r.seg = r.seg, nil // the chunk keeps the reference
		return c, nil
	}
}
