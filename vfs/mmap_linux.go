package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var _ MapFS = osFS{}

// MapFile maps name shared, for reading and writing, with address space
// reserved for reserve bytes. It holds no descriptor on the file (the
// mapping keeps the file itself): Allocate opens it by name for its
// fallocate, so a FileCache's bound on descriptors still holds.
func (osFS) MapFile(name string, reserve int64) (MappedFile, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	m := &osMapped{name: name, size: fi.Size()}
	if err := m.remap(f, max(reserve, m.size)); err != nil {
		return nil, err
	}
	return m, nil
}

type osMapped struct {
	name string
	size int64 // the file's length; only the writer's goroutine reads it
	// mu is held shared by Populate, exclusively by whatever unmaps.
	mu     sync.RWMutex
	data   []byte // the mapping; len(data) may exceed size (never touched past it)
	closed bool
}

// mapUnit rounds mapping lengths (2 MiB: a huge page's worth).
const mapUnit = 2 << 20

// remap replaces the mapping with one of at least n bytes of f.
func (m *osMapped) remap(f *os.File, n int64) error {
	n = (n + mapUnit - 1) / mapUnit * mapUnit
	data, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &fs.PathError{Op: "mmap", Path: m.name, Err: err}
	}
	m.mu.Lock()
	old := m.data
	m.data = data
	m.mu.Unlock()
	if old != nil {
		unix.Munmap(old) // its dirty pages stay in the page cache
	}
	return nil
}

func (m *osMapped) Size() int64  { return m.size }
func (m *osMapped) Name() string { return m.name }

func (m *osMapped) Allocate(size int64) error {
	if m.closed {
		return errMapClosed(m.name)
	}
	if size <= m.size {
		return nil
	}
	f, err := os.OpenFile(m.name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, m.size, size-m.size); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			err = fmt.Errorf("%w: %w", ErrNoMapping, err)
		}
		// The file may have grown before the failure: keep size honest.
		if fi, serr := f.Stat(); serr == nil {
			m.size = fi.Size()
		}
		return &fs.PathError{Op: "fallocate", Path: m.name, Err: err}
	}
	m.size = size
	if size > int64(len(m.data)) {
		return m.remap(f, max(size, 2*int64(len(m.data))))
	}
	return nil
}

// pwriteMin is the size from which WriteAt copies with pwrite(2) into
// the same page cache rather than through the mapping: the kernel then
// copies without a page fault per page, which stores into pages written
// back since (after every fdatasync) cost.
const pwriteMin = 32 << 10

func (m *osMapped) WriteAt(p []byte, off int64) (n int, err error) {
	if m.closed {
		return 0, errMapClosed(m.name)
	}
	if off < 0 || off+int64(len(p)) > m.size {
		return 0, errMapRange(m.name, off, len(p), m.size)
	}
	if len(p) >= pwriteMin {
		if f, err := os.OpenFile(m.name, os.O_WRONLY, 0); err == nil {
			n, err := f.WriteAt(p, off)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return n, err
		}
	}
	// A store the kernel cannot back (the file cut short behind the
	// mapping's back, an I/O error reading a page in) is a SIGBUS, which
	// would end the process: it becomes this write's error instead, so
	// that one partition fails its append, not the server.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(runtime.Error); !ok {
				panic(r)
			}
			n, err = 0, &fs.PathError{Op: "mapped write", Path: m.name, Err: fmt.Errorf("%v: %w", r, syscall.EIO)}
		}
	}()
	return copy(m.data[off:], p), nil
}

// Populate prepares pages of [off, off+n), which the caller took from
// below Size (which only grows while the file is mapped).
func (m *osMapped) Populate(off, n int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return
	}
	page := int64(os.Getpagesize())
	from, to := max(off, 0)/page*page, min(off+n, int64(len(m.data)))
	if from >= to {
		return
	}
	// MADV_POPULATE_WRITE (Linux 5.14) write-faults the pages in without
	// changing a byte; an older kernel refuses it, and the writer takes
	// the faults itself.
	unix.Madvise(m.data[from:to], unix.MADV_POPULATE_WRITE)
}

// Release drops the mapping's pages wholly inside [off, off+n) from the
// process's resident set (MADV_DONTNEED: for a shared file mapping the
// pages stay in the page cache, dirty ones until written back).
func (m *osMapped) Release(off, n int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return
	}
	page := int64(os.Getpagesize())
	from, to := (max(off, 0)+page-1)/page*page, min(off+n, int64(len(m.data)))/page*page
	if from >= to {
		return
	}
	unix.Madvise(m.data[from:to], unix.MADV_DONTNEED)
}

func (m *osMapped) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errMapClosed(m.name)
	}
	m.closed = true
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}
