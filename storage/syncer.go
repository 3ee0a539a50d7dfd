package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Syncer is a group commit shared by logs: it fsyncs the active
// segments of the logs whose Fsync appenders (or WaitDurable and Sync
// callers) wait, up to Parallel at once, and wakes each log's waiters as
// soon as its own segment is done. A log is queued once however many
// wait on it, and synced by one worker at a time; its waiters that come
// during its fsync go in its next. Give the same Syncer to every log of
// a data directory (Options.Syncer) and the dirty partitions of a commit
// window are fsync'd together, in parallel (on this project's disks 8–64
// parallel fdatasyncs cost 45–73 µs per file against ~200 µs alone), a
// freed worker taking the next queued log at once.
//
// Before a log's next fsync its worker waits for the waiters the last
// one released to come back, counted, not timed (Log.awaitReleased):
// without that, the appenders an fsync released would miss the next one,
// already started, and split into two groups taking turns.
//
// The zero Syncer is not usable; call NewSyncer. A Syncer has no
// goroutine while no log waits, and needs no Close.
type Syncer struct {
	parallel int

	mu      sync.Mutex
	queue   []*Log // logs waiting for a worker, first come first
	workers int    // goroutines taking logs from the queue

	files atomic.Int64
}

// maxRoundWait caps how long a log's next fsync waits for the waiters
// its last released; minRoundStall is the least it waits for the next of
// them.
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
	Files int64 // segment fsyncs made
}

// Stats returns what the Syncer has done so far.
func (y *Syncer) Stats() SyncerStats { return SyncerStats{Files: y.files.Load()} }

// enqueue queues l for a worker, starting one if fewer than parallel
// run. Called with l.sync.mu held, or none (lock order: a log's sync.mu,
// then the Syncer's mu).
func (y *Syncer) enqueue(l *Log) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.queue = append(y.queue, l)
	if y.workers < y.parallel {
		y.workers++
		go y.work()
	}
}

// work syncs queued logs until the queue is empty.
func (y *Syncer) work() {
	for {
		y.mu.Lock()
		if len(y.queue) == 0 {
			y.workers--
			y.queue = nil // let the backing array go
			y.mu.Unlock()
			return
		}
		l := y.queue[0]
		y.queue[0] = nil
		y.queue = y.queue[1:]
		y.mu.Unlock()
		l.awaitReleased()
		y.files.Add(1)
		if l.syncRound() {
			y.enqueue(l)
		}
	}
}
