package vfs

import (
	"io/fs"
	"syscall"
	"time"
)

var _ MapFS = (*MemFS)(nil)

// MapFile maps the existing file name. A mapped write changes the file's
// current contents as a Write does, and like one it is unsynced until a
// File.Sync of the file: Crash drops it, or with Tear keeps any part of
// it, page by page with Pages, as it does unsynced writes. Allocate
// zero-extends the current contents (also unsynced until a Sync).
func (m *MemFS) MapFile(name string, reserve int64) (MappedFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(name))
	if err == nil && n.isDir {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: name, Err: err}
	}
	return &memMapped{name: name, n: n}, nil
}

type memMapped struct {
	name   string
	n      *memNode
	closed bool
}

func (f *memMapped) Name() string { return f.name }

func (f *memMapped) Size() int64 {
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	return int64(len(f.n.mu.data))
}

func (f *memMapped) Allocate(size int64) error {
	if f.closed {
		return errMapClosed(f.name)
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if size > int64(len(f.n.mu.data)) {
		f.n.resizeLocked(size)
	}
	return nil
}

// WriteAt refuses bytes past the file's current length, as a store past
// a real mapping's end of file faults: the engine must allocate first,
// and must not truncate a file it still writes through a mapping.
func (f *memMapped) WriteAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errMapClosed(f.name)
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if size := int64(len(f.n.mu.data)); off < 0 || off+int64(len(p)) > size {
		return 0, errMapRange(f.name, off, len(p), size)
	}
	f.n.mutableFromLocked(off)
	copy(f.n.mu.data[off:], p)
	f.n.mu.modTime = time.Now()
	return len(p), nil
}

func (f *memMapped) Populate(off, n int64) {}

// Release has nothing to drop: a MemFS file's bytes are its own.
func (f *memMapped) Release(off, n int64) {}

func (f *memMapped) Close() error {
	if f.closed {
		return errMapClosed(f.name)
	}
	f.closed = true
	return nil
}
