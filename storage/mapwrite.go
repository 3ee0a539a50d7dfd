package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/passbook-log/passbook/vfs"
)

// The mapped write path (issue 21, item 5). Where the file system can
// map files (vfs.MapFS: the OS on Linux, vfs.MemFS, and the fault and
// full-disk wrappers over them), the active segment is written through a
// shared memory mapping: an append is a copy into the page cache under
// the log's lock, not a write(2). Elsewhere, or on a file system wrapped
// by vfs.WithoutMapping, every batch is one write(2), as before.
//
// A mapping cannot grow a file, so the writer allocates ahead of the
// data (fallocate: zeros whose disk space is reserved, so a store never
// meets a full disk), in steps that grow with the segment, and asks a
// goroutine to fault the next pages in (vfs.MappedFile.Populate) so that
// the first touch of a fresh page is not paid under the lock. The file's
// length is then no longer the end of its data:
//
//   - Readers never look past a segment's published size (segment.size),
//     which moves only after the whole batch is copied, exactly as with
//     write(2); they read with pread, which sees the mapping's bytes (a
//     shared mapping's pages are the page cache's).
//   - A roll and a clean Close unmap the segment and truncate it to its
//     data before the fsync that seals it, so a closed segment, and the
//     active one after a clean shutdown, are exactly their batches (and
//     a clean Open trusts the checkpoint's position as the file's end).
//   - A killed process leaves the batches it copied (the page cache
//     keeps a shared mapping's dirty pages) followed by zeros up to the
//     allocated length; a power loss leaves the fsync'd batches and any
//     of the later pages, in any order, each as written or as zeros.
//     Either way the last shutdown was not clean, so Open re-validates
//     the active segment batch by batch (CRC and offset chain) and ends
//     it at the first bytes that are not the next batch: zeros are never
//     a batch (a zero length is short of any header), and stale bytes
//     (a page the disk kept from before) fail the CRC or the offset
//     chain, so preallocated bytes are never taken for data. What it
//     cuts past the checkpoint is a torn tail, as with write(2), except
//     allocated space the writer never wrote (allocatedTail: zeros to an
//     allocation boundary), which a killed process leaves after every
//     batch: Open cuts it without counting torn bytes, and Verify notes
//     it rather than report a problem.
//   - A failed write (a fault injected into the copy, a failed allocation
//     on a full disk) unmaps before the retry truncates the segment back
//     to its last acknowledged batch, and the next append maps it again.
//
// fdatasync of the file (the group commit's File.Sync) writes back the
// mapping's dirty pages with the file's other dirty pages, so the
// durability of Fsync and Interval appends is unchanged.

// mapWriter is the mapping of an active segment (segment.mw). Under
// Log.mu.
type mapWriter struct {
	m vfs.MappedFile
	// populated is how far Populate was asked to prepare pages;
	// released, up to where Release dropped them again.
	populated  int64
	released   int64
	populating sync.WaitGroup // the goroutine running Populate, if any
	done       chan struct{}  // closed by that goroutine when it ends
}

const (
	// allocMin and allocMax bound the step by which the writer extends
	// a mapped segment: an eighth of its length so far, so a killed
	// process leaves at most allocMax (or an eighth) of zeros.
	allocMin = 64 << 10
	allocMax = 8 << 20
	// populateAhead is how far past the data the writer keeps space
	// allocated and pages prepared (MADV_POPULATE_WRITE dirties them, so
	// the next fsync writes up to this many zeros once), once the
	// segment holds that much; aheadMin is the least (see ahead).
	populateAhead = 512 << 10
	aheadMin      = 8 << 10
	// unmappedBatch is the batch size from which a segment is written
	// with write(2) (see writeActive).
	unmappedBatch = 32 << 10
	// releaseStep is how much written data the mapping keeps resident
	// before it releases it (see writeActive).
	releaseStep = 4 << 20
)

// writeActive writes the batch b at byte pos of the active segment s:
// through the mapping where there is one, with write(2) otherwise.
func (l *Log) writeActive(s *segment, b []byte, pos int64) error {
	if len(b) >= unmappedBatch && !s.noMap {
		// A batch this big pays its system call over many records, and
		// fdatasync of fallocate'd space (the unwritten extents the
		// file system converts) costs more than of appended blocks:
		// 1,000-record batches fsync'd each ran at 0.5–0.66× of
		// write(2) mapped. The segment goes on with write(2), cut back
		// to its data first.
		s.noMap = true
		if err := s.unmap(true); err != nil {
			return err
		}
	}
	if s.mw == nil && !s.noMap {
		if err := l.mapActive(s, pos); err != nil {
			return err
		}
	}
	w := s.mw
	if w == nil {
		_, err := s.log.Write(b)
		return err
	}
	end := pos + int64(len(b))
	if end > w.m.Size() {
		if err := w.m.Allocate(l.allocTarget(end)); err != nil {
			if errors.Is(err, errors.ErrUnsupported) && w.m.Size() == pos {
				// The file system cannot allocate (no fallocate):
				// this segment goes on with write(2).
				s.noMap = true
				if err := s.unmap(false); err != nil {
					return err
				}
				_, err = s.log.Write(b)
				return err
			}
			return fmt.Errorf("allocate %s: %w", s.path, err)
		}
	}
	if _, err := w.m.WriteAt(b, pos); err != nil {
		return err
	}
	if w.populated < end+ahead(end)/2 {
		l.keepAhead(w, end)
	}
	if upto := end &^ 4095; upto-w.released >= releaseStep {
		// Written pages are never written again: out of the resident
		// set with them (they stay in the page cache), or a 1 GiB
		// segment would show as 1 GiB of the server's RSS.
		w.m.Release(w.released, upto-w.released)
		w.released = upto
	}
	return nil
}

// keepAhead keeps allocated space and prepared pages ahead of the data,
// which ends at end: it allocates ahead(end) past it (failing
// quietly: the next append that needs the space allocates it, and
// reports the failure), and has a goroutine prepare the pages the last
// one did not. A store into a fresh page otherwise costs the writer a
// page fault under the lock (1.5–18 µs on this machine, against
// 8–20 ns for 170 bytes into a prepared page).
func (l *Log) keepAhead(w *mapWriter, end int64) {
	if want := end + ahead(end); want > w.m.Size() && w.m.Size() < l.opt().SegmentBytes {
		if w.m.Allocate(l.allocTarget(want)) != nil {
			return
		}
	}
	w.populate(end)
}

// ahead is how far past data ending at end the writer prepares pages:
// as far as the segment's data reaches, between aheadMin and
// populateAhead. Prepared pages are dirty memory, so a fixed 512 KiB
// would cost every partition that much however little it holds (1,000
// partitions of one record each: 519 MB of resident zeros, and as many
// bytes for the next fsyncs to write); scaled, a cold partition costs a
// few pages and a hot one reaches the full run within its first MiB.
func ahead(end int64) int64 {
	return min(populateAhead, max(aheadMin, (end+4095)&^4095))
}

// allocTarget is the length to allocate a mapped segment to for data
// ending at end.
func (l *Log) allocTarget(end int64) int64 {
	step := min(max(end/8, allocMin), allocMax)
	target := (end + step + allocMin - 1) / allocMin * allocMin
	return max(min(target, l.opt().SegmentBytes), end)
}

// mapActive maps the active segment s, whose data ends at pos. On a file
// system that cannot map, s is written with write(2).
func (l *Log) mapActive(s *segment, pos int64) error {
	mfs, ok := l.fs.(vfs.MapFS)
	if !ok || !vfs.CanMap(l.fs) {
		s.noMap = true
		return nil
	}
	m, err := mfs.MapFile(s.path, max(l.opt().SegmentBytes, pos))
	if err != nil {
		// A mapping the process cannot have (vm.max_map_count or
		// RLIMIT_AS reached by many partitions, no descriptor to map
		// with) costs this segment its mapping, not its appends: it is
		// written with write(2), as on a file system that cannot map.
		s.noMap = true
		if !errors.Is(err, errors.ErrUnsupported) {
			l.o.Logger.Warn("active segment written with write(2): cannot map it", "file", s.path, "err", err)
		}
		return nil
	}
	if size := m.Size(); size < pos {
		m.Close()
		return fmt.Errorf("map %s: the file has %d bytes, the segment %d", s.path, size, pos)
	}
	s.mw = &mapWriter{m: m, populated: pos, released: pos &^ 4095}
	return nil
}

// populate keeps the pages past end prepared: when the prepared run gets
// short, one goroutine prepares the next (the writer never waits for it;
// a page it has not reached yet the writer faults in itself).
func (w *mapWriter) populate(end int64) {
	if w.done != nil {
		select {
		case <-w.done:
			w.done = nil
		default:
			return // still running
		}
	}
	from := max(w.populated, end)
	to := min(end+ahead(end), w.m.Size())
	if from >= to {
		return
	}
	w.populated = to
	m, done := w.m, make(chan struct{})
	w.done = done
	w.populating.Add(1)
	go func() {
		defer w.populating.Done()
		defer close(done)
		m.Populate(from, to-from)
	}()
}

// unmap drops the segment's mapping, if it has one, once the goroutine
// preparing its pages is done; with truncate, it then cuts the file to
// the segment's data (a roll, a clean Close). Under Log.mu, or once no
// appender can reach the segment.
func (s *segment) unmap(truncate bool) error {
	w := s.mw
	if w == nil {
		return nil
	}
	s.mw = nil
	w.populating.Wait()
	err := w.m.Close()
	if err != nil {
		err = fmt.Errorf("unmap %s: %w", s.path, err)
	}
	if truncate && err == nil {
		if terr := s.log.Truncate(s.size.Load()); terr != nil {
			err = fmt.Errorf("truncate %s to its data: %w", s.path, terr)
		}
	}
	return err
}

// allocatedTail reports whether the bytes of the active segment f from
// pos, where its batches end, to its end (size) are space the mapped
// writer allocated ahead and never wrote: all zeros, to a length the
// writer allocates to (a whole number of allocMin). Open cuts them
// without counting them as torn bytes, and Verify notes them rather than
// report a torn tail: a killed process leaves them after every batch it
// wrote. (A torn write's tail that happens to be zeros to such a length
// is told apart from them by nothing, and it holds no batch either.)
func allocatedTail(f io.ReaderAt, pos, size int64) bool {
	if size%allocMin != 0 || pos >= size {
		return false
	}
	buf := make([]byte, min(size-pos, 64<<10))
	for at := pos; at < size; at += int64(len(buf)) {
		chunk := buf[:min(int64(len(buf)), size-at)]
		if n, err := f.ReadAt(chunk, at); n < len(chunk) || err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		for _, c := range chunk {
			if c != 0 {
				return false
			}
		}
	}
	return true
}
