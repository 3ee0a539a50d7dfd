package offsets

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ncruces/go-sqlite3/vfs"
)

// The WAL through a shared memory mapping.
//
// Each commit appends one frame to the WAL: a 24-byte header and a page,
// which SQLite writes with two pwrite(2) calls — a third of a commit's
// time. Through a MAP_SHARED mapping of the WAL file the same bytes go
// straight into the page cache with a copy, no system call. That is as
// durable as a write(2) that returned: the pages belong to the kernel, so
// a SIGKILL of the process loses nothing, and an fsync of the file (a
// checkpoint, or synchronous=FULL) writes them out like any others. Only
// the direct connection, in exclusive locking mode, writes through the
// mapping: once the store is shared, other connections (which use the
// plain OS VFS) could truncate the file under it, so the mapping is
// dropped for good (walVFS.share). The file is grown with fallocate(2)
// before it is mapped, so a full disk is an error returned to SQLite,
// never a SIGBUS; where fallocate is unsupported, the plain writes stay.

const walMapChunk = 4 << 20 // the mapping grows by this much

// walVFS is the OS VFS with the WAL files it opens mapped. One is
// registered per store, under its own name.
type walVFS struct {
	vfs.VFSFilename
	name   string
	shared atomic.Bool

	mu    sync.Mutex
	files map[*mappedWAL]struct{}
}

// newWALVFS registers a new walVFS and returns the URI that opens path
// with it, and the VFS (nil: open path as it is).
func newWALVFS(path string) (string, *walVFS, error) {
	osVFS, ok := vfs.Find("").(vfs.VFSFilename)
	if !ok {
		return path, nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	v := &walVFS{VFSFilename: osVFS, name: fmt.Sprintf("passbook-offsets-%d", walVFSSeq.Add(1)), files: map[*mappedWAL]struct{}{}}
	vfs.Register(v.name, v)
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "vfs=" + v.name}
	return u.String(), v, nil
}

// OpenFilename opens the file as the OS VFS does and maps it if it is a
// WAL.
func (v *walVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, outFlags, err := v.VFSFilename.OpenFilename(name, flags)
	if err != nil || flags&vfs.OPEN_WAL == 0 || v.shared.Load() {
		return f, outFlags, err
	}
	fd, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return f, outFlags, nil
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	m := &mappedWAL{File: f, fd: int(fd.Fd()), size: size, vfs: v}
	v.mu.Lock()
	v.files[m] = struct{}{}
	v.mu.Unlock()
	return m, outFlags, nil
}

// share drops every mapping: from now on the WAL is written with plain
// writes. The caller holds the store's lock, so no write is under way.
func (v *walVFS) share() {
	if v == nil {
		return
	}
	v.shared.Store(true)
	v.mu.Lock()
	defer v.mu.Unlock()
	for m := range v.files {
		m.unmap()
	}
}

func (v *walVFS) unregister() {
	if v != nil {
		vfs.Unregister(v.name)
	}
}

// mappedWAL is a WAL file written through a shared mapping. size is its
// logical size (the end of what was written): the file itself is
// allocated ahead, in zeros, which SQLite's WAL recovery reads as the end
// of the log if the process dies.
type mappedWAL struct {
	vfs.File
	fd    int
	vfs   *walVFS
	data  []byte // the mapping; nil when there is none
	size  int64
	plain bool // mapping failed or the store is shared: plain writes
}

func (f *mappedWAL) WriteAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if end > int64(len(f.data)) && !f.grow(end) {
		n, err := f.File.WriteAt(p, off)
		f.size = max(f.size, off+int64(n))
		return n, err
	}
	copy(f.data[off:end], p)
	f.size = max(f.size, end)
	return len(p), nil
}

// grow maps the file up to at least end, reporting false if writes must
// go the plain way instead.
func (f *mappedWAL) grow(end int64) bool {
	if !f.mapped() {
		f.unmap()
		return false
	}
	n := (end + walMapChunk - 1) / walMapChunk * walMapChunk
	if int64(int(n)) != n {
		f.plain = true
		return false
	}
	// Allocated before mapped: a full disk fails here, not as SIGBUS.
	if err := syscall.Fallocate(f.fd, 0, 0, n); err != nil {
		f.plain = true
		return false
	}
	f.unmap()
	data, err := syscall.Mmap(f.fd, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.plain = true
		return false
	}
	f.data = data
	return true
}

func (f *mappedWAL) unmap() {
	if f.data != nil {
		syscall.Munmap(f.data) // dirty pages stay in the page cache
		f.data = nil
	}
}

// mapped reports whether this file is still written by this connection
// alone: once the store is shared, others append to it too, and the file
// itself says how long it is.
func (f *mappedWAL) mapped() bool { return !f.plain && !f.vfs.shared.Load() }

// ReadAt reads as from a file of the logical size: past it, a short read.
func (f *mappedWAL) ReadAt(p []byte, off int64) (int, error) {
	if !f.mapped() {
		return f.File.ReadAt(p, off)
	}
	if off >= f.size {
		clear(p)
		return 0, io.EOF
	}
	if rest := f.size - off; int64(len(p)) > rest {
		n, err := f.File.ReadAt(p[:rest], off)
		clear(p[n:])
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return f.File.ReadAt(p, off)
}

func (f *mappedWAL) Size() (int64, error) {
	if !f.mapped() {
		return f.File.Size()
	}
	return f.size, nil
}

func (f *mappedWAL) Truncate(size int64) error {
	f.unmap()
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.size = size
	return nil
}

func (f *mappedWAL) Close() error {
	f.unmap()
	f.vfs.mu.Lock()
	delete(f.vfs.files, f)
	f.vfs.mu.Unlock()
	return f.File.Close()
}
