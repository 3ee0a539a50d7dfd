package vfs

import (
	"io/fs"
	"sync/atomic"
	"syscall"
)

// FullFS wraps a file system with a switch: while it is on, every write
// to a file fails with ENOSPC, as on a full disk; everything else goes
// through. Tests use it to fill the disk and free it again at a moment
// of their choosing (FaultyFS fails one operation once).
type FullFS struct {
	FS
	full atomic.Bool
}

// NewFull wraps fsys, with the switch off.
func NewFull(fsys FS) *FullFS { return &FullFS{FS: fsys} }

// SetFull turns the switch on (the disk is full) or off.
func (d *FullFS) SetFull(full bool) { d.full.Store(full) }

// OpenFile opens the file of the wrapped FS, its writes behind the switch.
func (d *FullFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: f, d: d}, nil
}

type fullFile struct {
	File
	d *FullFS
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.d.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}
