package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// Recovery, in two kinds: Open's, after a crash (load: each closed segment
// from its index files, the active one re-validated batch by batch from
// its start unless the last shutdown was clean, a torn tail truncated),
// and a failed write's, while the log stays open (retryLocked: the active
// segment put back as its last acknowledged append left it). Both walk
// the segment with segScanner (scan.go), so they and Verify agree on what
// is damage, and tornTail is the one rule of what damage Open mends.

// load opens the segments and recovers the active one. names are the
// directory's entries as prepareDir listed them, nil to list them here.
func (l *Log) load(names []string) error {
	var err error
	if names == nil {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	if names, err = l.recoverCleaner(names); err != nil { // cleanerfile.go
		return err
	}
	var bases []int64
	for _, n := range names {
		if base, ok := strings.CutSuffix(n, ".log"); ok {
			b, err := strconv.ParseInt(base, 10, 64)
			if err != nil || len(base) != 20 || b < 0 {
				return fmt.Errorf("%w: unexpected file %s", ErrNotPartition, n)
			}
			bases = append(bases, b)
		}
		if strings.HasSuffix(n, ".tmp") {
			l.fs.Remove(filepath.Join(l.dir, n)) // an interrupted atomic write
		}
	}
	cp, err := readCheckpoint(l.fs, l.dir)
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		bases = []int64{0}
	}
	l.recovery.Segments = len(bases)
	segs := make([]*segment, 0, len(bases))
	publish := func() { s := slices.Clone(segs); l.segs.Store(&s) }
	// created: this Open made a file (a new partition's first segment, or
	// index files a segment had lost), whose directory entry is not yet
	// durable. names is sorted (vfs.FS.ReadDir).
	created := false
	exists := func(name string) bool { _, ok := slices.BinarySearch(names, name); return ok }
	trusted := false // the active segment is as a clean Close left it
	var scratch loadScratch
	for i, base := range bases {
		if !exists(segmentName(base, ".log")) || !exists(segmentName(base, ".index")) || !exists(segmentName(base, ".timeindex")) {
			created = true
		}
		s, err := l.openSegment(base, i == len(bases)-1)
		if err != nil {
			publish() // for Open's closeFiles
			return err
		}
		s.cleaned = i < len(bases)-1 && base < l.clean.state.rewritten
		segs = append(segs, s)
		if i < len(bases)-1 {
			err = l.loadClosed(&scratch, s)
		} else {
			trusted, err = l.loadActive(&scratch, s, cp)
		}
		if err == nil && i > 0 && segs[i-1].next.Load() != base {
			err = &CorruptError{File: s.path, Pos: 0, Err: fmt.Errorf("segment starts at offset %d but the previous one ends at %d", base, segs[i-1].next.Load())}
		}
		if err != nil {
			publish()
			return err
		}
	}
	publish()
	l.head.Store(segs[len(segs)-1].next.Load())
	start, err := l.loadedStart(segs[0].base, l.head.Load())
	if err != nil {
		return err
	}
	l.start.Store(start)
	l.clean.cleaned.Store(max(l.clean.state.cleaned, segs[0].base))
	l.recovery.Clean = cp.clean && cp.base == segs[len(segs)-1].base
	if err := l.loadTxns(segs, names); err != nil { // txnrecover.go
		return err
	}
	// From here on the last shutdown was not clean until Close says so.
	// The active segment is synced first: the checkpoint must never claim
	// bytes that a power loss could still take away.
	//
	// Each sync is what a power loss right after Open would need. After a
	// clean shutdown whose checkpoint matches the active segment (trusted)
	// and with no file created here, none is: that Close fsync'd the
	// active segment and its indexes before it wrote the clean
	// checkpoint, closed segments were fsync'd when they were sealed, and
	// every file's directory entry was synced by whoever created it (a
	// roll, a compaction's swap, an atomic write, an earlier Open that
	// created one). Otherwise the previous process may have died with
	// bytes or entries only in the page cache (a SIGKILL keeps them there,
	// and this process would build on them), a torn tail was truncated, an
	// index was rebuilt, or this Open created files: sync all three.
	active := segs[len(segs)-1]
	if !trusted || created {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
		if err := active.log.Sync(); err != nil {
			return fmt.Errorf("sync active segment: %w", err)
		}
		if err := active.idx.sync(); err != nil {
			return err
		}
	} else {
		l.untouched = activeState(active)
	}
	l.sync.synced = l.head.Load()
	l.sync.point = checkpoint{base: active.base, pos: active.size.Load()}
	l.sync.written = l.sync.point
	return writeCheckpoint(l.fs, l.dir, l.sync.point)
}

// loadClosed reads a closed (or cleanly closed active) segment's metadata
// from its index, rebuilding the index if it is damaged. Batches are not
// CRC-checked here: readers check every batch they read, and verify checks
// them all.
func (l *Log) loadClosed(scratch *loadScratch, s *segment) error {
	size, err := fileSize(s.log)
	if err != nil {
		return err
	}
	s.size.Store(size)
	if err := l.loadIndexWith(scratch, s, size, false); err != nil {
		l.o.Logger.Warn("rebuilding index", "segment", s.path, "reason", err)
		l.recovery.RebuiltIndex++
		return l.rebuild(&scratch.sc, s, size, false, checkpoint{})
	}
	return nil
}

// loadScratch holds the buffers that load reuses from one segment to the
// next: a partition of thousands of segments would otherwise allocate a
// read buffer (up to a segment's size) for each.
type loadScratch struct {
	sc  segScanner
	hdr [batch.HeaderSize]byte
}

// loadFromIndex loads segment s (size bytes) from its index files.
func (l *Log) loadFromIndex(s *segment, size int64, active bool) error {
	var scratch loadScratch
	return l.loadIndexWith(&scratch, s, size, active)
}

func (l *Log) loadIndexWith(scratch *loadScratch, s *segment, size int64, active bool) error {
	if err := s.idx.load(size, active); err != nil {
		return err
	}
	// Scan batch headers after the last index entry to find the end, and
	// the writer's bookkeeping so the index stays as sparse as before.
	var from int64
	var rel uint32
	if s.idx.offCount > 0 {
		e, err := s.idx.offsetAt(s.idx.offCount - 1)
		if err != nil {
			return err
		}
		from, rel = int64(e.pos), e.rel
	} else if size > 0 {
		return errors.New("index is empty")
	}
	sc := &scratch.sc
	sc.reset(s.log, size, s.base)
	sc.seek(from, s.base+int64(rel))
	sc.gaps, sc.trusted = s.cleaned, true
	s.sinceIndex = 0
	var first batch.Header // the first batch's, when the scan starts there
	haveFirst := false
	for sb, err := range sc.walk(stopAtDamage) {
		if err != nil {
			return err
		}
		if sb.Damaged() {
			return fmt.Errorf("after the last index entry, at byte %d: %w", sb.Pos, sb.Err)
		}
		if sb.Pos == 0 {
			first, haveFirst = sb.Header, true
		}
		s.sinceIndex += int(sb.Size)
	}
	next := sc.expect
	s.next.Store(next)
	s.sinceTime = s.sinceIndex
	if e, ok, err := s.idx.lastTime(); err != nil {
		return err
	} else if ok {
		s.maxMs.Store(e.ms)
		s.timeMs = e.ms
	}
	if size > 0 {
		// Only the first batch's header is needed (its timestamps): read
		// that, not a chunk of the segment.
		h := first
		if !haveFirst {
			if size < batch.HeaderSize {
				return fmt.Errorf("%w: %d bytes, a batch header needs %d", batch.ErrShort, size, batch.HeaderSize)
			}
			if err := readFullAt(s.log, scratch.hdr[:]); err != nil {
				return fmt.Errorf("read the first batch header: %w", err)
			}
			var err error
			if h, err = batch.ParseHeader(scratch.hdr[:]); err != nil {
				return err
			}
		}
		s.firstMs = h.BaseTimestamp
		if err := s.checkTimeIndex(h, next); err != nil {
			return err
		}
	} else {
		s.sinceIndex, s.sinceTime = l.o.IndexInterval, l.o.IndexInterval
	}
	return nil
}

// loadActive opens the active segment: a cleanly closed one whose size
// matches the checkpoint is trusted (loaded from its index files);
// any other is re-validated batch by batch.
func (l *Log) loadActive(scratch *loadScratch, s *segment, cp checkpoint) (trusted bool, err error) {
	size, err := fileSize(s.log)
	if err != nil {
		return false, err
	}
	if cp.clean && cp.base == s.base && cp.pos == size {
		s.size.Store(size)
		if err := l.loadIndexWith(scratch, s, size, true); err == nil {
			return true, nil
		}
		l.recovery.RebuiltIndex++
	}
	return false, l.rebuild(&scratch.sc, s, size, true, cp)
}

// segState is what of the active segment an append changes: Close
// compares it with the state a trusted Open found (Log.untouched).
type segState struct {
	base, size  int64
	offs, times int
	valid       bool
}

func activeState(s *segment) segState {
	return segState{base: s.base, size: s.size.Load(), offs: s.idx.offCount, times: s.idx.timeCount, valid: true}
}

// rebuild re-reads a segment from its start, checks every batch, rewrites
// its index files and, for the active segment, truncates a torn tail.
func (l *Log) rebuild(sc *segScanner, s *segment, size int64, active bool, cp checkpoint) error {
	if err := s.idx.reset(); err != nil {
		return err
	}
	s.idx.inMemory = active
	s.sinceIndex, s.sinceTime, s.timeMs, s.firstMs = l.o.IndexInterval, l.o.IndexInterval, -1, -1
	s.maxMs.Store(-1)
	synced := recoveryPoint(cp, s.base)
	sc.reset(s.log, size, s.base)
	sc.gaps = s.cleaned
	next, end := s.base, int64(0)
	s.txn.rebuilt = true
	for sb, err := range sc.walk(stopAtDamage) {
		if err != nil {
			// The disk failed to read: that says nothing about the bytes.
			return err
		}
		if sb.Damaged() {
			if !tornTail(active, sb.Pos, synced) {
				return s.corrupt(sb.Pos, sb.Err)
			}
			// A torn write: drop it and everything after. Space the
			// mapped writer allocated past its last batch and never
			// wrote is no torn write (mapwrite.go).
			allocated := allocatedTail(s.log, sb.Pos, size)
			if err := s.log.Truncate(sb.Pos); err != nil {
				return fmt.Errorf("truncate torn tail: %w", err)
			}
			if !allocated {
				l.recovery.TornBytes += size - sb.Pos
			}
			break
		}
		h := sb.Header
		s.txnNoteRebuilt(isTxnBatch(h))
		if err := s.indexBatch(sb.Pos, h, l.o.IndexInterval); err != nil {
			return err
		}
		next, end = h.NextOffset(), sb.Pos+int64(h.Size())
	}
	l.recovery.Validated += end
	s.size.Store(end)
	s.next.Store(next)
	if !active {
		if err := s.finishTimeIndex(); err != nil {
			return err
		}
		return s.idx.sync()
	}
	return nil
}

// recoveryPoint is how many bytes of the segment with base offset base
// CHECKPOINT says were fsync'd: all of a closed or cleanly closed
// segment's, and for the active one the position of its last recorded
// fsync (zero when CHECKPOINT names an older segment).
func recoveryPoint(cp checkpoint, base int64) int64 {
	if cp.base == base {
		return cp.pos
	}
	return 0
}

// tornTail is the one rule, shared by Open (Log.rebuild) and Verify
// (scanOneSegment), that says whether damage found at byte pos of a
// segment is a torn write — bytes a power loss may take — rather than
// corruption. Closed segments were fsync'd whole before the next one was
// created, and the active segment's bytes below its recovery point
// (synced, from CHECKPOINT) were fsync'd: damage there is corruption.
// Bytes past the recovery point were never promised to survive a power
// loss, and the page cache writes them back in any order, so a lost page
// may be followed by later pages that did reach the disk — whole valid
// batches after the damage prove nothing. Damage there is a torn tail:
// the segment ends at pos, and everything after it goes.
func tornTail(active bool, pos, synced int64) bool {
	return active && pos >= synced
}

// isDamage reports whether err, from reading a batch, is about the bytes
// (short, corrupt, not a batch) rather than a failure to read them.
func isDamage(err error) bool {
	return errors.Is(err, batch.ErrShort) || errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrMagic)
}

// A failed write (the second kind).

// A failed write makes a log unwritable: appends fail with an error
// matching ErrUnwritable, and the log never pretends the write happened.
// A write that failed for want of space, a read-only file system or file
// descriptors (ENOSPC, EROFS, EMFILE: the write, roll or index update
// failed) is recovered by the log itself once the condition clears: it
// retries with backoff (retryMin doubling to retryMax, and at once when an
// append finds the backoff over), and a retry
//
//  1. probes that the directory takes a write and an fsync again (a
//     4 KiB PROBE.tmp, removed after);
//  2. removes the files of a segment that a failed roll created but
//     never made active (the appends after the retry go on in the active
//     segment, so a segment file left at the head would start below the
//     active segment's end, and Open would refuse the partition);
//  3. truncates the active segment to the last acknowledged batch (a
//     failed write may have left part of a batch) and its index files to
//     their whole entries;
//  4. re-validates the active segment's batches from its last fsync to the
//     head, as Open's recovery does;
//
// and only then takes appends again. A failed fsync is not retried: the
// kernel may have dropped the dirty pages it could not write while still
// serving them from its cache, so bytes the log would re-validate are not
// known to be on disk. Nor is a failure whose state a retry cannot check
// (a compaction's swap): the log stays unwritable until it is reopened,
// and Health says so.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 10 * time.Second
)

// probeFile is written and removed by a recovery attempt. Open removes a
// leftover one with the other *.tmp files.
const probeFile = "PROBE.tmp"

// Health says whether a log takes appends.
type Health struct {
	// Err is why appends are refused (it matches ErrUnwritable), nil
	// while the log takes them.
	Err error
	// Since is when appends began to be refused.
	Since time.Time
	// Retrying says the log retries by itself (the failure was a write,
	// not an fsync); otherwise it takes appends again only once reopened.
	Retrying bool
	// LastRetry is why the last retry failed, if one did.
	LastRetry error
	// Failures counts the times the log became unwritable since Open.
	Failures int64
}

// Writable reports whether the log takes appends.
func (h Health) Writable() bool { return h.Err == nil }

// writeFault is a log's record of its failed writes.
type writeFault struct {
	failures atomic.Int64
	mu       sync.Mutex
	since    time.Time
	next     time.Time // earliest next retry
	backoff  time.Duration
	fatal    bool // no retry: reopen
	last     error
}

// Health reports whether the log takes appends and, if not, why.
func (l *Log) Health() Health {
	f := &l.fault
	f.mu.Lock()
	defer f.mu.Unlock()
	h := Health{Err: l.Err(), Failures: f.failures.Load()}
	if h.Err != nil {
		h.Since, h.Retrying, h.LastRetry = f.since, !f.fatal, f.last
	}
	return h
}

// failWrite records a failed write that a retry can recover from.
func (l *Log) failWrite(err error) error { return l.markUnwritable(err, true) }

// markUnwritable records a sticky error; the first one wins, and it is
// logged at error level once.
func (l *Log) markUnwritable(cause error, retry bool) error {
	hint := "appends refused until the log is reopened"
	if retry {
		hint = "appends refused; retrying"
	}
	err := fmt.Errorf("storage: %s: %w: %w (%s)", l.dir, ErrUnwritable, cause, hint)
	f := &l.fault
	f.mu.Lock()
	defer f.mu.Unlock()
	if !l.failed.CompareAndSwap(nil, &err) {
		return *l.failed.Load()
	}
	now := time.Now()
	f.failures.Add(1)
	f.since, f.fatal, f.last, f.backoff = now, !retry, nil, retryMin
	f.next = now.Add(retryMin)
	l.o.Logger.Error("partition unwritable", "dir", l.dir, "err", cause, "retrying", retry)
	return err
}

// writableLocked is writable for an append (mu held): a log whose write
// failed tries to recover first, if its backoff is over.
func (l *Log) writableLocked() error {
	if l.failed.Load() != nil {
		l.retryLocked(false)
	}
	return l.writable()
}

// retryWrites is the background retry of a failed write.
func (l *Log) retryWrites() {
	if l.failed.Load() == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed.Load() {
		l.retryLocked(false)
	}
}

// Retry makes the log try at once to recover from a failed write (see
// Health), without waiting for its backoff. It returns nil once the log
// takes appends, and otherwise why not.
func (l *Log) Retry() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	l.retryLocked(true)
	return l.writable()
}

// retryLocked tries to recover from a failed write, if one is due (or
// now). mu is held.
func (l *Log) retryLocked(now bool) {
	f := &l.fault
	f.mu.Lock()
	due := !f.fatal && (now || !time.Now().Before(f.next))
	f.mu.Unlock()
	if !due || l.failed.Load() == nil {
		return
	}
	err := l.recoverWritesLocked()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.last = err
		f.backoff = min(2*f.backoff, retryMax)
		f.next = time.Now().Add(f.backoff)
		l.o.Logger.Debug("partition still unwritable", "dir", l.dir, "err", err, "next retry in", f.backoff)
		return
	}
	cause := l.Err()
	l.failed.Store(nil)
	l.sync.mu.Lock()
	if l.sync.err != nil && !errors.Is(l.sync.err, ErrClosed) {
		l.sync.err = nil // an fsync refused because of the failed write
	}
	l.sync.mu.Unlock()
	l.o.Logger.Warn("partition writable again", "dir", l.dir, "after", time.Since(f.since).Round(time.Millisecond), "was", cause)
}

// recoverWritesLocked checks that the log can write again and puts its
// active segment back as its last acknowledged append left it.
func (l *Log) recoverWritesLocked() error {
	if err := l.probe(); err != nil {
		return err
	}
	s := l.active()
	if err := l.removeFailedRoll(s); err != nil {
		return err
	}
	want := s.size.Load()
	size, err := fileSize(s.log)
	if err != nil {
		return err
	}
	if size < want {
		l.fault.mu.Lock()
		l.fault.fatal = true
		l.fault.mu.Unlock()
		return fmt.Errorf("%s has %d bytes, %d were acknowledged: bytes are gone (verify and repair it)", s.path, size, want)
	}
	if size > want {
		// Part of the failed batch: it was never acknowledged.
		if err := s.log.Truncate(want); err != nil {
			return fmt.Errorf("truncate the failed write: %w", err)
		}
	}
	if err := truncateTo(s.idx.offFile, int64(s.idx.offCount)*offsetEntrySize); err != nil {
		return err
	}
	if err := truncateTo(s.idx.timeFile, int64(s.idx.timeCount)*timeEntrySize); err != nil {
		return err
	}
	if err := s.txnRetryLocked(); err != nil {
		return err
	}
	// Re-validate what the last fsync did not cover.
	l.sync.mu.Lock()
	point := l.sync.point
	l.sync.mu.Unlock()
	from := int64(0)
	if point.base == s.base {
		from = min(point.pos, want)
	}
	var sc segScanner
	sc.reset(s.log, want, s.base)
	sc.gaps = s.cleaned
	if from > 0 {
		next, ok := peekBase(s.log, from, want)
		if !ok {
			next = s.next.Load()
		}
		sc.seek(from, next)
	}
	for sb, err := range sc.walk(stopAtDamage) {
		if err != nil {
			return err
		}
		if sb.Damaged() {
			l.fault.mu.Lock()
			l.fault.fatal = true
			l.fault.mu.Unlock()
			return s.corrupt(sb.Pos, sb.Err)
		}
	}
	if sc.expect != l.head.Load() && want > from {
		return fmt.Errorf("%s ends at offset %d, the head is %d", s.path, sc.expect, l.head.Load())
	}
	return nil
}

// removeFailedRoll removes the segment files past the active segment s:
// a roll that failed after creating the next segment's files (opening its
// indexes, or the directory fsync, failed) leaves them at the head, but
// the log goes on appending to s. Their removal is made durable before
// any append lands in s, so that a power loss cannot bring them back.
func (l *Log) removeFailedRoll(s *segment) error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list the segments: %w", err)
	}
	removed := false
	for _, n := range names {
		if b, _, ok := segmentFile(n); !ok || b <= s.base {
			continue
		}
		if err := l.fs.Remove(filepath.Join(l.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s of a failed roll: %w", n, err)
		}
		removed = true
	}
	if removed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	return nil
}

// probe writes, fsyncs and removes a 4 KiB file in the log's directory.
func (l *Log) probe() error {
	name := filepath.Join(l.dir, probeFile)
	f, err := l.fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := l.fs.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

// truncateTo cuts f to size if it is longer.
func truncateTo(f interface {
	Stat() (os.FileInfo, error)
	Truncate(int64) error
}, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > size {
		return f.Truncate(size)
	}
	return nil
}
