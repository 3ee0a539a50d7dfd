package storage

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// WaitDurable returns once the records below offset end meet durability
// d, as an append with d would before returning (DefaultDurability
// meaning the log's). It lets a caller append with InOS and wait later,
// so that appends made meanwhile, from any caller, share the fsync. end
// must not be past the head.
func (l *Log) WaitDurable(end int64, d Durability) error { return l.durable(d, end) }

// IsDurable reports whether WaitDurable(end, d) has nothing to do: the
// records below offset end already meet durability d (DefaultDurability
// meaning the log's). Interval reports false, since WaitDurable also asks
// for the next background fsync. A caller with many logs to wait for
// waits only on those that need it.
func (l *Log) IsDurable(end int64, d Durability) bool {
	if d == DefaultDurability {
		d = l.o.Durability
	}
	switch d {
	case Interval:
		return false
	case Fsync:
	default:
		return true
	}
	l.sync.mu.Lock()
	defer l.sync.mu.Unlock()
	return l.sync.synced >= end
}

// durable waits until the records below end meet durability d.
func (l *Log) durable(d Durability, end int64) error {
	if d == DefaultDurability {
		d = l.o.Durability
	}
	if d == Interval {
		l.interval.Store(true)
	}
	if d != Fsync {
		return nil
	}
	return l.waitSynced(end)
}

// syncer is a log's side of the group commit (its Syncer runs the
// fsyncs): how far the log is fsync'd and who waits for more. Fields
// under mu.
type syncer struct {
	mu      sync.Mutex
	cond    *sync.Cond // waiters for synced to pass their target
	synced  int64      // offsets below this are fsync'd
	point   checkpoint // where the last fsync got to
	written checkpoint // what CHECKPOINT says
	err     error

	want     int64   // the highest target waited for
	queued   bool    // in its Syncer's queue, or being synced
	inflight bool    // its fsync is running
	waiters  int     // goroutines in waitSynced
	own      *Syncer // the Syncer of its own, with no Options.Syncer

	// The wait before the next fsync (awaitReleased).
	expect  int           // waiters the last fsync released
	arrived int           // waits begun since it ended
	full    chan struct{} // closed when arrived reaches expect, while a worker waits for that
	last    time.Duration // how long the last fsync took
}

// waitSynced returns once every offset below target is fsync'd: it puts
// the log in its Syncer's queue (once, however many wait) and sleeps
// until an fsync covers target.
func (l *Log) waitSynced(target int64) error {
	s := &l.sync
	s.mu.Lock()
	defer s.mu.Unlock()
	first := true
	for s.synced < target {
		if s.err != nil {
			return s.err
		}
		s.want = max(s.want, target)
		// A wait counts towards the next fsync's start unless this log's
		// fsync is running: such a waiter is not one the last fsync
		// released coming back.
		if first && !s.inflight {
			s.arrived++
			if s.full != nil && s.arrived >= s.expect {
				close(s.full)
				s.full = nil
			}
		}
		first = false
		if !s.queued {
			s.queued = true
			l.syncerLocked().enqueue(l)
		}
		s.waiters++
		s.cond.Wait()
		s.waiters--
	}
	return nil
}

// syncerLocked is the log's Syncer; l.sync.mu is held.
func (l *Log) syncerLocked() *Syncer {
	if l.o.Syncer != nil {
		return l.o.Syncer
	}
	if l.sync.own == nil {
		l.sync.own = NewSyncer(1)
	}
	return l.sync.own
}

// awaitReleased waits, before the log's next fsync, until as many waits
// have begun since its last fsync as that fsync released, so that the
// appenders it woke, appending again, are in the next one rather than
// split off into a group of their own that takes turns with the rest.
// Appenders that do not come back are waited for only while others
// still do: the wait ends when a stall (a quarter of the last fsync, at
// least minRoundStall) passes with no new wait, and after maxRoundWait
// in all.
func (l *Log) awaitReleased() {
	s := &l.sync
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.arrived >= s.expect || s.last <= 0 || s.err != nil {
		return
	}
	stall := max(s.last/4, minRoundStall)
	t := time.NewTimer(stall)
	defer t.Stop()
	began := time.Now()
	for s.arrived < s.expect {
		full := make(chan struct{})
		s.full = full
		seen := s.arrived
		s.mu.Unlock()
		timeout := false
		select {
		case <-full:
		case <-t.C:
			timeout = true
		}
		s.mu.Lock()
		s.full = nil
		if timeout {
			if s.arrived == seen || time.Since(began) >= maxRoundWait {
				return
			}
			t.Reset(stall)
		}
	}
}

// syncRound fsyncs l's active segment and wakes the waiters it covered:
// every one waiting when it began had appended before the head was read.
// It reports whether the log must be synced again, for a waiter that
// came during the fsync with a target past it.
func (l *Log) syncRound() (again bool) {
	s := &l.sync
	s.mu.Lock()
	s.inflight = true
	released := s.waiters
	s.mu.Unlock()
	began := time.Now()
	upto, point, err := l.syncActive()
	took := time.Since(began)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight = false
	s.expect, s.arrived, s.last = released, 0, took
	if err != nil {
		if s.err == nil {
			s.err = err
		}
	} else if upto > s.synced {
		s.synced, s.point = upto, point
	}
	s.queued = s.err == nil && s.want > s.synced
	s.cond.Broadcast()
	return s.queued
}

// syncActive fsyncs the active segment and returns the offset and the
// position it covers. Reading the head before the segment list matters: a
// roll in between has already fsync'd the old segment. The size is read
// before the fsync, so it covers only bytes already written.
func (l *Log) syncActive() (int64, checkpoint, error) {
	if err := l.Err(); err != nil {
		return 0, checkpoint{}, err
	}
	upto := l.head.Load()
	s := l.active()
	if !s.acquire() {
		return 0, checkpoint{}, ErrClosed
	}
	defer s.release()
	point := checkpoint{base: s.base, pos: s.size.Load()}
	if err := s.log.Sync(); err != nil {
		return 0, checkpoint{}, l.fail(fmt.Errorf("sync %s: %w", s.path, err))
	}
	return upto, point, nil
}

// checkpointNow records in CHECKPOINT how far the active segment is
// fsync'd, if that moved. Recovery treats damage before that point as
// corruption rather than a torn write.
func (l *Log) checkpointNow() error {
	l.sync.mu.Lock()
	point, written := l.sync.point, l.sync.written
	l.sync.mu.Unlock()
	if point == written {
		return nil
	}
	if err := writeCheckpoint(l.fs, l.dir, point); err != nil {
		return err
	}
	l.sync.mu.Lock()
	l.sync.written = point
	l.sync.mu.Unlock()
	return nil
}

// Sync fsyncs everything appended so far.
func (l *Log) Sync() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.waitSynced(l.head.Load())
}

// syncNow is the interval fsync; errors are sticky and logged.
func (l *Log) syncNow() {
	if err := l.waitSynced(l.head.Load()); err != nil && !errors.Is(err, ErrClosed) {
		l.o.Logger.Error("interval fsync", "dir", l.dir, "err", err)
	}
}
