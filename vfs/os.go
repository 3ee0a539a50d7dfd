package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// OS returns the FS backed by package os: the real file system.
//
// Every File it opens has an extra method
//
//	OSFile() *os.File
//
// returning the underlying *os.File, so that a network layer can hand the
// descriptor to sendfile (io.Copy from an *os.File to a *net.TCPConn).
// Reach it with a type assertion:
//
//	if of, ok := f.(interface{ OSFile() *os.File }); ok { ... }
//
// Files wrapped by Faulty do not have it, so faults are never bypassed.
//
// SyncDir opens the directory and fsyncs it. Lock uses flock(2) on unix
// systems; on other systems it fails with errors.ErrUnsupported.
func OS() FS { return osFS{} }

type osFS struct{}

var _ FS = osFS{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// Lock takes flock(LOCK_EX|LOCK_NB) on its own open of name. Because flock
// locks belong to an open file description, a second Lock of the same
// file from this process fails too, as the FS contract requires.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := flock(f)
	if held {
		defer f.Close()
		return nil, &LockedError{Name: name, PID: readPID(f)}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vfs: lock %s: %w", name, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		f.Close()
		return nil, err
	}
	return &osLock{f: f}, nil
}

// readPID returns the pid recorded in a lock file, or 0.
func readPID(f *os.File) int {
	var buf [32]byte
	n, _ := f.ReadAt(buf[:], 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

type osLock struct {
	once sync.Once
	f    *os.File
}

// Close releases the lock by closing the descriptor that holds it.
func (l *osLock) Close() error {
	var err error
	l.once.Do(func() { err = l.f.Close() })
	return err
}

// osFile hides the rest of *os.File's methods behind File, keeping the
// seam honest; OSFile is the one deliberate way out.
type osFile struct{ f *os.File }

func (f osFile) Read(p []byte) (int, error)              { return f.f.Read(p) }
func (f osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f osFile) Write(p []byte) (int, error)             { return f.f.Write(p) }
func (f osFile) Close() error                            { return f.f.Close() }
func (f osFile) Truncate(size int64) error               { return f.f.Truncate(size) }
func (f osFile) Stat() (fs.FileInfo, error)              { return f.f.Stat() }
func (f osFile) Name() string                            { return f.f.Name() }

// Sync flushes the file's data and the metadata needed to read it back
// (its size), with fdatasync where the system has it: the engine never
// relies on timestamps, and skipping them saves a journal write.
func (f osFile) Sync() error { return datasync(f.f) }

// OSFile returns the underlying *os.File, for sendfile and the like.
func (f osFile) OSFile() *os.File { return f.f }

// WriteAt is os.File.WriteAt: see memFile.WriteAt.
func (f osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
