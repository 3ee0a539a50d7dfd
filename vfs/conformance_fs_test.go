package vfs_test

// Conformance tests of the directory methods, Lock, and concurrent use.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

func testRemove(t *testing.T, fsys vfs.FS, dir string) {
	file, sub := filepath.Join(dir, "x"), filepath.Join(dir, "sub")
	writeFile(t, fsys, file, "hello")
	if err := fsys.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fsys, filepath.Join(sub, "y"), "")
	if err := fsys.Remove(sub); err == nil {
		t.Error("Remove of a non-empty directory succeeded")
	}
	for _, name := range []string{file, filepath.Join(sub, "y"), sub} {
		if err := fsys.Remove(name); err != nil {
			t.Fatalf("Remove(%q) = %v", name, err)
		}
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat after Remove(%q) error = %v, want ErrNotExist", name, err)
		}
	}
	if err := fsys.Remove(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Remove error = %v, want ErrNotExist", err)
	}
}

func testRename(t *testing.T, fsys vfs.FS, dir string) {
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeFile(t, fsys, a, "new")
	writeFile(t, fsys, b, "old")
	f, err := fsys.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsys.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	// An open file follows its contents, not its name.
	io.WriteString(f, "!")
	if got, want := readFile(t, fsys, b), "new!"; got != want {
		t.Errorf("contents of renamed file = %q, want %q", got, want)
	}
	if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(old name) error = %v, want ErrNotExist", err)
	}
	if err := fsys.Rename(a, b); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rename of a missing file error = %v, want ErrNotExist", err)
	}
	// Directories rename too.
	if err := fsys.MkdirAll(filepath.Join(dir, "d1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(b, filepath.Join(dir, "d1", "b")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(filepath.Join(dir, "d1"), filepath.Join(dir, "d2")); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, fsys, filepath.Join(dir, "d2", "b")), "new!"; got != want {
		t.Errorf("contents after moving its directory = %q, want %q", got, want)
	}
}

func testMkdirAll(t *testing.T, fsys vfs.FS, dir string) {
	deep := filepath.Join(dir, "a", "b", "c")
	for range 2 { // the second call finds everything there
		if err := fsys.MkdirAll(deep, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, fsys, filepath.Join(deep, "x"), "")
	if err := fsys.MkdirAll(filepath.Join(deep, "x", "y"), 0o755); err == nil {
		t.Error("MkdirAll through a file succeeded")
	}
}

func testReadDir(t *testing.T, fsys vfs.FS, dir string) {
	got, err := fsys.ReadDir(dir)
	if err != nil || len(got) != 0 {
		t.Errorf("ReadDir(empty) = %q, %v, want none", got, err)
	}
	for _, name := range []string{"c", "a", "b.log"} {
		writeFile(t, fsys, filepath.Join(dir, name), "")
	}
	fsys.MkdirAll(filepath.Join(dir, "0dir", "inner"), 0o755)
	got, err = fsys.ReadDir(dir)
	if want := []string{"0dir", "a", "b.log", "c"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ReadDir = %q, %v, want %q", got, err, want)
	}
	if _, err := fsys.ReadDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir(missing) error = %v, want ErrNotExist", err)
	}
}

func testStat(t *testing.T, fsys vfs.FS, dir string) {
	writeFile(t, fsys, filepath.Join(dir, "x"), "hello")
	fsys.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	tests := []struct {
		name    string
		wantDir bool
		size    int64 // checked for files only
	}{
		{"x", false, 5},
		{"sub", true, 0},
	}
	for _, tc := range tests {
		fi, err := fsys.Stat(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != tc.name || fi.IsDir() != tc.wantDir || (!tc.wantDir && fi.Size() != tc.size) {
			t.Errorf("Stat(%q) = %q dir=%v size=%d, want dir=%v size=%d", tc.name, fi.Name(), fi.IsDir(), fi.Size(), tc.wantDir, tc.size)
		}
	}
	if _, err := fsys.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(missing) error = %v, want ErrNotExist", err)
	}
}

func testSyncDir(t *testing.T, fsys vfs.FS, dir string) {
	writeFile(t, fsys, filepath.Join(dir, "x"), "")
	if err := fsys.SyncDir(dir); err != nil {
		t.Errorf("SyncDir = %v", err)
	}
	if err := fsys.SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SyncDir(missing) error = %v, want ErrNotExist", err)
	}
}

func testLock(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "LOCK")
	l, err := fsys.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(readFile(t, fsys, name)), strconv.Itoa(os.Getpid()); got != want {
		t.Errorf("lock file holds %q, want pid %q", got, want)
	}
	_, err = fsys.Lock(name)
	var le *vfs.LockedError
	if !errors.Is(err, vfs.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second Lock error = %v, want a *LockedError", err)
	}
	if le.PID != os.Getpid() || le.Name != name {
		t.Errorf("LockedError = %+v, want PID %d, Name %q", le, os.Getpid(), name)
	}
	if want := fmt.Sprintf("vfs: %s is locked by this process (pid %d)", name, os.Getpid()); err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := fsys.Lock(name)
	if err != nil {
		t.Fatalf("Lock after Close = %v", err)
	}
	// Closing the first lock again must not release the second.
	l.Close()
	if _, err := fsys.Lock(name); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("Lock after a double Close error = %v, want ErrLocked", err)
	}
	l2.Close()
}

// testConcurrentReadWrite has one goroutine append while others ReadAt
// what has been written, the storage engine's pattern. Run with -race.
func testConcurrentReadWrite(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	w, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const chunk, chunks = 64, 200
	block := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, chunk) }
	var written atomic.Int64 // bytes known to be written
	var stop atomic.Bool     // set if the writer gives up
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for range 4 {
		wg.Go(func() {
			buf := make([]byte, chunk)
			for written.Load() < chunk*chunks && !stop.Load() {
				i := int(written.Load()/chunk) - 1
				if i < 0 {
					continue
				}
				if _, err := w.ReadAt(buf, int64(i*chunk)); err != nil && err != io.EOF {
					t.Errorf("ReadAt = %v", err)
					return
				}
				if !bytes.Equal(buf, block(i)) {
					t.Errorf("chunk %d = %x, want %x", i, buf[:4], block(i)[:4])
					return
				}
			}
		})
	}
	for i := range chunks {
		if _, err := w.Write(block(i)); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			w.Sync()
		}
		written.Add(chunk)
	}
}
