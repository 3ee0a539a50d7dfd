package storage

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/passbook-log/passbook/batch"

	"github.com/passbook-log/passbook/vfs"
)

// Chunk is a run of whole, stored batches in one segment file, for
// serving them as they are (a Kafka Fetch) without decoding: copy it with
// WriteTo or read File at [Pos, Pos+Size). The first batch may start
// before the offset asked for; clients skip the records before it. A Chunk
// pins its segment against retention until Release.
type Chunk struct {
	File vfs.File // the segment's .log file
	Pos  int64    // where the first batch starts
	Size int64    // bytes of whole batches
	Next int64    // the offset after the last batch in the chunk
	seg  *segment
}

// Release lets retention delete the chunk's segment again.
func (c *Chunk) Release() {
	if c.seg != nil {
		c.seg.release()
		c.seg = nil
	}
}

// WriteTo copies the chunk's bytes to w.
func (c *Chunk) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, io.NewSectionReader(c.File, c.Pos, c.Size))
}

// ReadBatches returns the stored batches from the one holding offset from,
// up to maxBytes — but always at least one whole batch, so that a batch
// larger than maxBytes still makes progress, as Kafka does. It reads only
// the batches' headers, except where a batch is not yet known good since
// the log was opened (see the package doc's Reading section): such a
// batch is read and CRC-checked on the way, and a damaged one ends the
// chunk before it, or, as the first, fails with a *CorruptError. At the
// head it returns an empty chunk (Size 0, Next = from).
func (l *Log) ReadBatches(from int64, maxBytes int) (Chunk, error) {
	return l.readBatches(from, maxBytes, l.head.Load)
}

// ReadCommittedBatches is ReadBatches for a read_committed Kafka fetch:
// it stops at the last stable offset instead of the head. It returns
// every batch below it as stored, control batches and aborted
// transactions' batches included; AbortedTxns says which to drop.
func (l *Log) ReadCommittedBatches(from int64, maxBytes int) (Chunk, error) {
	return l.readBatches(from, maxBytes, l.LastStableOffset)
}

// readBatches is ReadBatches with the bound no batch may pass.
func (l *Log) readBatches(from int64, maxBytes int, bound func() int64) (Chunk, error) {
	r := l.NewReader(from)
	defer r.Close()
	var w headerWalk
	for {
		if r.seg == nil {
			found, err := r.seek()
			if err != nil {
				return Chunk{}, err
			}
			if !found {
				return Chunk{Next: from}, nil
			}
			w.reset(r.seg, r.br.pos, r.br.limit)
			r.seg.catchUp(w.pos)
		}
		pos, h, err := w.next()
		if err == io.EOF {
			if segs := l.segments(); segs[len(segs)-1] == r.seg {
				return Chunk{Next: from}, nil // at the head
			}
			r.seg.release()
			r.seg = nil
			continue
		}
		if err == nil {
			err = w.check(pos, h)
		}
		if err != nil {
			return Chunk{}, r.seg.corrupt(pos, err)
		}
		if h.NextOffset() > bound() {
			return Chunk{Next: from}, nil // written, not yet published (see Reader.nextBatch), or past the LSO
		}
		if h.NextOffset() <= from {
			continue
		}
		c := Chunk{File: r.seg.log, Pos: pos, Size: int64(h.Size()), Next: h.NextOffset()}
		for c.Size < int64(maxBytes) {
			if next, ok := w.skip(c.Pos+int64(maxBytes), bound()); ok {
				c.Size, c.Next = w.pos-c.Pos, next
			}
			pos, h, err := w.next()
			if err != nil || c.Size+int64(h.Size()) > int64(maxBytes) {
				break
			}
			if h.NextOffset() > bound() {
				break // not yet published, or past the LSO
			}
			if err := w.check(pos, h); err != nil {
				break // served on its own next time, as an error
			}
			c.Size += int64(h.Size())
			c.Next = h.NextOffset()
		}
		c.seg, r.seg = r.seg, nil // the chunk keeps the reference
		return c, nil
	}
}

// headerWalk reads the batches of a segment file header by header,
// through a small buffer: a fetch sends the batches without looking at
// them, and needs only where each ends. A batch past the segment's
// checked prefix is read whole and CRC-checked (check).
type headerWalk struct {
	s     *segment
	pos   int64 // file position of the next batch
	limit int64
	buf   [headerWalkBuf]byte
	bufAt int64 // file position of buf[0]
	n     int   // buf[:n] holds file bytes
	body  []byte
	// skipped: skip looked in the index since reset.
	skipped bool
}

// headerWalkBuf holds the headers of the batches in 4 KiB of the file at
// a time: a read per batch for large batches, one per several for small.
const headerWalkBuf = 4 << 10

func (w *headerWalk) reset(s *segment, pos, limit int64) {
	w.s, w.pos, w.limit, w.bufAt, w.n, w.skipped = s, pos, limit, pos, 0, false
}

// next returns the header of the batch at the current position and
// advances past the batch. At the limit it returns io.EOF; a batch cut
// short by the limit returns batch.ErrShort.
func (w *headerWalk) next() (pos int64, h batch.Header, err error) {
	pos = w.pos
	if pos >= w.limit {
		return pos, h, io.EOF
	}
	if pos+batch.HeaderSize > w.limit {
		return pos, h, fmt.Errorf("%w: %d bytes left, header needs %d", batch.ErrShort, w.limit-pos, batch.HeaderSize)
	}
	if pos < w.bufAt || pos+batch.HeaderSize > w.bufAt+int64(w.n) {
		want := int(min(int64(len(w.buf)), w.limit-pos))
		m, err := w.s.log.ReadAt(w.buf[:want], pos)
		if m < batch.HeaderSize {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return pos, h, err
		}
		w.bufAt, w.n = pos, m
	}
	off := int(pos - w.bufAt)
	if h, err = batch.ParseHeader(w.buf[off:w.n]); err != nil {
		return pos, h, err
	}
	if size := int64(h.Size()); pos+size > w.limit {
		return pos, h, fmt.Errorf("%w: %d bytes left, batch needs %d", batch.ErrShort, w.limit-pos, size)
	}
	w.pos += int64(h.Size())
	return pos, h, nil
}

// skipMin is the distance below which skip does not look in the index:
// a few headers are cheaper to read than the index's entries.
const skipMin = 64 << 10

// skip moves the walk, by the sparse index, over known-good batches to the
// last indexed batch that starts at or before end and whose base offset
// is at most bound, so that a fetch of many small batches reads a few
// index entries instead of every header. It returns that base offset, the
// offset after the batches skipped. It does not move in a cleaned segment
// (where a batch's base offset may be past the end of the one before),
// nor when the index entry does not match the batch it names (the index
// is not checksummed).
func (w *headerWalk) skip(end, bound int64) (next int64, ok bool) {
	end = min(end, w.limit, w.s.checked.Load())
	if w.s.cleaned || end-w.pos < skipMin || w.skipped {
		return 0, false
	}
	w.skipped = true // once: the entry found is the last before end
	e, found, err := w.s.idx.lastAtOrBefore(uint32(end))
	if err != nil || !found || int64(e.pos) <= w.pos {
		return 0, false
	}
	base := w.s.base + int64(e.rel)
	if base > bound {
		return 0, false
	}
	from := w.pos
	w.pos = int64(e.pos)
	_, h, err := w.next() // reads the header at e.pos, for the next call too
	w.pos = int64(e.pos)
	if err != nil || h.BaseOffset != base {
		w.pos = from
		return 0, false
	}
	return base, true
}

// catchUpBytes is how much of the stretch between a segment's checked
// prefix and a fetch's start the fetch checks first.
const catchUpBytes = 4 << 20

// catchUp checks up to catchUpBytes of the batches between the segment's
// checked prefix and pos, a fetch's start, extending the prefix. A fetch
// that starts past the prefix (the first after a restart, in the middle
// of a segment) checks its own batches but could not extend the prefix
// with them, and neither could the writer: each such fetch moves the
// prefix on a little, until it reaches the fetches and the head. Damage
// stops it: the prefix ends before the damaged batch, which a fetch of it
// reports, and fetches past the damage each check up to catchUpBytes
// again until the log is reopened.
func (s *segment) catchUp(pos int64) {
	from := s.checked.Load()
	if from >= pos {
		return
	}
	var w headerWalk
	w.reset(s, from, pos)
	for w.pos < min(pos, from+catchUpBytes) {
		at, h, err := w.next()
		if err != nil || w.check(at, h) != nil || !s.knownGood(w.pos) {
			return
		}
	}
}

// check checks the CRC of the batch at pos, whose header is h, unless the
// segment's checked prefix covers it; a batch that passes extends the
// prefix.
func (w *headerWalk) check(pos int64, h batch.Header) error {
	end := pos + int64(h.Size())
	if w.s.knownGood(end) {
		return nil
	}
	w.body = slices.Grow(w.body[:0], h.Size())[:h.Size()]
	if _, err := w.s.log.ReadAt(w.body, pos); err != nil {
		return err
	}
	if _, err := batch.Check(w.body); err != nil {
		return err
	}
	w.s.markChecked(pos, end)
	return nil
}
