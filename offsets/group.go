package offsets

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/passbook-log/passbook/vfs"
)

// groupSync is SyncGroup's group commit of the WAL's fsync. A write on
// the direct connection takes a ticket under the store's lock, after
// SQLite wrote it to the WAL; wait returns once an fsync that began after
// that ticket was taken has finished. The first waiter that finds no
// fsync running runs one for every ticket taken so far; the others wait
// for it, and one of them runs the next for what it did not cover.
type groupSync struct {
	written atomic.Uint64 // tickets taken (under the store's lock)
	sync    func() error  // fsyncs the WAL

	mu      sync.Mutex
	cond    sync.Cond
	synced  uint64 // every ticket up to this is durable
	running bool
	err     error // a failed fsync: sticky (see wait)

	syncs atomic.Uint64 // fsyncs run, for Stats
}

func newGroupSync(sync func() error) *groupSync {
	g := &groupSync{sync: sync}
	g.cond.L = &g.mu
	return g
}

// ticket is taken under the store's lock, after a write.
func (g *groupSync) ticket() uint64 { return g.written.Add(1) }

// wait returns once ticket t is durable. After an fsync failed, the WAL's
// unsynced pages may be gone from the page cache with nothing on disk
// (Linux forgets the error once reported): no later commit can be called
// durable, and every wait fails with ErrUnavailable.
func (g *groupSync) wait(t uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.synced < t && g.err == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		target := g.written.Load()
		g.mu.Unlock()
		err := g.sync()
		g.syncs.Add(1)
		g.mu.Lock()
		g.running = false
		if errors.Is(err, ErrUnavailable) {
			g.err = err
		} else if err != nil {
			g.err = fmt.Errorf("%w: fsync of the WAL failed, so no commit since the last good one can be called durable: %w", ErrUnavailable, err)
		} else {
			g.synced = max(g.synced, target)
		}
		g.cond.Broadcast()
	}
	if g.synced >= t {
		return nil
	}
	return g.err
}

// syncCloser is the WAL handle a group commit fsyncs.
type syncCloser interface {
	Sync() error
	Close() error
}

// walSyncer fsyncs the WAL through a handle of its own, from open, opened
// on first use: an fsync through any handle writes out all of the file's
// dirty pages, those written through the direct connection's mapping
// too.
type walSyncer struct {
	open func() (syncCloser, error)
	mu   sync.Mutex
	f    syncCloser
}

func (w *walSyncer) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		f, err := w.open()
		if err != nil {
			return fmt.Errorf("open the WAL to fsync it: %w", err)
		}
		w.f = f
	}
	return w.f.Sync()
}

func (w *walSyncer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// openWAL opens the WAL of the database at path on fsys (vfs.OS: Sync
// is fdatasync(2)).
func openWAL(fsys vfs.FS, path string) func() (syncCloser, error) {
	return func() (syncCloser, error) { return fsys.OpenFile(path+"-wal", os.O_RDWR, 0) }
}
