package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Syncer is a group commit shared by logs: it fsyncs, in rounds, the
// active segments of the logs whose Fsync appenders (or WaitDurable and
// Sync callers) wait, up to Parallel files at once, and wakes each log's
// waiters as soon as its own segment is done. Give the same Syncer to
// every log of a data directory (Options.Syncer) and a round covers all
// the partitions written since the last: one commit window, its fsyncs
// in parallel (on this project's disks 8–64 parallel fdatasyncs cost
// 50–73 µs per file against ~200 µs alone).
//
// A round starts when a log is waiting, but first waits for the waiters
// the last round released to come back, counted, not timed: until as
// many waits have begun since that round as it released, or, for
// appenders that do not come back, until they stop coming.
// Without that wait the appenders a round released would miss the next
// round, already started, and split into two groups taking turns.
//
// The zero Syncer is not usable; call NewSyncer. A Syncer has no
// goroutine while no log waits, and needs no Close.
type Syncer struct {
	parallel int

	mu      sync.Mutex
	queue   []*Log        // logs waiting for the next round
	running bool          // a goroutine runs rounds
	arrived int           // waits begun since the last round began (those on a log being synced not counted)
	expect  int           // waiters the last round released
	full    chan struct{} // closed when arrived reaches expect, while a round waits for it
	bound   time.Duration // the last round's length (awaitReleased)

	rounds atomic.Int64
	files  atomic.Int64
}

// maxRoundWait caps how long a round waits for the last one's
// appenders; minRoundStall is the least it waits for the next of them.
const (
	maxRoundWait  = 5 * time.Millisecond
	minRoundStall = 20 * time.Microsecond
)

// DefaultSyncParallel is how many fsyncs a Syncer runs at once when
// NewSyncer is given no number.
const DefaultSyncParallel = 64

// NewSyncer returns a Syncer that runs up to parallel fsyncs at once
// (DefaultSyncParallel when parallel ≤ 0).
func NewSyncer(parallel int) *Syncer {
	if parallel <= 0 {
		parallel = DefaultSyncParallel
	}
	return &Syncer{parallel: parallel}
}

// SyncerStats counts a Syncer's work.
type SyncerStats struct {
	Rounds int64 // rounds run
	Files  int64 // segment fsyncs they made
}

// Stats returns what the Syncer has done so far.
func (y *Syncer) Stats() SyncerStats {
	return SyncerStats{Rounds: y.rounds.Load(), Files: y.files.Load()}
}

// arrive records a wait on l: counted, when count, towards the round
// that waits for the last round's appenders; and, when enqueue, l joins
// the queue for the next round. Called with l.sync.mu held (lock order:
// a log's sync.mu, then the Syncer's mu).
func (y *Syncer) arrive(l *Log, enqueue, count bool) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if count {
		y.arrived++
		if y.full != nil && y.arrived >= y.expect {
			close(y.full)
			y.full = nil
		}
	}
	if enqueue {
		y.queue = append(y.queue, l)
		if !y.running {
			y.running = true
			go y.run()
		}
	}
}

// run runs rounds until no log waits.
func (y *Syncer) run() {
	var batch, again []*Log
	for {
		y.mu.Lock()
		if len(y.queue) == 0 {
			y.running = false
			y.mu.Unlock()
			return
		}
		y.awaitReleased()
		batch, y.queue = y.queue, batch[:0]
		y.arrived = 0
		y.mu.Unlock()

		began := time.Now()
		released, again := y.round(batch, again[:0])
		took := time.Since(began)

		y.mu.Lock()
		y.expect = released
		y.bound = took
		y.queue = append(y.queue, again...)
		y.mu.Unlock()
		clear(batch)
		clear(again)
	}
}

// awaitReleased waits, with y.mu held, until as many waits have begun
// since the last round began as that round released, so that the
// appenders it woke are in the next round. Appenders that do not come
// back are waited for only while others still do: the wait ends when a
// stall (a quarter of the last round's length) passes with no new
// arrival, and after maxRoundWait in all.
func (y *Syncer) awaitReleased() {
	if y.arrived >= y.expect || y.bound <= 0 {
		return
	}
	stall := max(y.bound/4, minRoundStall)
	t := time.NewTimer(stall)
	defer t.Stop()
	began := time.Now()
	for y.arrived < y.expect {
		full := make(chan struct{})
		y.full = full
		seen := y.arrived
		y.mu.Unlock()
		timeout := false
		select {
		case <-full:
		case <-t.C:
			timeout = true
		}
		y.mu.Lock()
		y.full = nil
		if timeout {
			if y.arrived == seen || time.Since(began) >= maxRoundWait {
				return
			}
			t.Reset(stall)
		}
	}
}

// round syncs every log of batch, up to y.parallel at once, and returns
// how many waiters it released and the logs that must go in the next
// round (appended to again).
func (y *Syncer) round(batch, again []*Log) (int, []*Log) {
	y.rounds.Add(1)
	y.files.Add(int64(len(batch)))
	if len(batch) == 1 || y.parallel == 1 {
		released := 0
		for _, l := range batch {
			n, more := l.syncRound()
			released += n
			if more {
				again = append(again, l)
			}
		}
		return released, again
	}
	var (
		next     atomic.Int64
		released atomic.Int64
		mu       sync.Mutex
		wg       sync.WaitGroup
	)
	for range min(len(batch), y.parallel) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(batch) {
					return
				}
				n, more := batch[i].syncRound()
				released.Add(int64(n))
				if more {
					mu.Lock()
					again = append(again, batch[i])
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return int(released.Load()), again
}
