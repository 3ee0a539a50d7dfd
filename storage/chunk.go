package storage

import (
	"io"

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
// larger than maxBytes still makes progress, as Kafka does. Batches are
// CRC-checked on the way; a damaged one ends the chunk before it, or, as
// the first, fails with a *CorruptError. At the head it returns an empty
// chunk (Size 0, Next = from).
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
		if h.NextOffset() > bound() {
			return Chunk{Next: from}, nil // written, not yet published (see Reader.nextBatch), or past the LSO
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
			if h.NextOffset() > bound() {
				break // not yet published, or past the LSO
			}
			c.Size += int64(h.Size())
			c.Next = h.NextOffset()
		}
		c.seg, r.seg = r.seg, nil // the chunk keeps the reference
		return c, nil
	}
}
