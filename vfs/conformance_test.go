package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// impl is an FS under test: new returns it and an existing, empty directory
// in it.
type impl struct {
	name string
	new  func(t *testing.T) (vfs.FS, string)
}

func impls() []impl {
	mem := func(t *testing.T) (vfs.FS, string) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		return m, "/data"
	}
	osfs := func(t *testing.T) (vfs.FS, string) { return vfs.OS(), t.TempDir() }
	faulty := func(inner func(*testing.T) (vfs.FS, string)) func(*testing.T) (vfs.FS, string) {
		return func(t *testing.T) (vfs.FS, string) {
			fsys, dir := inner(t)
			return vfs.NewFaulty(fsys, vfs.FaultyOptions{FailAt: -1, Kinds: vfs.AllOps}), dir
		}
	}
	return []impl{
		{"OS", osfs},
		{"Mem", mem},
		{"Faulty/OS", faulty(osfs)},
		{"Faulty/Mem", faulty(mem)},
	}
}

// TestFS_Conformance runs every conformance test against every FS.
func TestFS_Conformance(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fsys vfs.FS, dir string)
	}{
		{"OpenFile_CreateWriteRead", testCreateWriteRead},
		{"OpenFile_NotExist", testOpenNotExist},
		{"OpenFile_Excl", testOpenExcl},
		{"OpenFile_Trunc", testOpenTrunc},
		{"OpenFile_Append", testOpenAppend},
		{"OpenFile_AccessMode", testAccessMode},
		{"File_Read", testRead},
		{"File_ReadAt", testReadAt},
		{"File_Truncate", testTruncate},
		{"File_Stat", testFileStat},
		{"File_SyncClose", testSyncClose},
		{"Remove", testRemove},
		{"Rename", testRename},
		{"MkdirAll", testMkdirAll},
		{"ReadDir", testReadDir},
		{"Stat", testStat},
		{"SyncDir", testSyncDir},
		{"Lock", testLock},
		{"ConcurrentReadWrite", testConcurrentReadWrite},
	}
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					fsys, dir := im.new(t)
					tc.fn(t, fsys, dir)
				})
			}
		})
	}
}

// writeFile creates or truncates name and writes data to it.
func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the contents of name.
func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testCreateWriteRead(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x.log")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Name(); got != name {
		t.Errorf("Name() = %q, want %q", got, name)
	}
	if n, err := f.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v, want 5, nil", n, err)
	}
	// The offset is at the end now.
	if n, err := f.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Errorf("Read at end = %d, %v, want 0, EOF", n, err)
	}
	if got, want := readFile(t, fsys, name), "hello"; got != want {
		t.Errorf("contents = %q, want %q", got, want)
	}
}

func testOpenNotExist(t *testing.T, fsys vfs.FS, dir string) {
	tests := []struct {
		name string
		flag int
	}{
		{"x", os.O_RDONLY},
		{"x", os.O_RDWR},
		{"nodir/x", os.O_RDWR | os.O_CREATE},
	}
	for _, tc := range tests {
		_, err := fsys.OpenFile(filepath.Join(dir, tc.name), tc.flag, 0o644)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile(%q, %#x) error = %v, want ErrNotExist", tc.name, tc.flag, err)
		}
	}
}

func testOpenExcl(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	flag := os.O_RDWR | os.O_CREATE | os.O_EXCL
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := fsys.OpenFile(name, flag, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second exclusive create error = %v, want ErrExist", err)
	}
}

func testOpenTrunc(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	writeFile(t, fsys, name, "hello")
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := readFile(t, fsys, name); got != "" {
		t.Errorf("after O_TRUNC contents = %q, want empty", got)
	}
}

func testOpenAppend(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	writeFile(t, fsys, name, "ab")
	flag := os.O_WRONLY | os.O_APPEND
	f1, err := fsys.OpenFile(name, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := fsys.OpenFile(name, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	// Each append lands at the end, whatever the other handle did.
	for _, w := range []struct {
		f vfs.File
		s string
	}{{f1, "cd"}, {f2, "ef"}, {f1, "gh"}} {
		if _, err := io.WriteString(w.f, w.s); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := readFile(t, fsys, name), "abcdefgh"; got != want {
		t.Errorf("contents = %q, want %q", got, want)
	}
}

func testAccessMode(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	writeFile(t, fsys, name, "hello")
	r, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("Write on O_RDONLY file succeeded")
	}
	w, err := fsys.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Read(make([]byte, 1)); err == nil {
		t.Error("Read on O_WRONLY file succeeded")
	}
	if got, want := readFile(t, fsys, name), "hello"; got != want {
		t.Errorf("contents = %q, want %q", got, want)
	}
}

func testRead(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	writeFile(t, fsys, name, "hello")
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := []struct {
		size    int
		want    string
		wantErr error
	}{
		{3, "hel", nil},
		{0, "", nil},
		{3, "lo", nil},
		{3, "", io.EOF},
		{3, "", io.EOF},
	}
	for i, s := range steps {
		buf := make([]byte, s.size)
		n, err := f.Read(buf)
		if string(buf[:n]) != s.want || err != s.wantErr {
			t.Errorf("step %d: Read = %q, %v, want %q, %v", i, buf[:n], err, s.want, s.wantErr)
		}
	}
}

func testReadAt(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	writeFile(t, fsys, name, "hello")
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		off     int64
		size    int
		want    string
		wantEOF bool // io.ReaderAt: a short read must say why
	}{
		{0, 2, "he", false},
		{1, 3, "ell", false},
		{3, 5, "lo", true},
		{5, 1, "", true},
		{9, 1, "", true},
	}
	for _, tc := range tests {
		buf := make([]byte, tc.size)
		n, err := f.ReadAt(buf, tc.off)
		if string(buf[:n]) != tc.want || (err == io.EOF) != tc.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes, %d) = %q, %v, want %q (EOF %v)", tc.size, tc.off, buf[:n], err, tc.want, tc.wantEOF)
		}
	}
	// A read to exactly the end may return nil or io.EOF.
	if n, err := f.ReadAt(make([]byte, 2), 3); n != 2 || (err != nil && err != io.EOF) {
		t.Errorf("ReadAt to end = %d, %v, want 2, nil or EOF", n, err)
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at -1 succeeded")
	}
	// ReadAt leaves the offset alone.
	if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Errorf("Read after ReadAt = %q, want %q", b, "hello")
	}
}

func testTruncate(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	io.WriteString(f, "hello")
	steps := []struct {
		size int64
		want string
	}{
		{2, "he"},
		{4, "he\x00\x00"},
		{0, ""},
		{5, "\x00\x00\x00\x00\x00"},
	}
	for _, s := range steps {
		if err := f.Truncate(s.size); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fsys, name); got != s.want {
			t.Errorf("after Truncate(%d) contents = %q, want %q", s.size, got, s.want)
		}
	}
	// The offset is still 5: the next write lands after the zeros.
	f.Truncate(1)
	io.WriteString(f, "!")
	if got, want := readFile(t, fsys, name), "\x00\x00\x00\x00\x00!"; got != want {
		t.Errorf("write after Truncate: contents = %q, want %q", got, want)
	}
}

func testFileStat(t *testing.T, fsys vfs.FS, dir string) {
	name := filepath.Join(dir, "x.log")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range []string{"", "abc", "defg"} {
		io.WriteString(f, s)
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != "x.log" || fi.IsDir() || !fi.Mode().IsRegular() {
			t.Errorf("Stat() = %q dir=%v mode=%v, want x.log, a regular file", fi.Name(), fi.IsDir(), fi.Mode())
		}
		if got, want := fi.Size(), int64(len(readFile(t, fsys, name))); got != want {
			t.Errorf("Stat().Size() = %d, want %d", got, want)
		}
	}
}

func testSyncClose(t *testing.T, fsys vfs.FS, dir string) {
	f, err := fsys.OpenFile(filepath.Join(dir, "x"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "hello")
	if err := f.Sync(); err != nil {
		t.Errorf("Sync() = %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := f.Close(); err == nil {
		t.Error("second Close() succeeded")
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close error = %v, want ErrClosed", err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close error = %v, want ErrClosed", err)
	}
}
