// Package vfs is the file-system seam under passbook's storage engine.
//
// Every byte the engine reads or writes goes through FS, a small interface
// with three implementations:
//
//   - OS, the real file system;
//   - Mem, an in-memory file system whose Crash keeps only what was
//     fsync'd (file contents after File.Sync, directory entries after
//     FS.SyncDir) and may tear the last unsynced write — a simulated
//     power loss;
//   - Faulty, a wrapper that fails the i-th operation, to prove that
//     every error path leaves the log consistent.
//
// Keeping the seam small keeps the simulations honest: there are few
// methods to get wrong.
package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// FS is the file-system interface used by the storage engine.
type FS interface {
	// OpenFile opens a file like os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames a file, replacing newname if it exists.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm fs.FileMode) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat describes a file.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the file name, creating it, and
	// records the caller's pid in it. It fails with an error wrapping
	// ErrLocked, naming the holder's pid, when another process (or another
	// opener in this process) holds it. Close releases the lock.
	Lock(name string) (io.Closer, error)
}

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's contents durable.
	Sync() error
	// Truncate changes the size of the file.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (fs.FileInfo, error)
	// Name is the name the file was opened with.
	Name() string
}

var (
	// ErrLocked reports that a lock is held by someone else.
	ErrLocked = errors.New("vfs: locked by another process")
	// ErrInjected is the error Faulty returns for an injected fault.
	ErrInjected = errors.New("vfs: injected fault")
)
