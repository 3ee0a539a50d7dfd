package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"strings"
	"sync"
)

// OpKind is a kind of operation that FaultyFS counts. Kinds are bits, so
// a set of kinds is their bitwise or.
type OpKind uint32

const (
	OpOpen     OpKind = 1 << iota // FS.OpenFile
	OpRemove                      // FS.Remove
	OpRename                      // FS.Rename
	OpMkdirAll                    // FS.MkdirAll
	OpReadDir                     // FS.ReadDir
	OpStat                        // FS.Stat
	OpSyncDir                     // FS.SyncDir
	OpLock                        // FS.Lock
	OpWrite                       // File.Write
	OpSync                        // File.Sync
	OpTruncate                    // File.Truncate
	OpRead                        // File.Read, File.ReadAt and File.Stat
	OpClose                       // File.Close

	// DefaultOps is every FS method and File.Write, Sync and Truncate:
	// everything that can change what is on disk, plus the FS lookups.
	DefaultOps = OpOpen | OpRemove | OpRename | OpMkdirAll | OpReadDir |
		OpStat | OpSyncDir | OpLock | OpWrite | OpSync | OpTruncate
	// AllOps adds file reads and closes to DefaultOps.
	AllOps = DefaultOps | OpRead | OpClose
)

// String names the kinds in k, joined by "|".
func (k OpKind) String() string {
	kindNames := [...]string{
		"open", "remove", "rename", "mkdirall", "readdir", "stat", "syncdir",
		"lock", "write", "sync", "truncate", "read", "close",
	}
	var names []string
	for k != 0 {
		i := bits.TrailingZeros32(uint32(k))
		k &^= 1 << i
		if i < len(kindNames) {
			names = append(names, kindNames[i])
		} else {
			names = append(names, fmt.Sprintf("OpKind(1<<%d)", i))
		}
	}
	return strings.Join(names, "|")
}

// Op is one operation seen by FaultyFS.
type Op struct {
	Kind OpKind
	// Name is the file or directory operated on: the name given to the FS
	// method, or File.Name for file operations. For a rename it is the old
	// name.
	Name string
	// NewName is the new name of a rename, and empty otherwise.
	NewName string
}

// String is the kind and name, as in "write /d/x.log".
func (op Op) String() string {
	if op.Kind == OpRename {
		return fmt.Sprintf("%s %s -> %s", op.Kind, op.Name, op.NewName)
	}
	return fmt.Sprintf("%s %s", op.Kind, op.Name)
}

// FaultyOptions chooses which operation FaultyFS fails. The zero value
// fails the first counted operation; set FailAt to -1 to fail none.
type FaultyOptions struct {
	// FailAt is the 0-based index, among counted operations, of the one to
	// fail. Negative means never.
	FailAt int
	// Sticky fails every counted operation after FailAt as well, like a
	// disk that has gone away.
	Sticky bool
	// Kinds is the set of kinds that count. Zero means DefaultOps.
	Kinds OpKind
	// Filter, if set, further restricts counting to the operations of
	// Kinds for which it returns true. It may be called concurrently.
	Filter func(Op) bool
	// ShortWrite makes a failed File.Write write the first half of its
	// buffer before failing, and report that length.
	ShortWrite bool
}

// FaultyFS wraps an FS and fails chosen operations with an error wrapping
// ErrInjected, to exercise every error path of the code above it.
//
// A failed operation has no effect, except a failed File.Close, which
// still closes the file, and a failed File.Write with ShortWrite. Files it
// opens do not expose the wrapped File's extra methods (such as OSFile),
// so nothing bypasses the faults. FaultyFS is safe for concurrent use.
type FaultyFS struct {
	fs   FS
	opts FaultyOptions
	mu   struct {
		sync.Mutex
		ops int
	}
}

var _ FS = (*FaultyFS)(nil)

// NewFaulty returns a FaultyFS wrapping fs.
func NewFaulty(fs FS, opts FaultyOptions) *FaultyFS {
	if opts.Kinds == 0 {
		opts.Kinds = DefaultOps
	}
	return &FaultyFS{fs: fs, opts: opts}
}

// Ops returns how many counted operations have run, failed ones included.
// After a run with FailAt = i, Ops() <= i means no fault was injected, so
// enumerating i = 0, 1, 2, … can stop.
func (f *FaultyFS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.ops
}

// fault counts op and returns the injected error if op is to fail.
func (f *FaultyFS) fault(op Op) error {
	if op.Kind&f.opts.Kinds == 0 || (f.opts.Filter != nil && !f.opts.Filter(op)) {
		return nil
	}
	f.mu.Lock()
	i := f.mu.ops
	f.mu.ops++
	f.mu.Unlock()
	at := f.opts.FailAt
	if at < 0 || i < at || (i > at && !f.opts.Sticky) {
		return nil
	}
	return fmt.Errorf("%w at op %d (%s)", ErrInjected, i, op)
}

func (f *FaultyFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := f.fault(Op{Kind: OpOpen, Name: name}); err != nil {
		return nil, err
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{f: file, fs: f}, nil
}

func (f *FaultyFS) Remove(name string) error {
	if err := f.fault(Op{Kind: OpRemove, Name: name}); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *FaultyFS) Rename(oldname, newname string) error {
	if err := f.fault(Op{Kind: OpRename, Name: oldname, NewName: newname}); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

func (f *FaultyFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := f.fault(Op{Kind: OpMkdirAll, Name: dir}); err != nil {
		return err
	}
	return f.fs.MkdirAll(dir, perm)
}

func (f *FaultyFS) ReadDir(dir string) ([]string, error) {
	if err := f.fault(Op{Kind: OpReadDir, Name: dir}); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(dir)
}

func (f *FaultyFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.fault(Op{Kind: OpStat, Name: name}); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

func (f *FaultyFS) SyncDir(dir string) error {
	if err := f.fault(Op{Kind: OpSyncDir, Name: dir}); err != nil {
		return err
	}
	return f.fs.SyncDir(dir)
}

func (f *FaultyFS) Lock(name string) (io.Closer, error) {
	if err := f.fault(Op{Kind: OpLock, Name: name}); err != nil {
		return nil, err
	}
	return f.fs.Lock(name)
}

type faultyFile struct {
	f  File
	fs *FaultyFS
}

func (f *faultyFile) op(kind OpKind) Op { return Op{Kind: kind, Name: f.f.Name()} }

func (f *faultyFile) Read(p []byte) (int, error) {
	if err := f.fs.fault(f.op(OpRead)); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(f.op(OpRead)); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if err := f.fs.fault(f.op(OpWrite)); err != nil {
		if !f.fs.opts.ShortWrite {
			return 0, err
		}
		n, _ := f.f.Write(p[:len(p)/2])
		return n, err
	}
	return f.f.Write(p)
}

func (f *faultyFile) Close() error {
	if err := f.fs.fault(f.op(OpClose)); err != nil {
		f.f.Close() // as close(2) does, release the file even on error
		return err
	}
	return f.f.Close()
}

func (f *faultyFile) Sync() error {
	if err := f.fs.fault(f.op(OpSync)); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if err := f.fs.fault(f.op(OpTruncate)); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *faultyFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.fault(f.op(OpRead)); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

func (f *faultyFile) Name() string { return f.f.Name() }

var _ MapFS = (*FaultyFS)(nil)

func (f *FaultyFS) canMap() bool { return CanMap(f.fs) }

// MapFile maps a file of the wrapped FS (ErrNoMapping if it cannot map),
// as an OpOpen. On the mapping, Allocate is an OpTruncate (it changes the
// file's length) and WriteAt an OpWrite, failing as File.Write does (with
// ShortWrite, its first half copied); Close is an OpClose; Populate,
// which changes nothing, is not counted.
func (f *FaultyFS) MapFile(name string, reserve int64) (MappedFile, error) {
	m, ok := f.fs.(MapFS)
	if !ok || !CanMap(f.fs) {
		return nil, ErrNoMapping
	}
	if err := f.fault(Op{Kind: OpOpen, Name: name}); err != nil {
		return nil, err
	}
	mf, err := m.MapFile(name, reserve)
	if err != nil {
		return nil, err
	}
	return &faultyMapped{m: mf, fs: f}, nil
}

type faultyMapped struct {
	m  MappedFile
	fs *FaultyFS
}

func (f *faultyMapped) op(kind OpKind) Op { return Op{Kind: kind, Name: f.m.Name()} }

func (f *faultyMapped) Name() string          { return f.m.Name() }
func (f *faultyMapped) Size() int64           { return f.m.Size() }
func (f *faultyMapped) Populate(off, n int64) { f.m.Populate(off, n) }
func (f *faultyMapped) Release(off, n int64)  { f.m.Release(off, n) }

func (f *faultyMapped) Allocate(size int64) error {
	if err := f.fs.fault(f.op(OpTruncate)); err != nil {
		return err
	}
	return f.m.Allocate(size)
}

func (f *faultyMapped) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(f.op(OpWrite)); err != nil {
		if !f.fs.opts.ShortWrite {
			return 0, err
		}
		n, _ := f.m.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.m.WriteAt(p, off)
}

func (f *faultyMapped) Close() error {
	if err := f.fs.fault(f.op(OpClose)); err != nil {
		f.m.Close()
		return err
	}
	return f.m.Close()
}
