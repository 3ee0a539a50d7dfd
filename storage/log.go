package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// Log is one partition: a durable, append-only sequence of records.
// One goroutine at a time appends (appends serialize on a mutex); any
// number read concurrently. Close it to release the directory.
type Log struct {
	dir  string
	o    Options
	fs   vfs.FS
	lock io.Closer // nil with Options.CallerLocked

	mu     sync.Mutex                 // serializes appends, rolls, retention and Close
	segs   atomic.Pointer[[]*segment] // immutable snapshot; the last is active
	head   atomic.Int64               // next offset to assign
	start  atomic.Int64               // log start offset
	failed atomic.Pointer[error]      // sticky write or sync error
	closed atomic.Bool
	fault  writeFault // when and why failed was set, and its retries (recover.go)

	files *FileCache // Options.Files, or the log's own without a bound
	// retainMu serializes retention passes; leftover holds the bases of
	// segments a pass took out of the list but failed to unlink.
	retainMu sync.Mutex
	leftover []int64

	// interval is set by an append with Interval durability: the next
	// background tick fsyncs, even when the log's default is not Interval.
	interval atomic.Bool

	buf     []byte        // encoding buffer, under mu
	dec     batch.Decoder // validates AppendBatch input, under mu
	roll    rollClock     // the active segment's age, by the broker's clock; under mu
	refused refusedCounters
	notify  notifier
	sync    syncer

	recovery Recovery
	stop     chan struct{}
	done     chan struct{}

	format2     bool          // FORMAT says 2: the partition may hold cleaned segments
	cleanMu     sync.Mutex    // one compaction at a time; guards clean.state
	cleanerDone chan struct{} // closed when the cleaner goroutine ends (Options.Compact)
	clean       struct {
		state   cleanerState // what CLEANER holds
		cleaned atomic.Int64 // state.cleaned, for CleanerStats
		mu      sync.Mutex   // guards totals
		totals  CleanerStats
	}
}

// Recovery reports what Open found and did.
type Recovery struct {
	Clean        bool          // the last shutdown was clean: nothing to re-validate
	Segments     int           // segments found
	Validated    int64         // bytes re-validated
	TornBytes    int64         // bytes of a torn tail that were truncated
	RebuiltIndex int           // segments whose index files were rebuilt
	Duration     time.Duration // time Open spent recovering
}

// Open opens the partition in dir, creating it if it does not exist, and
// recovers it after a crash (see the package doc). Only one Log may have a
// directory open at a time, across processes.
func Open(dir string, opts *Options) (*Log, error) {
	if opts != nil {
		if err := opts.Validate(); err != nil {
			return nil, err
		}
	}
	o := opts.withDefaults()
	began := o.Now()
	l := &Log{dir: dir, o: o, fs: o.FS, files: o.Files, stop: make(chan struct{}), done: make(chan struct{})}
	l.sync.cond = sync.NewCond(&l.sync.mu)
	if err := l.prepareDir(); err != nil {
		return nil, err
	}
	if !o.CallerLocked {
		lock, err := l.fs.Lock(filepath.Join(dir, lockFile))
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		l.lock = lock
	}
	if err := l.load(); err != nil {
		l.closeFiles()
		if l.lock != nil {
			l.lock.Close()
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	l.recovery.Duration = time.Since(began)
	if l.recovery.TornBytes > 0 {
		o.Logger.Warn("truncated torn tail", "dir", dir, "bytes", l.recovery.TornBytes)
	}
	go l.background()
	if o.Compact {
		l.cleanerDone = make(chan struct{})
		go l.cleaner()
	}
	return l, nil
}

// prepareDir creates a new partition directory or checks an existing one.
func (l *Log) prepareDir() error {
	names, err := l.fs.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
			return fmt.Errorf("storage: create %s: %w", l.dir, err)
		}
		names = nil
	} else if err != nil {
		return fmt.Errorf("storage: open %s: %w", l.dir, err)
	}
	if slices.Contains(names, formatFile) {
		b, err := readFile(l.fs, filepath.Join(l.dir, formatFile))
		if err != nil {
			return fmt.Errorf("storage: open %s: %w", l.dir, err)
		}
		l.format2 = string(b) == formatLine2
		if string(b) != formatLine && !l.format2 {
			if strings.HasPrefix(string(b), "passbook-partition ") {
				return fmt.Errorf("%w in %s: %q", ErrFormatVersion, l.dir, strings.TrimSpace(string(b)))
			}
			return fmt.Errorf("%w: %s has a FORMAT file that is not passbook's", ErrNotPartition, l.dir)
		}
		return nil
	}
	for _, n := range names {
		// FORMAT.tmp is left by a creation that was interrupted.
		if n != lockFile && n != formatFile+".tmp" {
			return fmt.Errorf("%w: %s is not empty and has no FORMAT file", ErrNotPartition, l.dir)
		}
	}
	// A new partition (or one whose creation was interrupted, maybe
	// before its directory entry was synced).
	if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
		return fmt.Errorf("storage: create %s: %w", l.dir, err)
	}
	return writeFileAtomic(l.fs, l.dir, formatFile, []byte(formatLine))
}

// load opens the segments and recovers the active one.
func (l *Log) load() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	if err := l.recoverCleaner(names); err != nil {
		return err
	}
	if names, err = l.fs.ReadDir(l.dir); err != nil {
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
	for i, base := range bases {
		s, err := l.openSegment(base, i == len(bases)-1)
		if err != nil {
			return err
		}
		s.cleaned = i < len(bases)-1 && base < l.clean.state.rewritten
		segs = append(segs, s)
		publish()
		if i < len(bases)-1 {
			err = l.loadClosed(s, false)
		} else {
			err = l.loadActive(s, cp)
		}
		if err != nil {
			return err
		}
		if i > 0 && segs[i-1].next.Load() != base {
			return &CorruptError{File: s.path, Pos: 0, Err: fmt.Errorf("segment starts at offset %d but the previous one ends at %d", base, segs[i-1].next.Load())}
		}
	}
	l.start.Store(segs[0].base)
	l.head.Store(segs[len(segs)-1].next.Load())
	l.clean.cleaned.Store(max(l.clean.state.cleaned, segs[0].base))
	l.recovery.Clean = cp.clean && cp.base == segs[len(segs)-1].base
	// From here on the last shutdown was not clean until Close says so.
	// The active segment is synced first: the checkpoint must never claim
	// bytes that a power loss could still take away.
	active := segs[len(segs)-1]
	if err := l.fs.SyncDir(l.dir); err != nil { // the segment files may be new
		return fmt.Errorf("sync directory: %w", err)
	}
	if err := active.log.Sync(); err != nil {
		return fmt.Errorf("sync active segment: %w", err)
	}
	if err := active.idx.sync(); err != nil {
		return err
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
func (l *Log) loadClosed(s *segment, active bool) error {
	size, err := fileSize(s.log)
	if err != nil {
		return err
	}
	s.size.Store(size)
	if err := l.loadFromIndex(s, size, active); err != nil {
		l.o.Logger.Warn("rebuilding index", "segment", s.path, "reason", err)
		l.recovery.RebuiltIndex++
		return l.rebuild(s, size, false, checkpoint{})
	}
	return nil
}

func (l *Log) loadFromIndex(s *segment, size int64, active bool) error {
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
	var r batchReader
	r.reset(s.log, from, size)
	next := s.base + int64(rel)
	s.sinceIndex = 0
	for {
		pos, _, h, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if h.BaseOffset != next {
			return fmt.Errorf("batch at byte %d has base offset %d, index says %d", pos, h.BaseOffset, next)
		}
		next = h.NextOffset()
		s.sinceIndex += h.Size()
	}
	s.next.Store(next)
	s.sinceTime = s.sinceIndex
	if e, ok, err := s.idx.lastTime(); err != nil {
		return err
	} else if ok {
		s.maxMs.Store(e.ms)
		s.timeMs = e.ms
	}
	if size > 0 {
		var fr batchReader
		fr.reset(s.log, 0, size)
		_, _, h, err := fr.next()
		if err != nil {
			return err
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

// loadActive opens the active segment: a cleanly closed one whose size
// matches the checkpoint is trusted; any other is re-validated batch by
// batch.
func (l *Log) loadActive(s *segment, cp checkpoint) error {
	size, err := fileSize(s.log)
	if err != nil {
		return err
	}
	if cp.clean && cp.base == s.base && cp.pos == size {
		s.size.Store(size)
		if err := l.loadFromIndex(s, size, true); err == nil {
			return nil
		}
		l.recovery.RebuiltIndex++
	}
	return l.rebuild(s, size, true, cp)
}

// rebuild re-reads a segment from its start, checks every batch, rewrites
// its index files and, for the active segment, truncates a torn tail.
func (l *Log) rebuild(s *segment, size int64, active bool, cp checkpoint) error {
	if err := s.idx.reset(); err != nil {
		return err
	}
	s.idx.inMemory = active
	s.sinceIndex, s.sinceTime, s.timeMs, s.firstMs = l.o.IndexInterval, l.o.IndexInterval, -1, -1
	s.maxMs.Store(-1)
	synced := recoveryPoint(cp, s.base)
	var sc segScanner
	sc.reset(s.log, size, s.base)
	sc.gaps = s.cleaned
	next, end := s.base, int64(0)
	for {
		sb, err := sc.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The disk failed to read: that says nothing about the bytes.
			return err
		}
		if sb.Damaged() {
			if !tornTail(active, sb.Pos, synced) {
				return s.corrupt(sb.Pos, sb.Err)
			}
			// A torn write: drop it and everything after.
			if err := s.log.Truncate(sb.Pos); err != nil {
				return fmt.Errorf("truncate torn tail: %w", err)
			}
			l.recovery.TornBytes += size - sb.Pos
			break
		}
		h := sb.Header
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

// isDamage reports whether err, from reading a batch, is about the bytes
// (short, corrupt, not a batch) rather than a failure to read them.
func isDamage(err error) bool {
	return errors.Is(err, batch.ErrShort) || errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrMagic)
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

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) active() *segment {
	segs := l.segments()
	return segs[len(segs)-1]
}

// Head is the next offset the log will assign: the number of records ever
// appended.
func (l *Log) Head() int64 { return l.head.Load() }

// StartOffset is the earliest offset still kept (it moves with retention).
func (l *Log) StartOffset() int64 { return l.start.Load() }

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// SegmentCount is the number of segments, the active one included.
func (l *Log) SegmentCount() int { return len(l.segments()) }

// Dir is the partition's directory.
func (l *Log) Dir() string { return l.dir }

// Recovery tells what Open found and did.
func (l *Log) Recovery() Recovery { return l.recovery }

// Err returns the sticky error that stopped appends, if any.
func (l *Log) Err() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records a sticky error that only a reopen clears (failWrite, in
// recover.go, records one a retry recovers from); the first one wins.
func (l *Log) fail(err error) error { return l.markUnwritable(err, false) }

// writable reports why appends are refused, if they are.
func (l *Log) writable() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.Err()
}

// Close syncs the log, marks the shutdown clean and releases the directory.
// Readers blocked in Wait return ErrClosed.
func (l *Log) Close() error {
	if l.closed.Swap(true) {
		return ErrClosed
	}
	close(l.stop)
	<-l.done // before taking mu: the background goroutine may want it
	if l.cleanerDone != nil {
		<-l.cleanerDone
	}
	l.cleanMu.Lock() // a Compact in progress sees stop and returns
	l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notify.broadcast()
	err := l.Err()
	if err == nil {
		a := l.active()
		if err = a.finishTimeIndex(); err == nil {
			err = a.log.Sync()
		}
		if err == nil {
			if err = a.idx.sync(); err == nil {
				err = writeCheckpoint(l.fs, l.dir, checkpoint{base: a.base, pos: a.size.Load(), clean: true})
			}
		}
	}
	l.sync.mu.Lock()
	if err == nil {
		l.sync.synced = l.head.Load()
	}
	if l.sync.err == nil {
		l.sync.err = ErrClosed
	}
	l.sync.cond.Broadcast()
	l.sync.mu.Unlock()
	l.closeFiles()
	if l.lock != nil {
		if lerr := l.lock.Close(); err == nil {
			err = lerr
		}
	}
	return err
}

func (l *Log) closeFiles() {
	if p := l.segs.Load(); p != nil {
		for _, s := range *p {
			s.drop() // the log's reference
		}
	}
}

// background runs the interval fsync and time-based retention.
func (l *Log) background() {
	defer close(l.done)
	t := time.NewTicker(l.o.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.retryWrites()
			if l.interval.Swap(false) {
				l.syncNow()
			}
			if err := l.checkpointNow(); err != nil {
				l.o.Logger.Error("checkpoint", "dir", l.dir, "err", err)
			}
			if l.o.RetentionAge > 0 || l.o.RetentionBytes > 0 {
				if _, err := l.Retain(); err != nil && !errors.Is(err, ErrClosed) {
					l.o.Logger.Error("retention", "dir", l.dir, "err", err)
				}
			}
		}
	}
}

var _ = os.O_RDONLY
