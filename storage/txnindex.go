package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// The aborted-transaction index: <base>.txnindex beside a segment's
// .log, Kafka's .txnindex idea, extended with what recovery needs to
// rebuild the open transactions without reading earlier segments.
//
// A segment has a .txnindex once the partition's transactions reach it:
// it is created with the segment at a roll when a transaction is open or
// the segment before had one, or by the segment's first transactional or
// control batch. So the segments with one are the newest ones, from the
// first that held a transactional batch on; a partition that never saw a
// transaction has none, and its appends, reads and Open touch none.
//
// The file is a sequence of 40-byte entries, each
//
//	kind              uint8   'H', 'S', 'A', 'C' or 'O'
//	version           uint8   1
//	producer epoch    int16
//	producer id       int64   (for 'H' and 'C': an entry count)
//	first offset      int64
//	last offset       int64
//	last stable off.  int64
//	CRC-32C           uint32  of the 36 bytes before it
//
// all integers big-endian. It starts with one 'H' (header) whose count
// n is followed by n 'S' entries: the transactions open at the segment's
// base (producer, epoch, first offset). Then, in order of their markers,
// 'A' entries: aborted transactions (producer, first offset, last offset
// = the marker's offset, LSO right after the abort). A clean Close of the
// log appends a 'C' whose count n is followed by n 'O' entries: the open
// transactions at that point, its first offset the head and its last
// offset the .log file's size; Open after a clean shutdown trusts the
// last 'C' only when both still match. Everything here is frozen: it is
// on disk.
//
// The file is a cache of what the .log holds. Open re-reads a segment to
// rebuild its .txnindex when the file is damaged (an entry torn or
// failing its CRC, a header count not met), when it is missing from a
// segment after one that has one, and for the active segment after any
// unclean shutdown (its entries past the last fsync may be gone, and a
// truncated tail drops the entries of the markers it held). A rebuilt
// file is written atomically and fsync'd.
const (
	txnEntrySize = 40
	txnVersion   = 1

	txnHeader  = 'H'
	txnStart   = 'S'
	txnAborted = 'A'
	txnClean   = 'C'
	txnOpenAt  = 'O'
)

func txnIndexPath(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base, ".txnindex"))
}

// segTxn is a segment's transaction bookkeeping.
type segTxn struct {
	// has: the segment has a .txnindex (writer and Open only).
	has bool
	// file is the .txnindex of the active segment, open for appending;
	// nil for closed segments and segments without one.
	file vfs.File
	// written is the bytes of whole entries in file (for a failed
	// write's recovery).
	written int64
	// start is the transactions open at the segment's base.
	start []OpenTxn
	// rebuilt, seen: Open re-read the segment batch by batch (after an
	// unclean shutdown), and found transactional batches in it.
	rebuilt, seen bool
	// aborted is the aborted transactions whose markers the segment
	// holds, in offset order. The writer appends and stores the new
	// slice; readers load it without a lock and read below its length.
	aborted atomic.Pointer[[]AbortedTxn]
}

func (t *segTxn) abortedList() []AbortedTxn {
	if p := t.aborted.Load(); p != nil {
		return *p
	}
	return nil
}

type txnEntry struct {
	kind  byte
	epoch int16
	pid   int64
	first int64
	last  int64
	lso   int64
}

func (e txnEntry) append(dst []byte) []byte {
	var b [txnEntrySize]byte
	b[0], b[1] = e.kind, txnVersion
	binary.BigEndian.PutUint16(b[2:], uint16(e.epoch))
	binary.BigEndian.PutUint64(b[4:], uint64(e.pid))
	binary.BigEndian.PutUint64(b[12:], uint64(e.first))
	binary.BigEndian.PutUint64(b[20:], uint64(e.last))
	binary.BigEndian.PutUint64(b[28:], uint64(e.lso))
	binary.BigEndian.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
	return append(dst, b[:]...)
}

func decodeTxnEntry(b []byte) (txnEntry, error) {
	if got, want := crc32.Checksum(b[:36], castagnoli), binary.BigEndian.Uint32(b[36:]); got != want {
		return txnEntry{}, fmt.Errorf("entry crc is %08x, stored %08x", got, want)
	}
	if b[1] != txnVersion {
		return txnEntry{}, fmt.Errorf("entry version %d", b[1])
	}
	return txnEntry{
		kind:  b[0],
		epoch: int16(binary.BigEndian.Uint16(b[2:])),
		pid:   int64(binary.BigEndian.Uint64(b[4:])),
		first: int64(binary.BigEndian.Uint64(b[12:])),
		last:  int64(binary.BigEndian.Uint64(b[20:])),
		lso:   int64(binary.BigEndian.Uint64(b[28:])),
	}, nil
}

// txnFile is a parsed .txnindex.
type txnFile struct {
	start   []OpenTxn
	aborted []AbortedTxn
	// clean is the last complete 'C' group: the open transactions at
	// offset cleanNext, with the .log cleanSize bytes long.
	clean                *[]OpenTxn
	cleanNext, cleanSize int64
}

// parseTxnFile parses a .txnindex's bytes. Any damage is an error: the
// caller rebuilds the file from the segment.
func parseTxnFile(b []byte, base int64) (txnFile, error) {
	var f txnFile
	if len(b)%txnEntrySize != 0 {
		return f, fmt.Errorf("%d bytes: not whole %d-byte entries", len(b), txnEntrySize)
	}
	n := len(b) / txnEntrySize
	entries := make([]txnEntry, n)
	for i := range n {
		e, err := decodeTxnEntry(b[i*txnEntrySize:])
		if err != nil {
			return f, fmt.Errorf("entry %d: %w", i, err)
		}
		entries[i] = e
	}
	if n == 0 || entries[0].kind != txnHeader || entries[0].pid < 0 || entries[0].pid > int64(n-1) {
		return f, errors.New("no valid header entry")
	}
	i := 1
	for range entries[0].pid {
		e := entries[i]
		if e.kind != txnStart || e.first >= base || e.pid < 0 {
			return f, fmt.Errorf("entry %d: not an open transaction before the segment's base", i)
		}
		f.start = append(f.start, OpenTxn{ProducerID: e.pid, ProducerEpoch: e.epoch, FirstOffset: e.first})
		i++
	}
	for i < n {
		e := entries[i]
		i++
		switch e.kind {
		case txnAborted:
			if e.last < base || e.first > e.last || e.pid < 0 {
				return f, fmt.Errorf("entry %d: aborted transaction [%d, %d] outside the segment", i-1, e.first, e.last)
			}
			f.aborted = append(f.aborted, AbortedTxn{ProducerID: e.pid, FirstOffset: e.first, LastOffset: e.last, LastStableOffset: e.lso})
		case txnClean:
			if e.pid < 0 || e.pid > int64(n-i) {
				return f, fmt.Errorf("entry %d: clean-close count %d past the file's end", i-1, e.pid)
			}
			open := []OpenTxn{}
			for range e.pid {
				o := entries[i]
				if o.kind != txnOpenAt {
					return f, fmt.Errorf("entry %d: kind %q inside a clean-close group", i, o.kind)
				}
				open = append(open, OpenTxn{ProducerID: o.pid, ProducerEpoch: o.epoch, FirstOffset: o.first})
				i++
			}
			f.clean, f.cleanNext, f.cleanSize = &open, e.first, e.last
		default:
			return f, fmt.Errorf("entry %d: unexpected kind %q", i-1, e.kind)
		}
	}
	return f, nil
}

// encodeTxnFile is the .txnindex of a segment whose transactions open
// at its base are start and whose aborted transactions are aborted.
func encodeTxnFile(start []OpenTxn, aborted []AbortedTxn) []byte {
	b := txnEntry{kind: txnHeader, pid: int64(len(start)), first: -1, last: -1, lso: -1}.append(nil)
	for _, o := range start {
		b = txnEntry{kind: txnStart, epoch: o.ProducerEpoch, pid: o.ProducerID, first: o.FirstOffset, last: -1, lso: -1}.append(b)
	}
	for _, a := range aborted {
		b = txnEntry{kind: txnAborted, pid: a.ProducerID, first: a.FirstOffset, last: a.LastOffset, lso: a.LastStableOffset}.append(b)
	}
	return b
}

// createTxnFile gives the active segment s a .txnindex holding start,
// open for appending. It is not fsync'd: the active segment's file is
// rebuilt after a crash, and sealed with the segment.
func (l *Log) createTxnFile(s *segment, start []OpenTxn) error {
	f, err := l.fs.OpenFile(txnIndexPath(l.dir, s.base), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create transaction index: %w", err)
	}
	b := encodeTxnFile(start, nil)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write transaction index: %w", err)
	}
	s.txn.file, s.txn.has, s.txn.written, s.txn.start = f, true, int64(len(b)), start
	return nil
}

// appendTxnEntries appends entries to the active segment's .txnindex.
// Its file is open unless a roll that failed after sealing the segment
// closed it (the segment stays active): then it is opened again.
func (l *Log) appendTxnEntries(s *segment, es ...txnEntry) error {
	if s.txn.file == nil {
		f, err := l.fs.OpenFile(txnIndexPath(l.dir, s.base), os.O_RDWR|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open transaction index: %w", err)
		}
		// Only what was written whole (a failed write may have left a
		// part).
		if err := truncateTo(f, s.txn.written); err != nil {
			f.Close()
			return err
		}
		s.txn.file = f
	}
	var b []byte
	for _, e := range es {
		b = e.append(b)
	}
	if _, err := s.txn.file.Write(b); err != nil {
		return fmt.Errorf("write transaction index: %w", err)
	}
	s.txn.written += int64(len(b))
	return nil
}

// sealTxn fsyncs and closes a segment's .txnindex as it stops being
// active.
func (s *segment) sealTxn() error {
	if s.txn.file == nil {
		return nil
	}
	if err := s.txn.file.Sync(); err != nil {
		return fmt.Errorf("sync transaction index: %w: %w", errSyncFailed, err)
	}
	err := s.txn.file.Close()
	s.txn.file = nil
	return err
}

// txnWrittenLocked is the writer's step for a transactional or control
// batch h (bytes b) just written at the active segment s: it indexes an
// abort and updates the open transactions, before the head moves past
// the batch. An error is a failed write (the caller makes it sticky); the
// state is then as before the batch.
func (l *Log) txnWrittenLocked(s *segment, h batch.Header, b []byte) error {
	eff, err := txnPeek(l.txn.open, h, b)
	if err != nil {
		return err
	}
	if err := l.txnMarkLocked(s.base); err != nil {
		return err
	}
	if !s.txn.has {
		// The segment's first transactional batch: the transactions open
		// at its base are none (a roll with any open creates the file).
		if err := l.createTxnFile(s, nil); err != nil {
			return err
		}
	}
	if eff.aborted != nil {
		a := *eff.aborted
		if err := l.appendTxnEntries(s, txnEntry{kind: txnAborted, pid: a.ProducerID, first: a.FirstOffset, last: a.LastOffset, lso: a.LastStableOffset}); err != nil {
			return err
		}
		// Appending in place is safe: readers read only below the
		// length they loaded, and the writer alone appends.
		list := append(s.txn.abortedList(), a)
		s.txn.aborted.Store(&list)
	}
	l.txn.mu.Lock()
	if l.txn.open == nil {
		l.txn.open = map[int64]OpenTxn{}
	}
	txnCommit(l.txn.open, eff)
	l.txn.recomputeLocked()
	l.txn.mu.Unlock()
	return nil
}

// txnRollLocked prepares the segment s, just created by a roll and not
// yet published, for the transactions: it gets a .txnindex, fsync'd,
// when a transaction is open or the segment before it had one.
func (l *Log) txnRollLocked(old, s *segment) error {
	open := l.txn.snapshot()
	if len(open) == 0 && !old.txn.has {
		return nil
	}
	if err := l.createTxnFile(s, open); err != nil {
		return err
	}
	if err := s.txn.file.Sync(); err != nil {
		return fmt.Errorf("sync transaction index: %w: %w", errSyncFailed, err)
	}
	return nil
}

// txnCloseLocked records the open transactions at a clean Close in the
// active segment's .txnindex, and fsyncs it, so that the next Open need
// not re-read the segment.
func (l *Log) txnCloseLocked(s *segment) error {
	if !s.txn.has {
		return nil
	}
	open := l.txn.snapshot()
	es := []txnEntry{{kind: txnClean, pid: int64(len(open)), first: l.head.Load(), last: s.size.Load(), lso: -1}}
	for _, o := range open {
		es = append(es, txnEntry{kind: txnOpenAt, epoch: o.ProducerEpoch, pid: o.ProducerID, first: o.FirstOffset, last: -1, lso: -1})
	}
	if err := l.appendTxnEntries(s, es...); err != nil {
		return err
	}
	return s.sealTxn()
}

// txnRetryLocked puts the active segment's .txnindex back as its last
// acknowledged append left it: its whole entries only.
func (s *segment) txnRetryLocked() error {
	if s.txn.file == nil {
		return nil
	}
	return truncateTo(s.txn.file, s.txn.written)
}

// TXN marks a partition whose transactions reached its segments: 17
// bytes, magic "PBTX" (4), version 1 (1), the base offset B of the
// segment that held the partition's first transactional batch (8), and a
// CRC-32C of the preceding bytes (4). Every segment from the one holding
// B on has a .txnindex, so Open tells a missing one from a segment that
// never had one. It is written once, atomically, with the partition's
// first transactional or control batch; Open writes it again if it is
// missing while .txnindex files are there. Frozen: on disk.
const txnMarkFile = "TXN"

func encodeTxnMark(base int64) []byte {
	b := append([]byte("PBTX"), 1)
	b = binary.BigEndian.AppendUint64(b, uint64(base))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeTxnMark(b []byte) (int64, error) {
	if len(b) != 17 || string(b[:4]) != "PBTX" || b[4] != 1 {
		return 0, errors.New("not a TXN file of version 1")
	}
	if crc32.Checksum(b[:13], castagnoli) != binary.BigEndian.Uint32(b[13:]) {
		return 0, errors.New("TXN file fails its CRC")
	}
	return int64(binary.BigEndian.Uint64(b[5:])), nil
}

// txnMarkLocked writes TXN for a partition whose first transactional
// batch goes to the segment with base offset base.
func (l *Log) txnMarkLocked(base int64) error {
	if l.txn.marked {
		return nil
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, txnMarkFile, encodeTxnMark(base)); err != nil {
		return fmt.Errorf("write %s: %w", txnMarkFile, err)
	}
	l.txn.marked, l.txn.markBase = true, base
	return nil
}
