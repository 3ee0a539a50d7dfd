package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// MapFS is implemented by a file system that can write a file through a
// shared memory mapping, so that a write is a copy into memory rather
// than a system call. OS implements it on Linux, MemFS everywhere, and
// FaultyFS and FullFS when the FS they wrap does.
//
// What a mapped write promises is what write(2) promises: the bytes are
// in the page cache as soon as WriteAt returns (so they survive the
// process being killed: a shared mapping's dirty pages belong to the
// file, not to the process), visible to every read of the file, and
// durable once the file is synced: File.Sync of any handle on the file
// (fdatasync) writes the mapping's dirty pages back too. Until then a
// power loss may drop any of them, in any order (MemFS's Crash models
// the mapped bytes as unsynced writes).
//
// Unlike write(2), a mapping cannot grow the file: MappedFile.Allocate
// extends it first, with zeros whose disk space is allocated, so that
// a store into the mapping never meets a full disk (which would be a
// SIGBUS). The file's length is then no longer the end of the data
// written into it: a reader must know where the data ends by other
// means, and whoever is done writing truncates the file to it.
type MapFS interface {
	FS
	// MapFile maps the existing file name for writing, reserving
	// address space for reserve bytes (more is mapped as the file
	// grows past it). The file's length is not changed.
	MapFile(name string, reserve int64) (MappedFile, error)
}

// MappedFile is a file written through a shared memory mapping. Its
// methods other than Populate are not safe for concurrent use; Populate
// may run concurrently with WriteAt.
type MappedFile interface {
	// Size is the file's length: the bytes written and the zeros
	// allocated past them.
	Size() int64
	// Allocate makes the file at least size bytes long, the new bytes
	// zeros whose space is allocated on the disk (fallocate), and maps
	// them. It fails, with an error matching ENOSPC, when the disk is
	// full; the file may then be longer than before, but not size long.
	Allocate(size int64) error
	// WriteAt copies p into the file at off. The bytes must lie below
	// Size: a mapped write does not grow the file.
	WriteAt(p []byte, off int64) (int, error)
	// Populate asks that the pages holding [off, off+n) be made ready
	// for writing (faulted in, their blocks mapped) ahead of the writes,
	// so that the writer does not take the page faults. It is a hint:
	// it may do nothing, and it changes no byte. It may run on another
	// goroutine while WriteAt runs; Allocate and Close wait for it.
	Populate(off, n int64)
	// Release says the pages wholly inside [off, off+n) will not be
	// written through the mapping again: they leave the process's
	// resident set, their bytes staying in the page cache (dirty ones
	// until synced or written back), so reads of the file and File.Sync
	// see them as before. A hint: it may do nothing, and it changes no
	// byte. Safe alongside Populate; not alongside WriteAt.
	Release(off, n int64)
	// Close unmaps the file. It does not change the file's length, nor
	// what was written: those bytes stay in the page cache until synced
	// or written back.
	Close() error
	// Name is the name the file was mapped with.
	Name() string
}

// errMapRange is the error of a mapped write outside the file.
func errMapRange(name string, off int64, n int, size int64) error {
	return &fs.PathError{Op: "mapped write", Path: name, Err: fmt.Errorf("bytes %d–%d past the file's %d (allocate first): %w", off, off+int64(n), size, syscall.EFAULT)}
}

// errMapClosed is the error of a use of a closed MappedFile.
func errMapClosed(name string) error {
	return &fs.PathError{Op: "mapped write", Path: name, Err: fs.ErrClosed}
}

// CanMap reports whether fsys can map files: it implements MapFS and
// the system supports it.
func CanMap(fsys FS) bool {
	m, ok := fsys.(MapFS)
	if !ok {
		return false
	}
	if c, ok := m.(interface{ canMap() bool }); ok {
		return c.canMap()
	}
	return true
}

// ErrNoMapping is returned by MapFile on a system or file system that
// cannot map files for writing. It matches errors.ErrUnsupported.
var ErrNoMapping = fmt.Errorf("vfs: files cannot be written through a mapping here: %w", errors.ErrUnsupported)

// WithoutMapping returns fsys with its mapping hidden: a Log opened on it
// appends with write(2) even where fsys could map (the baseline the
// mapped path is measured against, and a way to keep a file system's
// files at the length of their data at every instant).
func WithoutMapping(fsys FS) FS { return noMapFS{fsys} }

// noMapFS embeds the FS interface, so only FS's methods are promoted.
type noMapFS struct{ FS }
