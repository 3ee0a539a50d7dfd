package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// segment is one .log file with its indexes. Fields other than the atomics
// are touched only by the writer (under Log.mu) or before the segment is
// published.
type segment struct {
	base int64
	path string // of the .log file
	log  vfs.File
	idx  index

	size  atomic.Int64 // bytes readers may read: whole batches only
	next  atomic.Int64 // offset after the last batch
	maxMs atomic.Int64 // newest timestamp, −1 when empty
	refs  atomic.Int32 // 1 for the log, +1 per reader; files close at 0

	// cleaned: the cleaner may have rewritten this segment, so records
	// inside its batches may skip offsets (see the package doc). Set
	// before the segment is published.
	cleaned bool

	firstMs    int64 // timestamp of the first batch, −1 when empty (for age rolls)
	sinceIndex int   // bytes written since the last offset index entry
	sinceTime  int   // bytes written since the last time index entry
	timeMs     int64 // timestamp of the last time index entry
}

func segmentName(base int64, ext string) string { return fmt.Sprintf("%020d%s", base, ext) }

// openSegment opens (creating when create is set) the files of the segment
// with the given base offset. It does not read them.
func openSegment(fsys vfs.FS, dir string, base int64, create bool) (*segment, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	s := &segment{base: base, path: filepath.Join(dir, segmentName(base, ".log")), firstMs: -1, timeMs: -1}
	s.maxMs.Store(-1)
	s.refs.Store(1)
	var err error
	if s.log, err = fsys.OpenFile(s.path, flag, 0o644); err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	if s.idx.offFile, err = fsys.OpenFile(filepath.Join(dir, segmentName(base, ".index")), flag|os.O_CREATE, 0o644); err != nil {
		s.log.Close()
		return nil, fmt.Errorf("open index: %w", err)
	}
	if s.idx.timeFile, err = fsys.OpenFile(filepath.Join(dir, segmentName(base, ".timeindex")), flag|os.O_CREATE, 0o644); err != nil {
		s.log.Close()
		s.idx.offFile.Close()
		return nil, fmt.Errorf("open time index: %w", err)
	}
	return s, nil
}

// acquire takes a reader's reference; it fails once the segment is deleted.
func (s *segment) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and closes the files with the last one.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.log.Close()
		s.idx.close()
	}
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
