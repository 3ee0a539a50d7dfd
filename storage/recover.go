package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

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
	sc.br.reset(s.log, from, want)
	if from > 0 {
		next, ok := peekBase(s.log, from, want)
		if !ok {
			next = s.next.Load()
		}
		sc.expect = next
	}
	for {
		sb, err := sc.read()
		if err == io.EOF {
			break
		}
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
