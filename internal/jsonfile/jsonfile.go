// Package jsonfile keeps a small JSON document on disk that several
// processes share: `passbook serve` reads it while `passbook user add`
// (say) changes it. A change takes an exclusive lock (PATH.lock), reads
// the newest version, applies the change and replaces the file
// atomically (temporary file, fsync, rename, directory fsync), so a
// change that returned survives kill -9 and a power loss, and a reader
// sees the old document or the new one, never a mix. Readers notice
// another process's change by the file's identity (inode, size,
// modification time), checked at most once per Recheck.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Recheck is how often Get looks at the file for another process's
// change.
const Recheck = time.Second

// File is one JSON document of type T at a path. T's zero value is the
// document of a file that does not exist yet.
type File[T any] struct {
	path string

	mu      sync.Mutex
	val     T
	stamp   stamp
	checked time.Time
	err     error // the last reload's failure, until a good version is read
	version uint64
}

// stamp identifies a version of the file.
type stamp struct {
	exists bool
	ino    uint64
	size   int64
	mtime  int64
}

// Open reads the document at path (none yet is the zero T). A file that
// is not valid JSON is an error naming it and the byte where it breaks.
func Open[T any](path string) (*File[T], error) {
	f := &File[T]{path: path}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file's path.
func (f *File[T]) Path() string { return f.path }

// Get returns the current document, reloading it first if another
// process changed the file. The value is shared: treat it as read-only.
// While the file on disk is unreadable (a damaged copy), Get reports
// that error rather than a stale document.
func (f *File[T]) Get() (T, error) {
	v, _, err := f.Snapshot()
	return v, err
}

// Snapshot is Get with a version number that changes whenever the
// document does, for callers that keep something derived from it.
func (f *File[T]) Snapshot() (T, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= Recheck || f.err != nil {
		f.checked = now
		if st, err := statOf(f.path); err != nil || st != f.stamp {
			f.err = f.reloadLocked()
		}
	}
	return f.val, f.version, f.err
}

// Update applies change to the newest version of the document under
// the file's lock and writes the result durably. If change returns an
// error, nothing is written and Update returns it. change works on a
// copy (decoded afresh from the file), so it may modify the value
// freely.
func (f *File[T]) Update(change func(*T) error) error {
	unlock, err := lock(f.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	var cur T
	if _, err := read(f.path, &cur); err != nil {
		return err
	}
	if err := change(&cur); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cur, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: encode: %w", f.path, err)
	}
	if err := writeAtomic(f.path, append(data, '\n')); err != nil {
		return err
	}
	// Decode what was written, so the cached value shares nothing with
	// the caller's.
	var fresh T
	st, err := read(f.path, &fresh)
	if err != nil {
		return err
	}
	f.val, f.stamp, f.err, f.checked = fresh, st, nil, time.Now()
	f.version++
	return nil
}

func (f *File[T]) reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = time.Now()
	return f.reloadLocked()
}

func (f *File[T]) reloadLocked() error {
	var v T
	st, err := read(f.path, &v)
	if err != nil {
		return err
	}
	f.val, f.stamp = v, st
	f.version++
	return nil
}

// read decodes the file into v, and returns the version read. A missing
// file leaves v as it is.
func read(path string, v any) (stamp, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return stamp{}, err
	}
	const maxSize = 64 << 20
	if info.Size() > maxSize {
		return stamp{}, fmt.Errorf("%s: %d bytes is more than a document of this kind can be (%d)", path, info.Size(), maxSize)
	}
	data := make([]byte, info.Size())
	if _, err := file.ReadAt(data, 0); err != nil && info.Size() > 0 {
		return stamp{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return stamp{}, fmt.Errorf("%s: damaged: not valid JSON at byte %d: %w", path, se.Offset, err)
			}
			return stamp{}, fmt.Errorf("%s: damaged: %w", path, err)
		}
	}
	return stampOf(info), nil
}

func statOf(path string) (stamp, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stampOf(info), nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsync'd, renamed over path, and the directory fsync'd, so
// that the new content is durable once it returns.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing there
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", dir, err)
	}
	return nil
}
