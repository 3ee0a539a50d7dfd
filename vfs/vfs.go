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
	"fmt"
	"io"
	"io/fs"
	"os"
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
	// records the caller's pid in it. It fails with a *LockedError, which
	// matches ErrLocked under errors.Is and names the holder's pid, when
	// another process (or another opener in this process) holds it.
	// Close releases the lock; closing twice is harmless.
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

// LockedError is the error FS.Lock returns when the lock is held. It
// matches ErrLocked under errors.Is.
type LockedError struct {
	// Name is the lock file.
	Name string
	// PID is the holder's process id as recorded in the lock file, or 0
	// when the file did not hold one (the holder may not have written it
	// yet).
	PID int
}

func (e *LockedError) Error() string {
	switch {
	case e.PID == os.Getpid():
		return fmt.Sprintf("vfs: %s is locked by this process (pid %d)", e.Name, e.PID)
	case e.PID > 0:
		return fmt.Sprintf("vfs: %s is locked by process %d", e.Name, e.PID)
	default:
		return fmt.Sprintf("vfs: %s is locked by another process (pid unknown)", e.Name)
	}
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }
