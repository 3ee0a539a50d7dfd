package vfs

import (
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stat describes n under the given name.
func (n *memNode) stat(name string) fs.FileInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memInfo{name: name, size: int64(len(n.mu.data)), mode: n.mode, modTime: n.mu.modTime}
}

type memInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// memFile is an open file: a node plus an offset and access mode.
type memFile struct {
	name                string
	n                   *memNode
	read, write, append bool
	closed              atomic.Bool // atomic so that ReadAt need not take mu
	mu                  struct {
		sync.Mutex
		off int64
	}
}

// check returns the error for operation op if f is closed or lacks the
// access it needs.
func (f *memFile) check(op string, need, have bool) error {
	switch {
	case f.closed.Load():
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case need && !have:
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	if err := f.check("read", true, f.read); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(p, f.mu.off)
	f.mu.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil // Read, unlike ReadAt, reports EOF only with nothing read
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", true, f.read); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: syscall.EINVAL}
	}
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.mu.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.n.mu.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write", true, f.write); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if f.append {
		f.mu.off = int64(len(f.n.mu.data))
	}
	f.n.writeAtLocked(p, f.mu.off)
	f.mu.off += int64(len(p))
	return len(p), nil
}

// WriteAt writes at off, as os.File.WriteAt (an append-only file
// refuses it). It is not part of File: the storage engine only appends;
// the offset store's SQLite needs it (offsets.Options.FS).
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("writeat", true, f.write); err != nil {
		return 0, err
	}
	if off < 0 || f.append {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	f.n.writeAtLocked(p, off)
	return len(p), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

func (f *memFile) Sync() error {
	if err := f.check("sync", false, true); err != nil {
		return err
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	f.n.syncLocked()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true, f.write); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	f.n.resizeLocked(size)
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	if err := f.check("stat", false, true); err != nil {
		return nil, err
	}
	return f.n.stat(filepath.Base(f.name)), nil
}

func (f *memFile) Name() string { return f.name }
