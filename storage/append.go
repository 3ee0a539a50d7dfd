package storage

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// Append appends records as one or more batches and returns the offset of
// the first; the others follow densely. Records with a zero Timestamp are
// stamped with the log's clock. With d = DefaultDurability the log's
// Options.Durability applies. A record over Options.MaxRecordBytes fails
// the whole call with ErrRecordTooLarge before anything is written, and
// so does a record without a key on a compacted log (ErrNoKey).
func (l *Log) Append(recs []batch.Record, d Durability) (int64, error) {
	if len(recs) == 0 {
		return 0, ErrEmpty
	}
	o := l.opt()
	for i := range recs {
		if n := recordBytes(&recs[i]); n > o.MaxRecordBytes {
			return 0, l.refuse(fmt.Errorf("%w: record %d has %d bytes, limit %d", ErrRecordTooLarge, i, n, o.MaxRecordBytes))
		}
		if o.Compact && recs[i].Key == nil {
			return 0, fmt.Errorf("%w: record %d", ErrNoKey, i)
		}
	}
	first, end, err := l.appendCombined(recs) // combine.go
	if err != nil {
		return 0, err
	}
	return first, l.durable(d, end)
}

// appendRecordsLocked writes recs at the head as one or more batches,
// split so that none passes MaxBatchBytes. mu is held.
func (l *Log) appendRecordsLocked(recs []batch.Record, now time.Time) error {
	o := l.opt()
	for len(recs) > 0 {
		// Split so that no batch passes MaxBatchBytes; each record's
		// overhead is at most ~40 bytes of varints besides its data.
		n, size := 0, batch.HeaderSize
		for n < len(recs) {
			rs := recordBytes(&recs[n]) + 40 + 5*len(recs[n].Headers)
			if n > 0 && size+rs > o.MaxBatchBytes {
				break
			}
			size += rs
			n++
		}
		var err error
		bo := batch.Options{BaseOffset: l.head.Load(), Now: now}
		if o.Compression != nil {
			bo.Codec = *o.Compression
		}
		l.buf, err = batch.Append(l.buf[:0], recs[:n], bo)
		if err == nil && o.LogAppendTime {
			batch.SetLogAppendTime(l.buf, now)
		}
		if err == nil {
			var h batch.Header
			if h, err = batch.ParseHeader(l.buf); err == nil {
				err = l.writeLocked(l.buf, h, now)
			}
		}
		if err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// AppendBatch validates an encoded RecordBatch v2 (as a Kafka producer
// sends it), assigns it the next offsets by patching its base offset, and
// appends it as received: a compressed batch stays compressed. It returns
// the batch's first offset. Invalid input fails with ErrInvalidBatch,
// ErrRecordTooLarge, ErrBatchTooLarge or ErrInvalidTimestamp and writes
// nothing. b is modified (its base offset, and its partition leader
// epoch, set to LeaderEpoch) but not retained.
func (l *Log) AppendBatch(b []byte, d Durability) (int64, error) {
	o := l.opt()
	if len(b) > o.MaxBatchBytes {
		return 0, l.refuse(fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(b), o.MaxBatchBytes))
	}
	if o.MaxMessageBytes > 0 && len(b) > o.MaxMessageBytes {
		return 0, l.refuse(fmt.Errorf("%w: %d bytes, max.message.bytes %d", ErrBatchTooLarge, len(b), o.MaxMessageBytes))
	}
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	validate := l.dec.Validate
	if o.Compact {
		validate = l.dec.ValidateKeyed
	}
	h, err := validate(b, o.MaxRecordBytes)
	if err != nil {
		l.mu.Unlock()
		if errors.Is(err, batch.ErrTooLarge) {
			return 0, l.refuse(fmt.Errorf("%w: %w", ErrRecordTooLarge, err))
		}
		if errors.Is(err, batch.ErrNoKey) {
			return 0, fmt.Errorf("%w: %w", ErrNoKey, err)
		}
		return 0, l.refuse(fmt.Errorf("%w: %w", ErrInvalidBatch, err))
	}
	if h.IsControl() {
		l.mu.Unlock()
		return 0, l.refuse(ErrControlBatch) // AppendMarker writes them (txn.go)
	}
	oldest, newest := l.dec.Timestamps()
	now := l.o.Now()
	if !o.LogAppendTime { // the broker's time replaces the producer's: nothing to check (as Kafka)
		if err := l.checkTimestamps(oldest, newest, now); err != nil {
			l.mu.Unlock()
			return 0, l.refuse(err)
		}
	}
	if b, h, err = l.prepareBatch(o, b, h, now); err != nil {
		l.mu.Unlock()
		return 0, l.refuse(err)
	}
	first := l.head.Load()
	batch.SetBaseOffset(b, first)
	batch.SetLeaderEpoch(b, LeaderEpoch)
	h.BaseOffset, h.PartitionLeaderEpoch = first, LeaderEpoch
	if err := l.writeLocked(b, h, now); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	end := l.head.Load()
	l.mu.Unlock()
	return first, l.durable(d, end)
}

// MaxRecordBytes is the largest record Append accepts, in the bytes
// recordBytes counts (key, value and headers): Options.MaxRecordBytes
// with its default applied. A caller that checks records one by one
// before batching them (passbook produce) asks here.
func (l *Log) MaxRecordBytes() int { return l.opt().MaxRecordBytes }

// recordBytes is what counts against MaxRecordBytes: key, value, and each
// header's key and value plus batch.HeaderOverhead (see batch.RecordSize).
func recordBytes(r *batch.Record) int { return batch.RecordSize(r) }

// writeLocked writes one batch, whose base offset is already the head, to
// the active segment (rolling first if due), indexes it and publishes it
// to readers. Any failure is sticky.
func (l *Log) writeLocked(b []byte, h batch.Header, now time.Time) error {
	s := l.active()
	aged := l.ageRollDueLocked(s, now.UnixMilli())
	if s.size.Load() > 0 && (s.size.Load()+int64(len(b)) > l.opt().SegmentBytes || aged) {
		var err error
		if s, err = l.rollLocked(); err != nil {
			err = fmt.Errorf("roll segment: %w", err)
			if errors.Is(err, errSyncFailed) {
				return l.fail(err) // sealing the old segment: not retried
			}
			return l.failWrite(err)
		}
		l.roll = rollClock{seg: s, ms: now.UnixMilli()}
	}
	pos := s.size.Load()
	if err := l.writeActive(s, b, pos); err != nil { // mapwrite.go
		return l.failActiveWrite(fmt.Errorf("append to the active segment: %w", err)) // err names the file
	}
	m := s.mark()
	if err := s.indexBatch(pos, h, l.o.IndexInterval); err != nil {
		s.rollback(m)
		return l.failActiveWrite(err)
	}
	if isTxnBatch(h) {
		if err := l.txnWrittenLocked(s, h, b); err != nil {
			s.rollback(m)
			return l.failActiveWrite(err)
		}
	}
	s.markChecked(pos, pos+int64(len(b))) // validated before it was written (checked.go)
	s.size.Store(pos + int64(len(b)))
	s.next.Store(h.NextOffset())
	l.head.Store(h.NextOffset())
	l.notify.broadcast()
	return nil
}

// failActiveWrite records a failed write to the active segment, which a
// retry recovers from by truncating the segment to its last acknowledged
// batch: the mapping goes first, since a file must not shrink under the
// mapping that writes it.
func (l *Log) failActiveWrite(err error) error {
	if uerr := l.active().unmap(false); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return l.failWrite(err)
}

// rollLocked seals the active segment and starts a new one at the head.
func (l *Log) rollLocked() (*segment, error) {
	old := l.active()
	if err := old.unmap(true); err != nil { // mapwrite.go: cut to its data first
		return nil, err
	}
	if err := old.seal(); err != nil {
		return nil, err
	}
	s, err := l.openSegment(l.head.Load(), true)
	if err != nil {
		return nil, err
	}
	s.idx.inMemory = true
	s.next.Store(s.base)
	s.sinceIndex, s.sinceTime = l.o.IndexInterval, l.o.IndexInterval
	if err := l.txnRollLocked(old, s); err != nil { // txnindex.go
		s.drop()
		return nil, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		s.drop()
		return nil, fmt.Errorf("sync directory: %w", err)
	}
	segs := append(slices.Clone(l.segments()), s)
	l.segs.Store(&segs)
	l.o.Logger.Debug("rolled segment", "dir", l.dir, "base", s.base)
	return s, nil
}

// notifier wakes readers waiting for new records. Appenders close the
// current channel only when a reader took it, so an append with nobody
// waiting costs one atomic load.
type notifier struct {
	taken atomic.Bool // a reader holds ch; read without mu on the append path
	mu    sync.Mutex
	ch    chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	n.taken.Store(true)
	return n.ch
}

func (n *notifier) broadcast() {
	if !n.taken.Load() {
		return
	}
	n.mu.Lock()
	if n.taken.Load() {
		close(n.ch)
		n.ch = nil
		n.taken.Store(false)
	}
	n.mu.Unlock()
}
