package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Whole-file helpers over any FS, like os.ReadFile, os.WriteFile and
// os.RemoveAll, with the fsyncs that make them durable.

// ReadFile reads the whole file name.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFileAtomic writes dir/name whole or not at all: through name.tmp,
// fsync'd and renamed over name, then dir fsync'd. A failed or torn write
// leaves no name to misread, only a name.tmp for the next opener to
// remove (found by cmd/torture: a failed write of topic.json made Open
// refuse the data directory).
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename %s: %w", name, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// RemoveAll removes dir and everything under it, depth first; a dir that
// does not exist is not an error. It does not fsync: the caller syncs the
// parent directory when the removal must be durable.
func RemoveAll(fsys FS, dir string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
			if err := RemoveAll(fsys, p); err != nil {
				return err
			}
			continue
		}
		if err := fsys.Remove(p); err != nil {
			return err
		}
	}
	return fsys.Remove(dir)
}
