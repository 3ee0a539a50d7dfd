package vfs

import (
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that models durability exactly, so that a test
// can cut the power at any point with Crash and see what a real disk
// would have kept.
//
// Each file has current contents and synced contents (what File.Sync last
// made durable). Each directory has current entries and synced entries
// (what FS.SyncDir last made durable); creating, renaming or removing a
// file or directory (MkdirAll included) changes only the current entries
// until its parent directory is synced. The root always exists.
//
// Names are cleaned with filepath.Clean and taken from the root, so "d/x"
// and "/d/x" are the same file. As on a real file system, a directory must
// exist before files are created in it. Errors are *fs.PathError or
// *os.LinkError holding syscall errnos, so errors.Is(err, fs.ErrNotExist)
// and friends work as they do with package os.
//
// MemFS is safe for concurrent use, including many goroutines reading a
// file while one writes it. The zero MemFS is not usable; call NewMem.
type MemFS struct {
	mu struct {
		sync.Mutex
		root  *memNode
		locks map[string]bool // cleaned names of held locks
	}
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS holding only the root directory.
func NewMem() *MemFS { return newMemFS(newMemDir(0o755)) }

func newMemFS(root *memNode) *MemFS {
	m := &MemFS{}
	m.mu.root = root
	m.mu.locks = make(map[string]bool)
	return m
}

// memNode is a file or a directory (an inode). Several names may point at
// one node only in the copy made by Crash (a rename across directories of
// which only the target was synced): then it behaves as a hard link.
type memNode struct {
	isDir bool
	mode  fs.FileMode

	// Directory entries, guarded by MemFS.mu.
	children map[string]*memNode // current
	synced   map[string]*memNode // durable

	// File contents, guarded by mu, which nests inside MemFS.mu.
	mu struct {
		sync.RWMutex
		data    []byte
		synced  []byte
		shared  bool // synced aliases data's backing array (see mutableFromLocked)
		modTime time.Time
	}
}

func newMemDir(perm fs.FileMode) *memNode {
	n := &memNode{
		isDir:    true,
		mode:     fs.ModeDir | perm&fs.ModePerm,
		children: make(map[string]*memNode),
		synced:   make(map[string]*memNode),
	}
	n.mu.modTime = time.Now()
	return n
}

func newMemFile(perm fs.FileMode) *memNode {
	n := &memNode{mode: perm & fs.ModePerm}
	n.mu.modTime = time.Now()
	return n
}

// syncLocked makes the current contents durable. Instead of copying them it
// aliases them; writes that would change the aliased bytes copy first.
func (n *memNode) syncLocked() {
	n.mu.synced = n.mu.data[:len(n.mu.data):len(n.mu.data)]
	n.mu.shared = true
}

// mutableFromLocked is called before bytes from index start on are changed:
// if they are also synced bytes, data gets its own copy.
func (n *memNode) mutableFromLocked(start int64) {
	if n.mu.shared && start < int64(len(n.mu.synced)) {
		n.mu.data = slices.Clone(n.mu.data)
		n.mu.shared = false
	}
}

// resizeLocked truncates or zero-extends the contents to size.
func (n *memNode) resizeLocked(size int64) {
	n.mu.modTime = time.Now()
	old := int64(len(n.mu.data))
	if size <= old {
		n.mu.data = n.mu.data[:size] // shrinking changes no bytes
		return
	}
	if size <= int64(cap(n.mu.data)) {
		n.mutableFromLocked(old) // the bytes past old may be synced ones
	}
	if size <= int64(cap(n.mu.data)) {
		n.mu.data = n.mu.data[:size]
		clear(n.mu.data[old:])
		return
	}
	data := make([]byte, size, max(size, 2*int64(cap(n.mu.data))))
	copy(data, n.mu.data)
	n.mu.data = data
	n.mu.shared = false
}

func (n *memNode) writeAtLocked(p []byte, off int64) {
	if end := off + int64(len(p)); end > int64(len(n.mu.data)) {
		n.resizeLocked(end)
	}
	n.mutableFromLocked(off)
	copy(n.mu.data[off:], p)
	n.mu.modTime = time.Now()
}

// memClean turns a name into an absolute, clean path.
func memClean(name string) string {
	return filepath.Clean(string(filepath.Separator) + name)
}

// lookupLocked finds the node at the clean path p.
func (m *MemFS) lookupLocked(p string) (*memNode, error) {
	n := m.mu.root
	if p == string(filepath.Separator) {
		return n, nil
	}
	for _, elem := range strings.Split(p[1:], string(filepath.Separator)) {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		if n = n.children[elem]; n == nil {
			return nil, syscall.ENOENT
		}
	}
	return n, nil
}

// parentLocked finds the directory holding the clean path p.
func (m *MemFS) parentLocked(p string) (dir *memNode, base string, err error) {
	if p == string(filepath.Separator) {
		return nil, "", syscall.EINVAL
	}
	d, base := filepath.Split(p)
	dir, err = m.lookupLocked(filepath.Clean(d))
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, base, nil
}

// OpenFile opens a file; flag may combine os.O_RDONLY, O_WRONLY, O_RDWR,
// O_CREATE, O_EXCL, O_TRUNC and O_APPEND. Directories cannot be opened.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.openLocked(name, flag, perm)
}

func (m *MemFS) openLocked(name string, flag int, perm fs.FileMode) (*memFile, error) {
	dir, base, err := m.parentLocked(memClean(name))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	n := dir.children[base]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	case n == nil:
		n = newMemFile(perm)
		dir.children[base] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EEXIST}
	case n.isDir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	if flag&os.O_TRUNC != 0 {
		n.mu.Lock()
		n.resizeLocked(0)
		n.mu.Unlock()
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	return &memFile{
		name:   name,
		n:      n,
		read:   acc != os.O_WRONLY,
		write:  acc != os.O_RDONLY,
		append: flag&os.O_APPEND != 0,
	}, nil
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked(memClean(name))
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	n := dir.children[base]
	switch {
	case n == nil:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	case n.isDir && len(n.children) > 0:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	return nil
}

// Rename renames a file or directory, replacing a file or an empty
// directory at newname, as rename(2) does.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	op, np := memClean(oldname), memClean(newname)
	odir, obase, err := m.parentLocked(op)
	if err != nil {
		return fail(err)
	}
	n := odir.children[obase]
	if n == nil {
		return fail(syscall.ENOENT)
	}
	ndir, nbase, err := m.parentLocked(np)
	if err != nil {
		return fail(err)
	}
	if n.isDir && strings.HasPrefix(np, op+string(filepath.Separator)) {
		return fail(syscall.EINVAL) // into its own subtree
	}
	switch t := ndir.children[nbase]; {
	case t == n:
		return nil // same file: rename(2) does nothing
	case t == nil:
	case !n.isDir && t.isDir:
		return fail(syscall.EISDIR)
	case n.isDir && !t.isDir:
		return fail(syscall.ENOTDIR)
	case t.isDir && len(t.children) > 0:
		return fail(syscall.ENOTEMPTY)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// MkdirAll creates a directory and any missing parents. Each new
// directory's entry becomes durable only once its parent is synced.
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := memClean(dir)
	n := m.mu.root
	if p == string(filepath.Separator) {
		return nil
	}
	for _, elem := range strings.Split(p[1:], string(filepath.Separator)) {
		c := n.children[elem]
		if c == nil {
			c = newMemDir(perm)
			n.children[elem] = c
		} else if !c.isDir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// ReadDir returns the sorted names of the current entries of dir.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(dir))
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: err}
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes the file or directory name.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(name))
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return n.stat(filepath.Base(name)), nil
}

// SyncDir makes the current entries of dir durable. Unlike the OS, it
// refuses a file.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(dir))
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	n.synced = maps.Clone(n.children)
	return nil
}

// Lock takes a lock that excludes other Locks of the same name on this
// MemFS, creates the file and writes this process's pid into it (not
// synced). A held lock is reported as held by this process. Locks do not
// survive Crash.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	p := memClean(name)
	m.mu.Lock()
	if m.mu.locks[p] {
		m.mu.Unlock()
		return nil, &LockedError{Name: name, PID: os.Getpid()}
	}
	f, err := m.openLocked(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.mu.locks[p] = true
	m.mu.Unlock()

	l := &memLock{m: m, p: p}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write([]byte(strconv.Itoa(os.Getpid()) + "\n"))
	}
	f.Close()
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

type memLock struct {
	once sync.Once
	m    *MemFS
	p    string
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.mu.locks, l.p)
		l.m.mu.Unlock()
	})
	return nil
}

// CrashOptions controls what MemFS.Crash keeps.
type CrashOptions struct {
	// Rand draws the torn lengths. Nil means a fixed seed, so that a
	// Crash without Rand is reproducible.
	Rand *rand.Rand
	// Tear keeps, for each file whose current contents extend past its
	// synced contents, a random-length prefix (possibly empty, possibly
	// whole) of the bytes past the synced length: the last write may be
	// torn. Without Tear every unsynced byte is lost.
	//
	// Tear also tears overwrites: where unsynced writes changed bytes
	// that were synced (a file updated in place, like CHECKPOINT), the
	// changed range from its first to its last changed byte keeps the
	// new bytes up to a random cut and the synced ones after it (with
	// Pages, each 4 KiB page of it is new or synced at random). Without
	// Tear the synced bytes survive.
	Tear bool
	// Pages, with Tear, models write-back out of order, as a real page
	// cache does it: the unsynced bytes are cut at the file's 4 KiB page
	// boundaries and each page independently reaches the disk or not. A
	// lost page reads as zeros; the file ends after the last page that
	// reached the disk (or at the synced length, if none did).
	Pages bool
}

// Crash returns a new MemFS holding what survives a power loss at this
// instant: directory entries as of each directory's last SyncDir, file
// contents as of each file's last Sync, plus torn tails if opts.Tear.
// Everything in the new MemFS is durable, and it holds no locks.
//
// m is left as it was and stays usable; Files open on m keep referring to
// m and never touch the new MemFS. Files are visited in sorted order, so
// a given Rand seed tears the same way every time.
func (m *MemFS) Crash(opts CrashOptions) *MemFS {
	c := crasher{rng: opts.Rand, tear: opts.Tear, pages: opts.Pages, done: make(map[*memNode]*memNode)}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(1, 2))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return newMemFS(c.clone(m.mu.root))
}

type crasher struct {
	rng   *rand.Rand
	tear  bool
	pages bool
	done  map[*memNode]*memNode // keeps hard links linked (and ends cycles)
}

func (c *crasher) clone(n *memNode) *memNode {
	if d, ok := c.done[n]; ok {
		return d
	}
	if n.isDir {
		d := newMemDir(n.mode)
		d.mu.modTime = n.mu.modTime // never changes after creation
		c.done[n] = d
		for _, name := range slices.Sorted(maps.Keys(n.synced)) {
			d.children[name] = c.clone(n.synced[name])
		}
		d.synced = maps.Clone(d.children)
		return d
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	f := newMemFile(n.mode)
	c.done[n] = f
	data := slices.Clone(n.mu.synced)
	switch {
	case c.tear && c.pages && len(n.mu.data) > len(n.mu.synced):
		data = tearPages(c.rng, n.mu.synced, n.mu.data)
	case c.tear && len(n.mu.data) > len(n.mu.synced):
		tail := n.mu.data[len(n.mu.synced):]
		data = append(data, tail[:c.rng.IntN(len(tail)+1)]...)
	}
	if c.tear {
		c.tearOverwrite(data, n.mu.synced, n.mu.data)
	}
	f.mu.data = data
	f.mu.modTime = n.mu.modTime
	f.syncLocked() // torn bytes that reached the disk are durable now
	return f
}

// tearOverwrite puts into out, which holds the synced bytes, a torn part
// of the unsynced overwrite of them that data (the current contents)
// holds: see CrashOptions.Tear.
func (c *crasher) tearOverwrite(out, synced, data []byte) {
	n := min(len(out), len(synced), len(data))
	lo := 0
	for lo < n && synced[lo] == data[lo] {
		lo++
	}
	if lo == n {
		return
	}
	hi := n
	for synced[hi-1] == data[hi-1] {
		hi--
	}
	if c.pages {
		for p := lo / memPage * memPage; p < hi; p += memPage {
			if c.rng.IntN(2) == 0 {
				from, to := max(p, lo), min(p+memPage, hi)
				copy(out[from:to], data[from:to])
			}
		}
		return
	}
	cut := lo + c.rng.IntN(hi-lo+1)
	copy(out[lo:cut], data[lo:cut])
}

// memPage is the page size of CrashOptions.Pages.
const memPage = 4096

// tearPages returns what survives of a file whose current contents are
// data and whose first len(synced) bytes are durable, when each page past
// them reaches the disk or not at random.
func tearPages(rng *rand.Rand, synced, data []byte) []byte {
	out := slices.Clone(data)
	end := len(synced)
	for p := len(synced) / memPage * memPage; p < len(data); p += memPage {
		from, to := max(p, len(synced)), min(p+memPage, len(data))
		if rng.IntN(2) == 0 {
			clear(out[from:to]) // lost
			continue
		}
		end = to
	}
	copy(out, synced)
	return out[:end]
}

// FileBytes returns a copy of the current contents of the file name. It is
// a test helper.
func (m *MemFS) FileBytes(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(name))
	if err == nil && n.isDir {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Clone(n.mu.data), nil
}

// SetFileBytes replaces the contents of the existing file name with a copy
// of data, as though the disk itself held them: current and synced
// contents both change. It is a test helper, for flipping bytes to
// simulate corruption.
func (m *MemFS) SetFileBytes(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(memClean(name))
	if err == nil && n.isDir {
		err = syscall.EISDIR
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.data = slices.Clone(data)
	n.mu.modTime = time.Now()
	n.syncLocked()
	return nil
}
