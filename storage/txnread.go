package storage

import (
	"context"
)

// Reading committed data (Kafka's isolation_level=read_committed).

// AbortedTxns returns the aborted transactions that may have records in
// [from, to): those whose marker is at or past from and whose first
// offset is below to, oldest marker first — what a Kafka Fetch returns
// so that read_committed clients drop aborted records. It looks only at
// the segments from the one holding from on, in memory, and stops at the
// first abort after which no later one can concern the range (its LSO
// at or past to), as Kafka's collectAbortedTxns; a partition that never
// aborted a transaction costs a walk over its segment list, nothing more.
func (l *Log) AbortedTxns(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	for _, s := range l.segments() {
		if s.next.Load() <= from {
			continue // every marker it holds is below from
		}
		for _, a := range s.txn.abortedList() {
			if a.LastOffset >= from && a.FirstOffset < to {
				out = append(out, a)
			}
			if a.LastStableOffset >= to {
				return out
			}
		}
	}
	return out
}

// abortedAt reports whether the transactional batch of producer pid at
// offset off belongs to an aborted transaction.
func (l *Log) abortedAt(pid, off int64) bool {
	for _, s := range l.segments() {
		if s.next.Load() <= off {
			continue
		}
		for _, a := range s.txn.abortedList() {
			if a.ProducerID == pid && a.FirstOffset <= off && off <= a.LastOffset {
				return true
			}
			if a.LastStableOffset > off {
				return false
			}
		}
	}
	return false
}

// WaitStable blocks until the log's last stable offset passes offset
// (LastStableOffset() > offset), ctx is done, or the log is closed: the
// long poll of a read_committed reader, which a commit or abort marker
// (or a non-transactional append with no transaction open) ends.
func (l *Log) WaitStable(ctx context.Context, offset int64) error {
	for {
		ch := l.notify.wait()
		if l.LastStableOffset() > offset {
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

// ReadCommitted makes the reader read committed data only, as a Kafka
// read_committed consumer: it stops at the last stable offset (TryNext
// reports the end there, Next waits for it to move), and skips control
// records and the records of aborted transactions. Its Offset still
// moves past what it skips, so a consumer that commits it does not read
// them again. Call it before the first read.
func (r *Reader) ReadCommitted() *Reader {
	r.committed = true
	return r
}

// bound is the offset the reader must not read a batch past: the head,
// or for a read_committed reader the last stable offset.
func (r *Reader) bound() int64 {
	if r.committed {
		return r.l.LastStableOffset()
	}
	return r.l.head.Load()
}

// skipBatch reports whether a read_committed reader skips the batch
// whose header says it is control or transactional, of producer pid at
// base offset base.
func (r *Reader) skipBatch(control, transactional bool, pid, base int64) bool {
	if !r.committed {
		return false
	}
	return control || transactional && r.l.abortedAt(pid, base)
}
