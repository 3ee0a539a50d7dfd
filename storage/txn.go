package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// Transactions, as Kafka stores them.
//
// A transactional producer's batches carry attribute bit 0x10
// (batch.AttrTransactional) and its producer id and epoch. The first
// transactional batch of a producer that has no open transaction on the
// partition opens one there, at that batch's base offset; the
// transaction stays open until the coordinator writes a marker for the
// producer: a control batch (attributes 0x30, transactional and control)
// of one control record, whose key is version 0 (int16) and type
// (int16: 0 abort, 1 commit) and whose value is version 0 (int16) and the
// coordinator epoch (int32). A marker takes an offset, as in Kafka:
// readers skip it.
//
// The last stable offset (LSO) is the first offset of the oldest open
// transaction, or the head when none is open: a read_committed reader
// reads below it only. An aborted transaction is remembered (producer id,
// first offset, last offset = its marker's offset, and the LSO just
// after the abort, as Kafka's .txnindex entry) in the segment that holds
// its marker, so that a read_committed reader of a range can drop the
// aborted records of it; a partition that never aborted a transaction
// keeps no such list and pays nothing for it (see AbortedTxns).
//
// What is durable when: a transactional batch and a marker are appended
// like any batch (in the operating system when the call returns; fsync'd
// when it returns under Fsync durability, see AppendMarker). The open
// transactions and the aborted list are state derived from the batches:
// the .txnindex file of a segment (txnindex.go) caches them and is never
// trusted over the .log file. After a crash the active segment is re-read
// batch by batch and its .txnindex rewritten from what it holds; a torn
// tail takes its transactional batches and markers with it, and so their
// effect. A closed segment's .txnindex was fsync'd with it when it was
// sealed; a missing or damaged one is rebuilt from the segment.

// ControlType is what a control record says (the type in its key).
type ControlType int16

// Control record types, as Kafka's ControlRecordType. Frozen: on disk.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "abort"
	case ControlCommit:
		return "commit"
	}
	return fmt.Sprintf("control type %d", int16(t))
}

// Marker is what a transaction coordinator writes to end a producer's
// transaction on a partition.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Type             ControlType // ControlCommit or ControlAbort
	CoordinatorEpoch int32
	// Timestamp is the marker's timestamp; zero means the log's clock.
	Timestamp time.Time
}

// OpenTxn is an ongoing transaction on a partition.
type OpenTxn struct {
	ProducerID    int64
	ProducerEpoch int16
	FirstOffset   int64 // base offset of its first batch on this partition
}

// AbortedTxn is an aborted transaction: what a read_committed reader
// needs to drop its records (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64 // the transaction's first offset on this partition
	LastOffset  int64 // the offset of its abort marker
	// LastStableOffset is the LSO right after the abort: every
	// transaction aborted later has records only at or past it.
	LastStableOffset int64
}

// ControlRecord is a decoded control record.
type ControlRecord struct {
	Type             ControlType
	CoordinatorEpoch int32
}

var (
	// ErrProducerFenced reports a marker whose producer epoch is older
	// than the epoch of the producer's open transaction. Kafka answers
	// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for old clients).
	ErrProducerFenced = errors.New("storage: producer epoch is stale")
	// ErrControlBatch reports a control batch given to AppendBatch: only
	// AppendMarker writes them. Kafka answers INVALID_RECORD.
	ErrControlBatch = errors.New("storage: control batches are written by AppendMarker only")
	// ErrInvalidMarker reports a Marker that cannot be written (no
	// producer id, an unknown control type).
	ErrInvalidMarker = errors.New("storage: invalid transaction marker")
)

// noOpenTxn is txnState.firstOpen when no transaction is open.
const noOpenTxn = math.MaxInt64

// txnState is a log's transaction bookkeeping. The writer changes it
// under Log.mu; readers load firstOpen and the aborted lists without a
// lock.
type txnState struct {
	// firstOpen is the first offset of the oldest open transaction, or
	// noOpenTxn. It is set before the head moves past a transactional
	// batch, so no reader sees the head past an open transaction's start
	// without the LSO held back by it.
	firstOpen atomic.Int64
	mu        sync.Mutex // guards open for OpenTxns; the writer also holds Log.mu
	open      map[int64]OpenTxn

	// marked: TXN is written; markBase is what it says (txnindex.go).
	// Writer and Open only.
	marked   bool
	markBase int64
}

func (t *txnState) init() { t.firstOpen.Store(noOpenTxn) }

// recomputeLocked sets firstOpen from open. Callers hold t.mu.
func (t *txnState) recomputeLocked() {
	first := int64(noOpenTxn)
	for _, o := range t.open {
		first = min(first, o.FirstOffset)
	}
	t.firstOpen.Store(first)
}

// snapshot returns the open transactions, oldest first.
func (t *txnState) snapshot() []OpenTxn {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]OpenTxn, 0, len(t.open))
	for _, o := range t.open {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OpenTxn) int {
		if a.FirstOffset != b.FirstOffset {
			return cmpInt64(a.FirstOffset, b.FirstOffset)
		}
		return cmpInt64(a.ProducerID, b.ProducerID)
	})
	return out
}

// set replaces the open transactions (recovery).
func (t *txnState) set(open []OpenTxn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = nil
	if len(open) > 0 {
		t.open = make(map[int64]OpenTxn, len(open))
		for _, o := range open {
			t.open[o.ProducerID] = o
		}
	}
	t.recomputeLocked()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LastStableOffset is the partition's last stable offset: the first
// offset of its oldest open transaction, or the head when none is open.
// A read_committed reader reads below it only.
func (l *Log) LastStableOffset() int64 {
	// firstOpen is read after the head: a transactional batch sets
	// firstOpen before it moves the head, so a head that includes it
	// comes with a firstOpen that holds it back.
	head := l.head.Load()
	return min(head, l.txn.firstOpen.Load())
}

// OpenTxns returns the partition's ongoing transactions, oldest first.
func (l *Log) OpenTxns() []OpenTxn { return l.txn.snapshot() }

// AppendMarker writes a commit or abort marker for m's producer: a
// control batch, which takes the next offset (returned). It ends the
// producer's open transaction on the partition, if it has one, moving
// the LSO; an abort is remembered in the aborted-transaction index. A
// marker for a producer without an open transaction is written all the
// same (as Kafka does: a transaction may have added the partition and
// sent nothing to it) and changes nothing. It returns once the marker
// meets durability d (DefaultDurability meaning the log's
// Options.Durability, Fsync meaning fsync'd), so a coordinator that
// passes Fsync (or DefaultDurability on an fsync'd partition) may count
// the transaction complete on this partition when it returns. A marker
// whose epoch is older than the open transaction's fails with
// ErrProducerFenced and writes nothing; write errors are the log's
// (ErrUnwritable, ErrClosed).
func (l *Log) AppendMarker(m Marker, d Durability) (int64, error) {
	if m.ProducerID < 0 || m.ProducerEpoch < 0 || (m.Type != ControlAbort && m.Type != ControlCommit) {
		return 0, fmt.Errorf("%w: producer %d epoch %d, %v", ErrInvalidMarker, m.ProducerID, m.ProducerEpoch, m.Type)
	}
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if o, ok := l.txn.open[m.ProducerID]; ok && m.ProducerEpoch < o.ProducerEpoch {
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: marker epoch %d, producer %d's transaction is at epoch %d", ErrProducerFenced, m.ProducerEpoch, m.ProducerID, o.ProducerEpoch)
	}
	now := l.o.Now()
	ts := m.Timestamp
	if ts.IsZero() {
		ts = now
	}
	first := l.head.Load()
	var err error
	l.buf, err = appendControlBatch(l.buf[:0], first, m, ts)
	if err == nil {
		var h batch.Header
		if h, err = batch.ParseHeader(l.buf); err == nil {
			err = l.writeLocked(l.buf, h, now)
		}
	}
	if err != nil {
		l.mu.Unlock()
		return 0, err
	}
	end := l.head.Load()
	l.mu.Unlock()
	return first, l.durable(d, end)
}

// Control records' frozen layout (Kafka's ControlRecordUtils).
const (
	controlKeySize   = 4 // version int16 (0), type int16
	controlValueSize = 6 // version int16 (0), coordinator epoch int32
)

// appendControlBatch appends to dst a control batch at offset base for
// m: one record, transactional and control attributes, m's producer id
// and epoch, no sequence (−1).
func appendControlBatch(dst []byte, base int64, m Marker, ts time.Time) ([]byte, error) {
	key := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(key[2:], uint16(m.Type))
	val := make([]byte, controlValueSize)
	binary.BigEndian.PutUint32(val[2:], uint32(m.CoordinatorEpoch))
	n := len(dst)
	dst, err := batch.Append(dst, []batch.Record{{Key: key, Value: val, Timestamp: ts}},
		batch.Options{BaseOffset: base, Idempotent: true, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, BaseSequence: -1, Now: ts})
	if err != nil {
		return dst, err
	}
	b := dst[n:]
	const offAttributes, offCRC = 21, 17 // batch's frozen header layout
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | batch.AttrTransactional | batch.AttrControl
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst, nil
}

// ParseControlRecord decodes a control record's key and value. Keys of
// a version other than 0 are refused, as are values too short; Kafka
// readers ignore unknown types, so an unknown type decodes.
func ParseControlRecord(key, value []byte) (ControlRecord, error) {
	if len(key) < controlKeySize {
		return ControlRecord{}, fmt.Errorf("control record key has %d bytes, want %d", len(key), controlKeySize)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return ControlRecord{}, fmt.Errorf("control record key version %d, want 0", v)
	}
	cr := ControlRecord{Type: ControlType(int16(binary.BigEndian.Uint16(key[2:])))}
	if len(value) >= controlValueSize {
		cr.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	}
	return cr, nil
}

// ControlBatchType decodes the type of the control batch b (whole, with
// its header): the type of its first record's key.
func ControlBatchType(b []byte) (ControlRecord, error) {
	for rec, err := range batch.Records(b) {
		if err != nil {
			return ControlRecord{}, err
		}
		return ParseControlRecord(rec.Key, rec.Value)
	}
	return ControlRecord{}, errors.New("control batch holds no record")
}

// isTxnBatch reports whether h is a transactional or control batch,
// which change the transaction state.
func isTxnBatch(h batch.Header) bool {
	return h.Attributes&(batch.AttrTransactional|batch.AttrControl) != 0 && h.ProducerID >= 0
}

// txnEffect is what one batch does to the open transactions.
type txnEffect struct {
	opens   *OpenTxn    // a transaction opened
	closes  int64       // producer whose transaction a marker closed, −1 for none
	aborted *AbortedTxn // the abort to index
}

// txnPeek computes the effect of the batch h (bytes b) on open, without
// changing it, for the writer and for recovery.
func txnPeek(open map[int64]OpenTxn, h batch.Header, b []byte) (txnEffect, error) {
	eff := txnEffect{closes: -1}
	if !isTxnBatch(h) {
		return eff, nil
	}
	if !h.IsControl() {
		if _, ok := open[h.ProducerID]; !ok {
			eff.opens = &OpenTxn{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, FirstOffset: h.BaseOffset}
		}
		return eff, nil
	}
	o, ok := open[h.ProducerID]
	if !ok {
		return eff, nil
	}
	cr, err := ControlBatchType(b)
	if err != nil || cr.Type != ControlAbort && cr.Type != ControlCommit {
		// Unknown control types are ignored, as in Kafka; so is a
		// control record that does not decode (AppendMarker never writes
		// one, and AppendBatch takes no control batch): it ends nothing.
		return eff, nil
	}
	eff.closes = h.ProducerID
	if cr.Type == ControlAbort {
		// Kafka's lastStableOffset(completedTxn): the oldest other open
		// transaction's first offset, else the offset after the marker.
		lso := h.NextOffset()
		for pid, other := range open {
			if pid != h.ProducerID {
				lso = min(lso, other.FirstOffset)
			}
		}
		eff.aborted = &AbortedTxn{ProducerID: h.ProducerID, FirstOffset: o.FirstOffset, LastOffset: h.LastOffset(), LastStableOffset: lso}
	}
	return eff, nil
}

// txnCommit applies eff to open.
func txnCommit(open map[int64]OpenTxn, eff txnEffect) {
	if eff.opens != nil {
		open[eff.opens.ProducerID] = *eff.opens
	}
	if eff.closes >= 0 {
		delete(open, eff.closes)
	}
}
