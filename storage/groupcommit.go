package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// WaitDurable returns once the records below offset end meet durability
// d, as an append with d would before returning (DefaultDurability
// meaning the log's). It lets a caller append with InOS and wait later,
// so that appends made meanwhile, from any caller, share the fsync. end
// must not be past the head.
func (l *Log) WaitDurable(end int64, d Durability) error { return l.durable(d, end) }

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

// syncer is the group commit: one fsync at a time, and every appender
// whose records it covered returns when it completes.
type syncer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	synced  int64      // offsets below this are fsync'd
	point   checkpoint // where the last fsync got to
	written checkpoint // what CHECKPOINT says
	running bool
	err     error
}

// waitSynced returns once every offset below target is fsync'd. The first
// waiter to find no fsync running starts one that covers everything
// written so far; the others wait for it.
func (l *Log) waitSynced(target int64) error {
	s := &l.sync
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < target {
		if s.err != nil {
			return s.err
		}
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.mu.Unlock()
		// The appenders the last fsync released are appending again right
		// now; letting them finish first puts them in this fsync rather
		// than the next.
		for range 4 {
			runtime.Gosched()
		}
		upto, point, err := l.syncActive()
		s.mu.Lock()
		s.running = false
		if err != nil {
			s.err = err
		} else if upto > s.synced {
			s.synced, s.point = upto, point
		}
		s.cond.Broadcast()
	}
	return nil
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
