package storage

import (
	"context"
	"fmt"
	"iter"
	"sort"

	"github.com/passbook-log/passbook/batch"
)

// Reading committed data (Kafka's isolation_level=read_committed).

// AbortedTxns returns the aborted transactions that may have records in
// [from, to): those whose marker is at or past from and whose first
// offset is below to, oldest marker first — what a Kafka Fetch returns
// so that read_committed clients drop aborted records. It looks only at
// the segments from the one holding from on, in memory, and stops at the
// first abort after which no later one can concern the range (its LSO
// at or past to), as Kafka's collectAbortedTxns; a partition that never
// aborted a transaction costs a binary search of its segment list and a
// look at each later segment's (empty) list, nothing more.
func (l *Log) AbortedTxns(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	segs := l.segments()
	// Every marker a segment before this one holds is below from.
	i := sort.Search(len(segs), func(i int) bool { return segs[i].next.Load() > from })
	for _, s := range segs[i:] {
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
	segs := l.segments()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].next.Load() > off })
	for _, s := range segs[i:] {
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

// Isolation says which records a reader sees: Kafka's isolation.level.
// The zero value is ReadCommitted, the embedded reader's default; a
// storage Reader reads uncommitted until told otherwise (Isolate).
type Isolation int8

const (
	// ReadCommitted reads committed data only: up to the last stable
	// offset, the records of aborted transactions skipped.
	ReadCommitted Isolation = iota
	// ReadUncommitted reads every record up to the head, those of open
	// and aborted transactions included.
	ReadUncommitted
)

func (i Isolation) String() string {
	switch i {
	case ReadCommitted:
		return "read_committed"
	case ReadUncommitted:
		return "read_uncommitted"
	}
	return fmt.Sprintf("isolation(%d)", int8(i))
}

// Isolate sets which records the reader sees (a Reader from NewReader
// reads uncommitted). Read committed, it stops at the last stable offset
// (TryNext reports the end there, Next waits for it to move) and skips
// the records of aborted transactions. Either way it skips control
// records (transaction markers), as every Kafka client does; its Offset
// moves past what it skips, so a consumer that commits it does not read
// them again. Call it before the first read.
func (r *Reader) Isolate(i Isolation) *Reader {
	r.committed = i == ReadCommitted
	return r
}

// ReadCommitted is Isolate(ReadCommitted).
func (r *Reader) ReadCommitted() *Reader { return r.Isolate(ReadCommitted) }

// RecordsIsolated is Records with an isolation level.
func (l *Log) RecordsIsolated(from int64, i Isolation) iter.Seq2[batch.Record, error] {
	return func(yield func(batch.Record, error) bool) {
		r := l.NewReader(from).Isolate(i)
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

// Stable is the offset a reader of isolation i reads up to: the last
// stable offset read committed, the head read uncommitted.
func (l *Log) Stable(i Isolation) int64 {
	if i == ReadCommitted {
		return l.LastStableOffset()
	}
	return l.Head()
}

// bound is the offset the reader must not read a batch past: the head,
// or for a read_committed reader the last stable offset.
func (r *Reader) bound() int64 {
	if r.committed {
		return r.l.LastStableOffset()
	}
	return r.l.head.Load()
}

// skipBatch reports whether the reader skips the batch whose header
// says it is control or transactional, of producer pid at base offset
// base: a control batch always, an aborted transaction's when reading
// committed.
func (r *Reader) skipBatch(control, transactional bool, pid, base int64) bool {
	return control || r.committed && transactional && r.l.abortedAt(pid, base)
}

// Compaction and transactions (compact.go): a cleaning pass stops at
// the segment holding the last stable offset, since records of an open
// transaction may yet be aborted, and the records of an aborted
// transaction go into no key map, so that they supersede no committed
// record of their key (Kafka's cleaner likewise never lets them count).

// txnCleanEnd is the end of the closed segments wholly below lso: the
// offset a cleaning pass may go up to.
func txnCleanEnd(closed []*segment, lso int64) int64 {
	end := closed[0].base
	for _, s := range closed {
		if s.next.Load() > lso {
			break
		}
		end = s.next.Load()
	}
	return end
}

// txnAbortedBatch reports whether h is a batch of an aborted transaction.
func (l *Log) txnAbortedBatch(h batch.Header) bool {
	return h.Attributes&batch.AttrTransactional != 0 && h.ProducerID >= 0 && l.abortedAt(h.ProducerID, h.BaseOffset)
}
