package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
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
//
// Lock order. A goroutine holding one of these locks takes only those
// after it, never one before:
//
//	cleanMu, retainMu  one compaction, one retention pass (never both)
//	mu                 appends, rolls, the segment list's changes, Close
//	fault.mu           the failed-write record (recover.go)
//	sync.mu            the group commit (released around each fsync)
//	Syncer.mu          its queue of logs to fsync (taken under sync.mu to queue one)
//
// and the leaves, under any of them and taking nothing else: notify.mu,
// clean.mu, a segment's pinMu (which takes its FileCache's lock to pin or
// close files). Readers take no lock of the log's: they load segs and
// head, and pin the segment they read.
type Log struct {
	dir  string
	o    Options                 // as Open was given them, defaults applied
	live atomic.Pointer[Options] // o with the live settings of the last Reconfigure (tune.go)
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
	comb    combiner // Appends waiting for mu (combine.go)
	txn     txnState // open transactions, LSO (txn.go)
	sync    syncer

	recovery Recovery
	// untouched is the active segment as a trusted Open found it (the
	// last shutdown was clean; recover.go): while it is unchanged, Close
	// has nothing to fsync. Under mu.
	untouched segState
	stop      chan struct{}
	done      chan struct{}

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
	live := o
	l.live.Store(&live)
	l.sync.cond = sync.NewCond(&l.sync.mu)
	l.txn.init()
	names, err := l.prepareDir()
	if err != nil {
		return nil, err
	}
	if !o.CallerLocked {
		lock, err := l.fs.Lock(filepath.Join(dir, lockFile))
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		l.lock = lock
	}
	if err := l.load(names); err != nil {
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
	l.trimBelowStart() // logstart.go
	go l.background()
	if o.Compact {
		l.cleanerDone = make(chan struct{})
		go l.cleaner()
	}
	return l, nil
}

// prepareDir creates a new partition directory or checks an existing one.
// For an existing one it returns the names in it, for load; nil for a new
// one.
func (l *Log) prepareDir() ([]string, error) {
	names, err := l.fs.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
			return nil, fmt.Errorf("storage: create %s: %w", l.dir, err)
		}
		names = nil
	} else if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", l.dir, err)
	}
	if slices.Contains(names, formatFile) {
		b, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, formatFile))
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", l.dir, err)
		}
		l.format2 = string(b) == formatLine2
		if string(b) != formatLine && !l.format2 {
			if strings.HasPrefix(string(b), "passbook-partition ") {
				return nil, fmt.Errorf("%w in %s: %q", ErrFormatVersion, l.dir, strings.TrimSpace(string(b)))
			}
			return nil, fmt.Errorf("%w: %s has a FORMAT file that is not passbook's", ErrNotPartition, l.dir)
		}
		return names, nil
	}
	for _, n := range names {
		// FORMAT.tmp is left by a creation that was interrupted.
		if n != lockFile && n != formatFile+".tmp" {
			return nil, fmt.Errorf("%w: %s is not empty and has no FORMAT file", ErrNotPartition, l.dir)
		}
	}
	// A new partition (or one whose creation was interrupted, maybe
	// before its directory entry was synced): its parent's entry for it
	// is made durable here. An existing partition's was, when it was
	// created: it needs no SyncDir of its parent.
	if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", l.dir, err)
	}
	return nil, vfs.WriteFileAtomic(l.fs, l.dir, formatFile, []byte(formatLine))
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
	<-l.done    // before taking mu: the background goroutine may want it
	l.mu.Lock() // Reconfigure may start the cleaner, under mu, until closed is set
	cleanerDone := l.cleanerDone
	l.mu.Unlock()
	if cleanerDone != nil {
		<-cleanerDone
	}
	l.cleanMu.Lock() // wait until a Compact in progress has seen stop and returned
	//lint:ignore SA2001 the lock is taken only to wait for its holder
	l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notify.broadcast()
	// The file ends with its data, even after a failure (mapwrite.go).
	uerr := l.active().unmap(true)
	err := l.Err()
	if err == nil {
		err = uerr
	}
	if err == nil {
		a := l.active()
		err = a.finishTimeIndex()
		// An active segment unchanged since a trusted Open is as durable
		// as the clean Close before it left it: its fsyncs would do
		// nothing a power loss needs.
		if err == nil && l.untouched != activeState(a) {
			if err = a.log.Sync(); err == nil {
				err = a.idx.sync()
			}
		}
		if err == nil {
			err = l.txnCloseLocked(a) // txnindex.go
			if err == nil {
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
			if l.opt().RetentionAge > 0 || l.opt().RetentionBytes > 0 {
				if _, err := l.Retain(); err != nil && !errors.Is(err, ErrClosed) {
					l.o.Logger.Error("retention", "dir", l.dir, "err", err)
				}
			}
		}
	}
}
