package offsets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	sqlvfs "github.com/ncruces/go-sqlite3/vfs"

	"github.com/passbook-log/passbook/vfs"
)

// fsVFS is SQLite's VFS over a vfs.FS (Options.FS): the database, its WAL
// and journals are files of that FS, so vfs.MemFS.Crash cuts the power
// under the store exactly as under the logs. Locks are kept in this
// process (a vfs.FS has none to share with others); the WAL index is
// SQLite's own shared memory on a file in a temporary directory of the
// OS, which SQLite rebuilds from the WAL when the first connection opens
// the database.
type fsVFS struct {
	fsys   vfs.FS
	name   string
	shmDir string

	mu    sync.Mutex
	locks map[string]*fsLock
}

// newFSVFS registers an fsVFS and returns the URI that opens path with it.
// walVFSSeq numbers the SQLite VFSs this package registers (one per
// store), so their names never collide.
var walVFSSeq atomic.Int64

func newFSVFS(fsys vfs.FS, path string) (string, *fsVFS, error) {
	dir, err := os.MkdirTemp("", "passbook-offsets-shm-")
	if err != nil {
		return "", nil, err
	}
	v := &fsVFS{fsys: fsys, name: fmt.Sprintf("passbook-offsets-fs-%d", walVFSSeq.Add(1)), shmDir: dir, locks: map[string]*fsLock{}}
	sqlvfs.Register(v.name, v)
	u := url.URL{Scheme: "file", Path: path, RawQuery: "vfs=" + v.name}
	return u.String(), v, nil
}

func (v *fsVFS) unregister() {
	if v != nil {
		sqlvfs.Unregister(v.name)
		os.RemoveAll(v.shmDir)
	}
}

func (v *fsVFS) Open(name string, flags sqlvfs.OpenFlag) (sqlvfs.File, sqlvfs.OpenFlag, error) {
	if name == "" || flags&(sqlvfs.OPEN_MAIN_DB|sqlvfs.OPEN_WAL|sqlvfs.OPEN_MAIN_JOURNAL) == 0 {
		// Temporary files hold nothing that must survive: the OS's.
		return sqlvfs.Find("").Open(name, flags)
	}
	oflag := os.O_RDONLY
	if flags&sqlvfs.OPEN_READWRITE != 0 {
		oflag = os.O_RDWR
	}
	_, statErr := v.fsys.Stat(name)
	created := false
	if flags&sqlvfs.OPEN_CREATE != 0 {
		oflag |= os.O_CREATE
		created = errors.Is(statErr, fs.ErrNotExist)
	}
	if flags&sqlvfs.OPEN_EXCLUSIVE != 0 {
		oflag |= os.O_EXCL
	}
	f, err := v.fsys.OpenFile(name, oflag, 0o644)
	if err != nil {
		return nil, flags, sqlvfs.SystemError(err, sqlite3.CANTOPEN)
	}
	w, ok := f.(io.WriterAt)
	if !ok {
		f.Close()
		return nil, flags, fmt.Errorf("offsets: %T has no WriteAt", f)
	}
	file := &fsFile{File: f, w: w, vfs: v, name: name, dirty: created, deleteOnClose: flags&sqlvfs.OPEN_DELETEONCLOSE != 0}
	v.mu.Lock()
	if v.locks[name] == nil {
		v.locks[name] = &fsLock{}
	}
	file.lock = v.locks[name]
	v.mu.Unlock()
	if flags&sqlvfs.OPEN_MAIN_DB != 0 {
		file.shm = sqlvfs.NewSharedMemory(filepath.Join(v.shmDir, filepath.Base(name)+"-shm"), flags)
	}
	return file, flags, nil
}

func (v *fsVFS) Delete(name string, syncDir bool) error {
	if err := v.fsys.Remove(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return sqlite3.IOERR_DELETE_NOENT
		}
		return err
	}
	if syncDir {
		return v.fsys.SyncDir(filepath.Dir(name))
	}
	return nil
}

func (v *fsVFS) Access(name string, flags sqlvfs.AccessFlag) (bool, error) {
	_, err := v.fsys.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (v *fsVFS) FullPathname(name string) (string, error) { return filepath.Clean(name), nil }

// fsLock is a file's lock state shared by this process's connections,
// SQLite's five levels.
type fsLock struct {
	mu        sync.Mutex
	shared    int
	reserved  *fsFile
	pending   *fsFile
	exclusive *fsFile
}

type fsFile struct {
	vfs.File
	w             io.WriterAt
	vfs           *fsVFS
	name          string
	lock          *fsLock
	level         sqlvfs.LockLevel
	shm           sqlvfs.SharedMemory
	dirty         bool // created: its directory entry needs a SyncDir
	deleteOnClose bool
}

var (
	_ sqlvfs.FileLockState    = (*fsFile)(nil)
	_ sqlvfs.FileSharedMemory = (*fsFile)(nil)
)

func (f *fsFile) WriteAt(p []byte, off int64) (int, error) { return f.w.WriteAt(p, off) }

func (f *fsFile) Sync(flags sqlvfs.SyncFlag) error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.dirty {
		if err := f.vfs.fsys.SyncDir(filepath.Dir(f.name)); err != nil {
			return err
		}
		f.dirty = false
	}
	return nil
}

func (f *fsFile) Size() (int64, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f *fsFile) Close() error {
	if f.shm != nil {
		f.shm.Close()
	}
	f.Unlock(sqlvfs.LOCK_NONE)
	err := f.File.Close()
	if f.deleteOnClose {
		err = errors.Join(err, f.vfs.fsys.Remove(f.name))
	}
	return err
}

func (f *fsFile) SharedMemory() sqlvfs.SharedMemory { return f.shm }

func (f *fsFile) LockState() sqlvfs.LockLevel { return f.level }

func (f *fsFile) Lock(level sqlvfs.LockLevel) error {
	l := f.lock
	l.mu.Lock()
	defer l.mu.Unlock()
	if f.level >= level {
		return nil
	}
	switch level {
	case sqlvfs.LOCK_SHARED:
		if (l.pending != nil && l.pending != f) || (l.exclusive != nil && l.exclusive != f) {
			return sqlite3.BUSY
		}
		l.shared++
	case sqlvfs.LOCK_RESERVED:
		if l.reserved != nil && l.reserved != f {
			return sqlite3.BUSY
		}
		l.reserved = f
	case sqlvfs.LOCK_EXCLUSIVE:
		if l.pending != nil && l.pending != f {
			return sqlite3.BUSY
		}
		l.pending = f
		if l.shared > 1 {
			return sqlite3.BUSY // others still read; pending keeps new ones out
		}
		l.exclusive = f
	}
	f.level = level
	return nil
}

func (f *fsFile) Unlock(level sqlvfs.LockLevel) error {
	l := f.lock
	l.mu.Lock()
	defer l.mu.Unlock()
	if level < sqlvfs.LOCK_EXCLUSIVE { // also a pending one Lock left
		if l.exclusive == f {
			l.exclusive = nil
		}
		if l.pending == f {
			l.pending = nil
		}
	}
	if level < sqlvfs.LOCK_RESERVED && l.reserved == f {
		l.reserved = nil
	}
	if level == sqlvfs.LOCK_NONE && f.level >= sqlvfs.LOCK_SHARED {
		l.shared--
	}
	f.level = min(f.level, level)
	return nil
}

func (f *fsFile) CheckReservedLock() (bool, error) {
	l := f.lock
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved != nil && l.reserved != f, nil
}

func (f *fsFile) SectorSize() int { return 0 }

func (f *fsFile) DeviceCharacteristics() sqlvfs.DeviceCharacteristic { return 0 }

// openURI returns what opens the database at path on fsys with
// sqlite3.Open or OpenFlags — path itself on the OS (fsys nil or
// vfs.OS()) — for Verify and Repair, which read the tables directly;
// release drops what it registered, once the connection is closed.
func openURI(fsys vfs.FS, path string) (uri string, release func(), err error) {
	if fsys == nil || fsys == vfs.OS() {
		return path, func() {}, nil
	}
	uri, v, err := newFSVFS(fsys, path)
	if err != nil {
		return "", nil, err
	}
	return uri, v.unregister, nil
}
