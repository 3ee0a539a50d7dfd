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

var _ MapFS = (*FullFS)(nil)

func (d *FullFS) canMap() bool { return CanMap(d.FS) }

// MapFile maps a file of the wrapped FS (ErrNoMapping if it cannot map).
// While the disk is full, Allocate fails with ENOSPC; a mapped write
// below the allocated length never does, its space being allocated.
func (d *FullFS) MapFile(name string, reserve int64) (MappedFile, error) {
	m, ok := d.FS.(MapFS)
	if !ok || !CanMap(d.FS) {
		return nil, ErrNoMapping
	}
	mf, err := m.MapFile(name, reserve)
	if err != nil {
		return nil, err
	}
	return &fullMapped{MappedFile: mf, d: d}, nil
}

type fullMapped struct {
	MappedFile
	d *FullFS
}

func (f *fullMapped) Allocate(size int64) error {
	if f.d.full.Load() && size > f.Size() {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.MappedFile.Allocate(size)
}
