package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// Reader reads records in offset order from a starting offset. It never
// sees a half-written batch, and checks every batch's CRC before handing
// out its records, every time: its caller checks nothing after it (unlike
// a Kafka client after ReadBatches, see the package doc's Reading
// section). On a compacted log offsets may skip where the cleaner
// removed records: a reader crosses the gaps, and one started inside a
// gap begins at the next record kept. A Reader is for one goroutine; open as many as needed.
// Close it to release the segment it holds.
type Reader struct {
	l    *Log
	next int64 // next offset to return
	seg  *segment
	br   batchReader
	cur  batch.Cursor
	in   bool  // cur holds a batch with records left
	pos  int64 // file position of cur's batch
	want int64 // offset of cur's next record
	// chain is the base offset the next batch must have, or −1 right
	// after a seek by the sparse index, whose entry is not checksummed.
	chain int64
	err   error // sticky
	// committed: read committed data only (txnread.go).
	committed bool
}

// NewReader returns a Reader positioned at offset from. An offset outside
// [StartOffset, Head] is reported by the first call to Next.
func (l *Log) NewReader(from int64) *Reader {
	return &Reader{l: l, next: from}
}

// Offset is the offset of the record the next call to Next returns.
func (r *Reader) Offset() int64 { return r.next }

// Close releases the reader's resources.
func (r *Reader) Close() {
	if r.seg != nil {
		r.seg.release()
		r.seg = nil
	}
	r.in = false
}

// TryNext returns the next record without waiting. ok is false when the
// reader has reached the head. The record's byte slices are valid until
// the next call.
func (r *Reader) TryNext() (rec batch.Record, ok bool, err error) {
	if r.err != nil {
		return rec, false, r.err
	}
	for {
		if r.in {
			for {
				rec, ok := r.cur.Next()
				if !ok {
					break
				}
				// Batches are stored validated: records at offsets base,
				// base+1, … up to the header's last offset. A batch whose
				// CRC holds but whose offsets do not would make gaps or
				// repeats. In a cleaned segment records may skip
				// offsets, but only forward and inside the batch.
				if h := r.cur.Header(); rec.Offset != r.want && (!r.seg.cleaned || rec.Offset < r.want || rec.Offset > h.LastOffset()) {
					return rec, false, r.fail(r.seg.corrupt(r.pos, fmt.Errorf("record after offset %d of the batch of offsets [%d, %d] has offset %d", r.want-1, h.BaseOffset, h.LastOffset(), rec.Offset)))
				}
				r.want = rec.Offset + 1
				if rec.Offset >= r.next { // a batch may start before the reader's offset
					r.next = rec.Offset + 1
					return rec, true, nil
				}
			}
			r.in = false
			if err := r.cur.Err(); err != nil {
				return rec, false, r.fail(r.seg.corrupt(r.pos, err))
			}
			h := r.cur.Header()
			if r.want != h.NextOffset() && !r.seg.cleaned {
				return rec, false, r.fail(r.seg.corrupt(r.pos, fmt.Errorf("batch at offset %d has records up to offset %d, its header says %d", h.BaseOffset, r.want-1, h.LastOffset())))
			}
			// Past a gap the cleaner left at the batch's end.
			r.next = max(r.next, h.NextOffset())
		}
		more, err := r.nextBatch()
		if err != nil {
			return rec, false, r.fail(err)
		}
		if !more {
			return rec, false, nil
		}
	}
}

func (r *Reader) fail(err error) error {
	if !errors.Is(err, ErrOutOfRange) { // out of range may resolve itself
		r.err = err
	}
	return err
}

// Next returns the next record, waiting for one to be appended when the
// reader is at the head, until ctx is done or the log is closed.
func (r *Reader) Next(ctx context.Context) (batch.Record, error) {
	for {
		rec, ok, err := r.TryNext()
		if ok || err != nil {
			return rec, err
		}
		wait := r.l.Wait
		if r.committed {
			wait = r.l.WaitStable
		}
		if err := wait(ctx, r.next); err != nil {
			return rec, err
		}
	}
}

// nextBatch loads the next batch holding r.next into the cursor. It
// returns false at the head.
func (r *Reader) nextBatch() (bool, error) {
	for {
		if r.seg == nil {
			found, err := r.seek()
			if err != nil || !found {
				return false, err
			}
		}
		pos, b, h, err := r.br.next()
		if r.chain < 0 && pos > 0 && (err != nil && err != io.EOF || err == nil && h.BaseOffset > r.next) {
			// The index entry did not lead to the batch holding r.next
			// (or one before it): read the segment from its start. (At
			// io.EOF the entry may be a batch not yet published.)
			r.l.o.Logger.Warn("sparse index entry does not match the segment; scanning it", "segment", r.seg.path, "offset", r.next, "pos", pos)
			r.br.reset(r.seg.log, 0, r.br.limit)
			continue
		}
		if err == io.EOF {
			// Refresh the limit: the active segment may have grown. The
			// writer stores size before next, so next is read first: a
			// next that includes a new batch guarantees a size that does.
			end := r.seg.next.Load()
			if limit := r.seg.size.Load(); limit > r.br.limit {
				r.br.limit = limit
				continue
			}
			if r.next < end {
				return false, r.seg.corrupt(pos, fmt.Errorf("segment ends before offset %d", end))
			}
			segs := r.l.segments()
			if segs[len(segs)-1] == r.seg {
				return false, nil // at the head
			}
			r.seg.release()
			r.seg = nil
			continue
		}
		if err == nil {
			_, err = batch.Check(b)
		}
		if err == nil {
			// The CRC does not cover the base offset: check the chain.
			switch {
			case pos == 0 && h.BaseOffset != r.seg.base:
				err = fmt.Errorf("first batch has base offset %d, the segment's is %d", h.BaseOffset, r.seg.base)
			case r.chain >= 0 && h.BaseOffset != r.chain:
				err = fmt.Errorf("batch has base offset %d, the one before it ends at %d", h.BaseOffset, r.chain)
			case h.BaseOffset > r.next:
				err = fmt.Errorf("batch has base offset %d, past offset %d", h.BaseOffset, r.next)
			}
		}
		if err != nil {
			return false, r.seg.corrupt(pos, err)
		}
		r.seg.markChecked(pos, pos+int64(len(b))) // for ReadBatches (checked.go)
		if h.NextOffset() > r.bound() {
			// Written, but not yet published: the writer stores the
			// segment's size before the head. Read it again next time,
			// so that no record is seen at or past Head (a Kafka client
			// would take its next fetch offset as out of range). For a
			// read_committed reader, the same at the LSO.
			r.br.reset(r.seg.log, pos, r.br.limit)
			return false, nil
		}
		r.chain = h.NextOffset()
		if h.NextOffset() <= r.next {
			continue
		}
		if r.skipBatch(h.IsControl(), h.Attributes&batch.AttrTransactional != 0, h.ProducerID, h.BaseOffset) {
			r.next = h.NextOffset() // a marker, or an aborted transaction's batch
			continue
		}
		if err := r.cur.Reset(b); err != nil {
			return false, r.seg.corrupt(pos, err)
		}
		r.in, r.pos, r.want = true, pos, h.BaseOffset
		return true, nil
	}
}

// seek finds and acquires the segment holding r.next and positions the
// batch reader at or before it. It returns false when r.next is the head.
func (r *Reader) seek() (bool, error) {
	for {
		segs := r.l.segments()
		start, head := r.l.start.Load(), r.l.head.Load()
		if r.next < start || r.next > head {
			return false, &OutOfRangeError{Offset: r.next, Start: start, Head: head}
		}
		i := sort.Search(len(segs), func(i int) bool { return segs[i].base > r.next }) - 1
		if i < 0 {
			return false, &OutOfRangeError{Offset: r.next, Start: start, Head: head}
		}
		s := segs[i]
		if !s.acquire() {
			if r.l.closed.Load() {
				return false, ErrClosed
			}
			continue // deleted by retention meanwhile: look again
		}
		pos, err := s.idx.lookup(uint32(r.next - s.base))
		if err != nil {
			s.release()
			return false, fmt.Errorf("%s: %w", s.path, err)
		}
		r.seg, r.chain = s, -1
		r.br.reset(s.log, int64(pos), s.size.Load())
		return true, nil
	}
}

// Wait blocks until the log holds a record at offset (head > offset), ctx
// is done, or the log is closed.
func (l *Log) Wait(ctx context.Context, offset int64) error {
	for {
		ch := l.notify.wait()
		if l.head.Load() > offset {
			return nil
		}
		if l.closed.Load() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Records iterates over the records from offset from up to the head, then
// stops. Records' byte slices are valid until the iteration moves on
// (batch.Record.Clone keeps one). An error is yielded once, last.
func (l *Log) Records(from int64) iter.Seq2[batch.Record, error] {
	return func(yield func(batch.Record, error) bool) {
		r := l.NewReader(from)
		defer r.Close()
		for {
			rec, ok, err := r.TryNext()
			if err != nil {
				yield(rec, err)
				return
			}
			if !ok || !yield(rec, nil) {
				return
			}
		}
	}
}

// Follow iterates over the records from offset from, waiting at the head
// for new ones, until ctx is done (it then yields ctx.Err()) or the log
// is closed (ErrClosed).
func (l *Log) Follow(ctx context.Context, from int64) iter.Seq2[batch.Record, error] {
	return func(yield func(batch.Record, error) bool) {
		r := l.NewReader(from)
		defer r.Close()
		for {
			rec, err := r.Next(ctx)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// OffsetForTime returns the offset of the first record whose timestamp is
// at or after t, or the head when there is none.
func (l *Log) OffsetForTime(t time.Time) (int64, error) {
	ms := t.UnixMilli()
	from := int64(0) // segments below were looked at
	for again := true; again; {
		again = false
		for _, s := range l.segments() {
			if s.next.Load() <= from || s.maxMs.Load() < ms {
				continue
			}
			if !s.acquire() {
				if l.closed.Load() {
					return 0, ErrClosed
				}
				// Deleted by retention, or swapped by the cleaner for
				// a segment of the same offsets: look again.
				again = true
				break
			}
			off, found, err := l.offsetForTimeIn(s, ms)
			s.release()
			if err != nil || found {
				return off, err
			}
			from = s.next.Load()
		}
	}
	return l.head.Load(), nil
}

func (l *Log) offsetForTimeIn(s *segment, ms int64) (int64, bool, error) {
	rel, _, err := s.idx.lookupTime(ms)
	if err != nil {
		return 0, false, err
	}
	from := s.base + int64(rel)
	if from >= s.next.Load() { // a damaged time index entry: scan the segment
		from = s.base
	}
	from = max(from, l.start.Load())
	for rec, err := range l.Records(from) {
		if err != nil {
			return 0, false, err
		}
		if rec.Offset >= s.next.Load() && s != l.active() {
			break
		}
		if rec.Timestamp.UnixMilli() >= ms {
			return rec.Offset, true, nil
		}
	}
	return 0, false, nil
}
