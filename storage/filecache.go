package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/passbook-log/passbook/vfs"
)

// DefaultMaxOpenFiles is the bound passbook.Open gives its FileCache when
// none is set: about 330 segments' files at once, whatever the number of
// partitions.
const DefaultMaxOpenFiles = 1000

// FileCache bounds the file descriptors that the segment files (the .log,
// .index and .timeindex of every segment) of the logs sharing it hold.
// A segment's files are opened when it is first used and closed again,
// least recently used first, once more than the bound are open and nobody
// is using them; the next use opens them again. A reader holding a
// segment (from Read, ReadBatches or a Reader positioned in it) pins its
// files open until it lets go, so a segment that retention deletes or the
// cleaner replaces stays readable to it, as with files held forever.
//
// Kafka has no such bound: a broker keeps every segment's files open and
// relies on a large ulimit -n. passbook serve raises its soft
// RLIMIT_NOFILE to the hard limit at start as well, but a data directory
// of 10,000 partitions and 100,000 segments needs its files in a cache.
//
// A FileCache is safe for concurrent use. Its zero value is not valid:
// use NewFileCache.
type FileCache struct {
	max int // 0: no bound

	mu   sync.Mutex
	idle idleList // open files nobody uses, least recently used first
	open int      // open files, idle or in use

	hits, misses, evictions atomic.Int64
}

// NewFileCache returns a cache that keeps at most maxOpen segment files
// open (0: no bound; files then stay open until their segment is closed).
// The bound is exceeded only while more files than it are in use at once.
func NewFileCache(maxOpen int) *FileCache {
	if maxOpen < 0 {
		maxOpen = 0
	}
	return &FileCache{max: maxOpen}
}

// FileCacheStats is a snapshot of a FileCache's counters.
type FileCacheStats struct {
	Open      int   // segment files open now
	Max       int   // the bound; 0 when there is none
	Hits      int64 // uses of a file that was open
	Misses    int64 // uses that opened the file
	Evictions int64 // files closed to stay within the bound
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	open := c.open
	c.mu.Unlock()
	return FileCacheStats{Open: open, Max: c.max, Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

// openFile returns a cached handle on name, opening it now (so that an
// error shows at once, as with os.OpenFile). Later opens drop the flags
// that create or truncate.
func (c *FileCache) openFile(fsys vfs.FS, name string, flag int, perm fs.FileMode) (*cachedFile, error) {
	f := &cachedFile{c: c, fs: fsys, name: name, flag: flag, perm: perm}
	// The file is no one else's yet: it is opened outside the cache's
	// lock, which would otherwise make the partitions that Open opens
	// side by side wait for each other's open(2). Out of descriptors, it
	// is opened again under the lock, after closing idle files.
	h, err := fsys.OpenFile(name, flag, perm)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		f.f = h
		c.open++
		c.misses.Add(1)
		c.evictLocked(0)
	} else if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return nil, err
	} else if err := f.openLocked(); err != nil {
		return nil, err
	}
	f.flag &^= os.O_CREATE | os.O_TRUNC | os.O_EXCL
	f.idleLocked()
	return f, nil
}

// evictLocked closes idle files, least recently used first, until the
// bound holds or want more are closed.
func (c *FileCache) evictLocked(want int) {
	for c.idle.head != nil && (want > 0 || (c.max > 0 && c.open > c.max)) {
		f := c.idle.head
		c.idle.remove(f)
		f.f.Close() // nothing written is lost: only an fsync makes it durable, and a later fsync of the file covers it
		f.f = nil
		c.open--
		c.evictions.Add(1)
		want--
	}
}

// cachedFile is a vfs.File whose descriptor the cache may close while
// nobody uses it; every operation opens it again if needed.
type cachedFile struct {
	c    *FileCache
	fs   vfs.FS
	name string
	flag int
	perm fs.FileMode

	// Under c.mu:
	f          vfs.File    // nil while closed
	users      int         // operations in flight and pins
	held       bool        // never evicted (see holdOpen)
	closed     bool        // Close was called
	idle       bool        // in c.idle: open and unused
	prev, next *cachedFile // in c.idle

	posMu sync.Mutex
	pos   int64 // for Read
}

// openLocked opens the file; on EMFILE or ENFILE it closes idle files
// and tries once more.
func (f *cachedFile) openLocked() error {
	h, err := f.fs.OpenFile(f.name, f.flag, f.perm)
	if err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && f.c.idle.n > 0 {
		f.c.evictLocked(max(f.c.idle.n/2, 1))
		h, err = f.fs.OpenFile(f.name, f.flag, f.perm)
	}
	if err != nil {
		return err
	}
	f.f = h
	f.c.open++
	f.c.misses.Add(1)
	f.c.evictLocked(0)
	return nil
}

func (f *cachedFile) idleLocked() {
	if f.users == 0 && f.f != nil && !f.held && !f.idle {
		f.c.idle.pushBack(f)
		f.c.evictLocked(0)
	}
}

// get returns the open file for one operation; put must follow.
func (f *cachedFile) get() (vfs.File, error) {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	if f.f != nil {
		c.hits.Add(1)
		if f.idle {
			c.idle.remove(f)
		}
	} else if err := f.openLocked(); err != nil {
		return nil, fmt.Errorf("reopen segment file: %w", err)
	}
	f.users++
	return f.f, nil
}

func (f *cachedFile) put() {
	f.c.mu.Lock()
	f.users--
	f.idleLocked()
	f.c.mu.Unlock()
}

// pin keeps the file open until unpin, opening it now. A failure to open
// is returned by the next operation instead.
func (f *cachedFile) pin() {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.closed {
		return
	}
	if f.f == nil {
		if err := f.openLocked(); err != nil {
			f.users++
			return
		}
	} else if f.idle {
		c.idle.remove(f)
	}
	f.users++
}

func (f *cachedFile) unpin() {
	f.c.mu.Lock()
	if f.users > 0 {
		f.users--
	}
	f.idleLocked()
	f.c.mu.Unlock()
}

// holdOpen opens the file if needed and keeps it open until Close: for a
// file about to be replaced or removed under the segment that names it.
func (f *cachedFile) holdOpen() error {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	if f.f == nil {
		if err := f.openLocked(); err != nil {
			return err
		}
	}
	if f.idle {
		c.idle.remove(f)
	}
	f.held = true
	return nil
}

func (f *cachedFile) Close() error {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	f.closed = true
	if f.f == nil {
		return nil
	}
	if f.idle {
		c.idle.remove(f)
	}
	err := f.f.Close()
	f.f = nil
	c.open--
	return err
}

func (f *cachedFile) Name() string { return f.name }

func (f *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	h, err := f.get()
	if err != nil {
		return 0, err
	}
	defer f.put()
	return h.ReadAt(p, off)
}

// Read reads from the file's own position, kept here so that it survives
// the descriptor being closed and opened again.
func (f *cachedFile) Read(p []byte) (int, error) {
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f *cachedFile) Write(p []byte) (int, error) {
	h, err := f.get()
	if err != nil {
		return 0, err
	}
	defer f.put()
	return h.Write(p)
}

func (f *cachedFile) Sync() error {
	h, err := f.get()
	if err != nil {
		return err
	}
	defer f.put()
	return h.Sync()
}

func (f *cachedFile) Truncate(size int64) error {
	h, err := f.get()
	if err != nil {
		return err
	}
	defer f.put()
	return h.Truncate(size)
}

func (f *cachedFile) Stat() (fs.FileInfo, error) {
	h, err := f.get()
	if err != nil {
		return nil, err
	}
	defer f.put()
	return h.Stat()
}

var _ vfs.File = (*cachedFile)(nil)

// idleList is a doubly linked list of idle files threaded through them
// (no allocation per use, unlike container/list).
type idleList struct {
	head, tail *cachedFile
	n          int
}

func (l *idleList) pushBack(f *cachedFile) {
	f.prev, f.next, f.idle = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = f
	} else {
		l.head = f
	}
	l.tail = f
	l.n++
}

func (l *idleList) remove(f *cachedFile) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		l.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		l.tail = f.prev
	}
	f.prev, f.next, f.idle = nil, nil, false
	l.n--
}
