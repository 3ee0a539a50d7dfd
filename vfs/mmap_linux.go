package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var _ MapFS = osFS{}

// MapFile maps name shared, for reading and writing, with address space
// reserved for reserve bytes. Its own descriptor on the file stays open
// until Close, for fallocate.
func (osFS) MapFile(name string, reserve int64) (MappedFile, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	m := &osMapped{f: f, size: fi.Size()}
	if err := m.remap(max(reserve, m.size)); err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

type osMapped struct {
	f    *os.File
	size int64 // the file's length
	// mu is held shared by Populate, exclusively by whatever unmaps.
	mu     sync.RWMutex
	data   []byte // the mapping; len(data) may exceed size (never touched past it)
	closed bool
}

// mapUnit rounds mapping lengths (2 MiB: a huge page's worth).
const mapUnit = 2 << 20

// remap replaces the mapping with one of at least n bytes.
func (m *osMapped) remap(n int64) error {
	n = (n + mapUnit - 1) / mapUnit * mapUnit
	data, err := unix.Mmap(int(m.f.Fd()), 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &fs.PathError{Op: "mmap", Path: m.f.Name(), Err: err}
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
func (m *osMapped) Name() string { return m.f.Name() }

func (m *osMapped) Allocate(size int64) error {
	if m.closed {
		return errMapClosed(m.f.Name())
	}
	if size <= m.size {
		return nil
	}
	if err := unix.Fallocate(int(m.f.Fd()), 0, m.size, size-m.size); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			err = fmt.Errorf("%w: %w", ErrNoMapping, err)
		}
		// The file may have grown before the failure: keep size honest.
		if fi, serr := m.f.Stat(); serr == nil {
			m.size = fi.Size()
		}
		return &fs.PathError{Op: "fallocate", Path: m.f.Name(), Err: err}
	}
	m.size = size
	if size > int64(len(m.data)) {
		return m.remap(max(size, 2*int64(len(m.data))))
	}
	return nil
}

func (m *osMapped) WriteAt(p []byte, off int64) (int, error) {
	if m.closed {
		return 0, errMapClosed(m.f.Name())
	}
	if off < 0 || off+int64(len(p)) > m.size {
		return 0, errMapRange(m.f.Name(), off, len(p), m.size)
	}
	return copy(m.data[off:], p), nil
}

func (m *osMapped) Populate(off, n int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return
	}
	page := int64(os.Getpagesize())
	from, to := off/page*page, min(off+n, m.size, int64(len(m.data)))
	if from >= to {
		return
	}
	// MADV_POPULATE_WRITE (Linux 5.14) write-faults the pages in without
	// changing a byte; an older kernel refuses it, and the writer takes
	// the faults itself.
	unix.Madvise(m.data[from:to], unix.MADV_POPULATE_WRITE)
}

func (m *osMapped) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errMapClosed(m.f.Name())
	}
	m.closed = true
	err := unix.Munmap(m.data)
	m.data = nil
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	return err
}
