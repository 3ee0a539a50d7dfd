package passbook

import (
	"fmt"

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
