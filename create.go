package passbook

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/storage"
)

// createOutsideLock runs open, which creates the partitions of the topic
// name, with db.mu released: creating thousands of partitions takes
// seconds, and appends, reads and other topics' creation and deletion must
// not wait for it. The caller holds db.mu and has checked that name is
// free; the name stays reserved (db.creating) until open returns, and
// db.mu is held again when createOutsideLock returns. A crash meanwhile
// leaves a topic directory without topic.json, which Open removes (or,
// with NoCreate, skips). If the DB was closed meanwhile the new topic is
// closed and the error matches ErrClosed.
func (db *DB) createOutsideLock(name string, open func() (*Topic, error)) (*Topic, error) {
	db.creating[name] = true
	db.building.Add(1)
	db.mu.Unlock()
	t, err := open()
	db.mu.Lock()
	delete(db.creating, name)
	db.building.Done()
	if err != nil {
		return nil, err
	}
	if db.closed {
		t.close()
		return nil, fmt.Errorf("passbook: create topic %s: %w", name, ErrClosed)
	}
	return t, nil
}

// FileStats returns the counters of the cache that bounds the data
// directory's open segment files (Options.MaxOpenSegmentFiles).
func (db *DB) FileStats() storage.FileCacheStats { return db.files.Stats() }

// openedPartition is the outcome of opening one partition.
type openedPartition struct {
	l   *storage.Log
	err error
}

// openPartitions opens (or creates) the c.Partitions partitions of the
// topic name, several at a time: each Open spends most of its time
// waiting for fsyncs (of its directory, active segment and checkpoint),
// which a disk serves side by side. 10,000 partitions opened one by one
// took about a minute.
func (db *DB) openPartitions(name string, c TopicConfig, d storage.Durability) []openedPartition {
	out := make([]openedPartition, c.Partitions)
	parallel(c.Partitions, func(p int) { out[p].l, out[p].err = db.openPartition(name, c, d, p) })
	return out
}

// openPartition opens (or creates) partition p of the topic name.
func (db *DB) openPartition(name string, c TopicConfig, d storage.Durability, p int) (*storage.Log, error) {
	o := c.storageOptions()
	o.FS, o.Durability, o.Now, o.Logger = db.fs, d, db.o.Now, db.o.Logger.With("topic", name, "partition", p)
	// The data directory's LOCK covers the partitions: none
	// holds a lock file (and a descriptor) of its own.
	o.Files, o.Syncer, o.CallerLocked = db.files, db.syncer, true
	return storage.Open(layout.PartitionDir(db.dir, name, p), &o)
}

// parallel runs max(openParallelism, 4×GOMAXPROCS) partitions at once
// when there are parallelFrom or more: enough to keep the cores busy with
// a clean Open's reads and opens, and the disk with the fsyncs of the
// others.
const (
	openParallelism = 16
	parallelFrom    = 64
)

// parallel runs each(p) for p in [0, n), several at a time when n is
// at least parallelFrom: a partition's Open and Close wait for fsyncs
// (its directory, active segment, indexes and checkpoint), which a disk
// serves side by side. Smaller counts run in order, as before: they are
// quick, and a fault injected at the i-th file operation (cmd/torture)
// then hits the same partition on every run of a seed.
func parallel(n int, each func(p int)) {
	workers := max(openParallelism, 4*runtime.GOMAXPROCS(0))
	if n < parallelFrom {
		workers = 1
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range work {
				each(p)
			}
		})
	}
	for p := range n {
		work <- p
	}
	close(work)
	wg.Wait()
}
