package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// segment is one .log file with its indexes. Fields other than the atomics
// are touched only by the writer (under Log.mu) or before the segment is
// published.
type segment struct {
	base int64
	path string   // of the .log file
	log  vfs.File // files[0]
	idx  index    // its offFile and timeFile are files[1] and files[2]
	// files are the log, offset index and time index files, opened
	// through the log's FileCache.
	files [3]*cachedFile

	size  atomic.Int64 // bytes readers may read: whole batches only
	next  atomic.Int64 // offset after the last batch
	maxMs atomic.Int64 // newest timestamp, −1 when empty
	refs  atomic.Int32 // 1 for the log, +1 per reader; files close at 0
	pinMu sync.Mutex   // makes acquire, release and drop one step each with their pins

	// checked: the log file's bytes [0, checked) are whole batches known
	// good since open — written by this process or CRC-checked by a
	// reader — which fetches send without checking again (checked.go).
	checked atomic.Int64

	// cleaned: the cleaner may have rewritten this segment, so records
	// inside its batches may skip offsets (see the package doc). Set
	// before the segment is published.
	cleaned bool

	txn segTxn // transactions (txnindex.go)

	// mw is the active segment's mapping (mapwrite.go), nil when it is
	// written with write(2) or not yet mapped; noMap says it is written
	// with write(2). Under Log.mu.
	mw    *mapWriter
	noMap bool

	firstMs    int64 // timestamp of the first batch, −1 when empty (for age rolls)
	sinceIndex int   // bytes written since the last offset index entry
	sinceTime  int   // bytes written since the last time index entry
	timeMs     int64 // timestamp of the last time index entry
}

func segmentName(base int64, ext string) string { return fmt.Sprintf("%020d%s", base, ext) }

// openSegment opens (creating when create is set) the files of the segment
// with the given base offset, through the log's file cache. It does not
// read them.
func (l *Log) openSegment(base int64, create bool) (*segment, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	s := &segment{base: base, path: filepath.Join(l.dir, segmentName(base, ".log")), firstMs: -1, timeMs: -1}
	s.maxMs.Store(-1)
	s.refs.Store(1)
	var err error
	if s.files[0], err = l.files.openFile(l.fs, s.path, flag, 0o644); err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	if s.files[1], err = l.files.openFile(l.fs, filepath.Join(l.dir, segmentName(base, ".index")), flag|os.O_CREATE, 0o644); err != nil {
		s.files[0].Close()
		return nil, fmt.Errorf("open index: %w", err)
	}
	if s.files[2], err = l.files.openFile(l.fs, filepath.Join(l.dir, segmentName(base, ".timeindex")), flag|os.O_CREATE, 0o644); err != nil {
		s.files[0].Close()
		s.files[1].Close()
		return nil, fmt.Errorf("open time index: %w", err)
	}
	s.log, s.idx.offFile, s.idx.timeFile = s.files[0], s.files[1], s.files[2]
	return s, nil
}

// acquire takes a reader's reference, which pins the segment's files open
// (see FileCache); it fails once the segment is deleted.
func (s *segment) acquire() bool {
	// Taking the reference and pinning are one step against drop: a
	// segment that retention deletes is unlinked only after drop, so the
	// files a reader pins are there to open.
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.refs.Load() <= 0 {
		return false
	}
	s.refs.Add(1)
	for _, f := range s.files {
		if f != nil {
			f.pin()
		}
	}
	return true
}

// release drops a reader's reference, unpinning its files, and closes
// the files with the last reference. The log's own reference, which pins
// nothing, goes with drop.
func (s *segment) release() {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.refs.Add(-1) == 0 {
		s.closeFiles()
		return
	}
	for _, f := range s.files {
		if f != nil {
			f.unpin()
		}
	}
}

// drop releases the log's own reference, which pins nothing: for a
// segment leaving the log while readers may still hold it. Once it
// returns, no reader can acquire the segment who has not pinned its files.
func (s *segment) drop() {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.refs.Add(-1) == 0 {
		s.closeFiles()
	}
}

func (s *segment) closeFiles() {
	s.unmap(false) // a log closed after a failure: nothing to truncate to
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	if s.txn.file != nil {
		s.txn.file.Close()
		s.txn.file = nil
	}
}

// holdOpen keeps the segment's files open until it is closed, for a
// segment whose files are about to be replaced or removed by name while
// readers may still acquire it.
func (s *segment) holdOpen() error {
	for _, f := range s.files {
		if f == nil {
			continue
		}
		if err := f.holdOpen(); err != nil {
			return err
		}
	}
	return nil
}

// corrupt wraps err as a CorruptError at pos in the segment's log file.
func (s *segment) corrupt(pos int64, err error) error {
	return &CorruptError{File: s.path, Pos: pos, Err: err}
}

// batchReader reads whole batches from a segment file sequentially,
// through a buffer, never past limit.
type batchReader struct {
	f     vfs.File
	pos   int64 // file position of the next batch
	limit int64
	buf   []byte
	lo    int // buf[lo:hi] holds file bytes from bufAt
	hi    int
	bufAt int64 // file position of buf[0]
}

const readChunk = 1 << 20

func (r *batchReader) reset(f vfs.File, pos, limit int64) {
	r.f, r.pos, r.limit = f, pos, limit
	r.lo, r.hi, r.bufAt = 0, 0, pos
}

// fill makes at least n bytes from r.pos available in the buffer, reading
// ahead up to a chunk. It returns io.ErrUnexpectedEOF when the limit
// comes first.
func (r *batchReader) fill(n int) error {
	if r.pos+int64(n) > r.limit {
		return io.ErrUnexpectedEOF
	}
	if r.bufAt+int64(r.hi) >= r.pos+int64(n) && r.pos >= r.bufAt {
		return nil
	}
	want := max(n, readChunk)
	if rest := r.limit - r.pos; int64(want) > rest {
		want = int(rest)
	}
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	m, err := r.f.ReadAt(r.buf, r.pos)
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	r.bufAt, r.lo, r.hi = r.pos, 0, m
	return nil
}

// next returns the batch at the current position without checking its
// CRC, and advances past it. At the limit it returns io.EOF; a batch cut
// short by the limit returns batch.ErrShort.
func (r *batchReader) next() (pos int64, b []byte, h batch.Header, err error) {
	pos = r.pos
	if pos >= r.limit {
		return pos, nil, h, io.EOF
	}
	if err := r.fill(batch.HeaderSize); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return pos, nil, h, fmt.Errorf("%w: %d bytes left, header needs %d", batch.ErrShort, r.limit-pos, batch.HeaderSize)
		}
		return pos, nil, h, err
	}
	off := int(pos - r.bufAt)
	h, err = batch.ParseHeader(r.buf[off:r.hi])
	if err != nil {
		return pos, nil, h, err
	}
	size := h.Size()
	if err := r.fill(size); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return pos, nil, h, fmt.Errorf("%w: %d bytes left, batch needs %d", batch.ErrShort, r.limit-pos, size)
		}
		return pos, nil, h, err
	}
	off = int(pos - r.bufAt)
	r.pos += int64(size)
	return pos, r.buf[off : off+size], h, nil
}

// checkTimeIndex checks the ends of a loaded segment's time index, as
// index.load does for the offset index: the first batch (header first),
// if it has a timestamp, made the first entry, and the entries are in
// order and inside the segment. A damaged time index returns an error; the
// caller rebuilds it.
func (s *segment) checkTimeIndex(first batch.Header, next int64) error {
	if s.idx.timeCount == 0 {
		if first.MaxTimestamp >= 0 {
			return errors.New("time index is empty")
		}
		return nil
	}
	e0, err := s.idx.timeAt(0)
	if err != nil {
		return err
	}
	last, err := s.idx.timeAt(s.idx.timeCount - 1)
	if err != nil {
		return err
	}
	if first.MaxTimestamp >= 0 && (e0.rel != 0 || e0.ms != first.MaxTimestamp) ||
		last.ms < e0.ms || last.rel < e0.rel || int64(last.rel) >= next-s.base {
		return errors.New("time index entries out of order or past the segment end")
	}
	return nil
}

// indexMark is a segment's index bookkeeping before a write, to roll
// back to if the write fails before its batch is published.
type indexMark struct {
	offs, times           int
	sinceIndex, sinceTime int
	firstMs, timeMs       int64
	maxMs                 int64
}

func (s *segment) mark() indexMark {
	return indexMark{offs: s.idx.offLen(), times: s.idx.timeLen(), sinceIndex: s.sinceIndex, sinceTime: s.sinceTime,
		firstMs: s.firstMs, timeMs: s.timeMs, maxMs: s.maxMs.Load()}
}

// rollback forgets what indexing a batch that was never published
// recorded: its index entries (which the retry truncates from the files
// too) and its timestamps. Without it, the batch written again at the
// same place after the retry got a second entry there, and verify
// found the offset index out of order (cmd/torture, diskerror).
func (s *segment) rollback(m indexMark) {
	s.idx.cut(m.offs, m.times)
	s.sinceIndex, s.sinceTime, s.firstMs, s.timeMs = m.sinceIndex, m.sinceTime, m.firstMs, m.timeMs
	s.maxMs.Store(m.maxMs)
}

// indexBatch records a batch just written (or re-read) at pos in the
// segment's bookkeeping and sparse indexes.
func (s *segment) indexBatch(pos int64, h batch.Header, interval int) error {
	rel := uint32(h.BaseOffset - s.base)
	if s.sinceIndex >= interval {
		if err := s.idx.appendOffset(offsetEntry{rel: rel, pos: uint32(pos)}); err != nil {
			return err
		}
		s.sinceIndex = 0
	}
	s.sinceIndex += h.Size()
	if s.firstMs < 0 {
		s.firstMs = h.BaseTimestamp
	}
	if h.MaxTimestamp > s.maxMs.Load() {
		s.maxMs.Store(h.MaxTimestamp)
		if s.sinceTime >= interval {
			if err := s.idx.appendTime(timeEntry{ms: h.MaxTimestamp, rel: rel}); err != nil {
				return err
			}
			s.timeMs = h.MaxTimestamp
			s.sinceTime = 0
		}
	}
	s.sinceTime += h.Size()
	return nil
}

// seal finishes a segment that stops being active: a final time index
// entry so lookups by time see its newest timestamp, and an fsync of all
// three files.
func (s *segment) seal() error {
	if err := s.finishTimeIndex(); err != nil {
		return err
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("sync segment: %w: %w", errSyncFailed, err)
	}
	if err := s.idx.sync(); err != nil {
		return fmt.Errorf("%w: %w", errSyncFailed, err)
	}
	if err := s.sealTxn(); err != nil {
		return err
	}
	s.idx.dropMemory()
	return nil
}

// errSyncFailed marks a failed fsync. It is never retried: after one the
// kernel may have dropped the dirty pages it could not write, so a second
// fsync can succeed over data that is gone; only a reopen, which re-reads
// the files, may take appends again.
var errSyncFailed = errors.New("fsync failed")

// finishTimeIndex appends a time index entry for the segment's newest
// timestamp unless the last entry already holds it: a segment loaded from
// its index files takes its newest timestamp (for retention by age and
// OffsetForTime) from the last entry.
func (s *segment) finishTimeIndex() error {
	if m := s.maxMs.Load(); m > s.timeMs && m >= 0 {
		rel := uint32(s.next.Load() - 1 - s.base)
		if err := s.idx.appendTime(timeEntry{ms: m, rel: rel}); err != nil {
			return err
		}
		s.timeMs = m
	}
	return nil
}
