//go:build !linux

package vfs

// MapFile fails with ErrNoMapping: only Linux's mappings are known to
// keep the promises MapFS makes (a shared mapping's dirty pages in the
// page cache, written back by fdatasync of the file).
func (osFS) MapFile(name string, reserve int64) (MappedFile, error) { return nil, ErrNoMapping }

func (osFS) canMap() bool { return false }
