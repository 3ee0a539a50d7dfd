package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// tree maps every path under root to its contents, or to "<dir>".
func tree(t *testing.T, fsys vfs.FS, root string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	names, err := fsys.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		p := filepath.Join(root, name)
		fi, err := fsys.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			m[p] = "<dir>"
			maps.Copy(m, tree(t, fsys, p))
		} else {
			m[p] = readFile(t, fsys, p)
		}
	}
	return m
}

// memSetup is a scripted file system: /d exists and is durable.
type memSetup struct {
	t *testing.T
	m *vfs.MemFS
}

func newMemSetup(t *testing.T) memSetup {
	m := vfs.NewMem()
	s := memSetup{t, m}
	s.check(m.MkdirAll("/d", 0o755))
	s.check(m.SyncDir("/"))
	return s
}

func (s memSetup) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s memSetup) open(name string, flag int) vfs.File {
	s.t.Helper()
	f, err := s.m.OpenFile(name, flag, 0o644)
	s.check(err)
	s.t.Cleanup(func() { f.Close() })
	return f
}

func (s memSetup) write(f vfs.File, data string) {
	s.t.Helper()
	_, err := io.WriteString(f, data)
	s.check(err)
}

// durable creates name holding data, fully synced, file and entry.
func (s memSetup) durable(name, data string) {
	s.t.Helper()
	f := s.open(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	s.write(f, data)
	s.check(f.Sync())
	s.check(s.m.SyncDir(filepath.Dir(name)))
}

func TestMem_Crash(t *testing.T) {
	const rw = os.O_RDWR
	tests := []struct {
		name  string
		setup func(s memSetup)
		want  map[string]string // the tree after Crash, without /d
	}{
		{
			name:  "synced data kept, unsynced tail lost",
			setup: func(s memSetup) { s.durable("/d/x", "abc"); s.write(s.open("/d/x", rw|os.O_APPEND), "def") },
			want:  map[string]string{"/d/x": "abc"},
		},
		{
			name: "entry synced, data never synced",
			setup: func(s memSetup) {
				s.write(s.open("/d/x", rw|os.O_CREATE), "abc")
				s.check(s.m.SyncDir("/d"))
			},
			want: map[string]string{"/d/x": ""},
		},
		{
			name: "created, data synced, directory not synced",
			setup: func(s memSetup) {
				f := s.open("/d/x", rw|os.O_CREATE)
				s.write(f, "abc")
				s.check(f.Sync())
			},
			want: map[string]string{},
		},
		{
			name:  "rename without SyncDir is rolled back",
			setup: func(s memSetup) { s.durable("/d/a", "abc"); s.check(s.m.Rename("/d/a", "/d/b")) },
			want:  map[string]string{"/d/a": "abc"},
		},
		{
			name: "rename with SyncDir is kept",
			setup: func(s memSetup) {
				s.durable("/d/a", "abc")
				s.check(s.m.Rename("/d/a", "/d/b"))
				s.check(s.m.SyncDir("/d"))
			},
			want: map[string]string{"/d/b": "abc"},
		},
		{
			name: "rename over a file without SyncDir brings both back",
			setup: func(s memSetup) {
				s.durable("/d/a", "new")
				s.durable("/d/b", "old")
				s.check(s.m.Rename("/d/a", "/d/b"))
			},
			want: map[string]string{"/d/a": "new", "/d/b": "old"},
		},
		{
			name: "remove without SyncDir comes back with synced contents",
			setup: func(s memSetup) {
				s.durable("/d/x", "abc")
				s.write(s.open("/d/x", rw|os.O_APPEND), "def")
				s.check(s.m.Remove("/d/x"))
			},
			want: map[string]string{"/d/x": "abc"},
		},
		{
			name:  "remove with SyncDir is kept",
			setup: func(s memSetup) { s.durable("/d/x", "abc"); s.check(s.m.Remove("/d/x")); s.check(s.m.SyncDir("/d")) },
			want:  map[string]string{},
		},
		{
			name: "MkdirAll without SyncDir of the parent is lost",
			setup: func(s memSetup) {
				s.check(s.m.MkdirAll("/d/sub", 0o755))
				s.durable("/d/sub/x", "abc")
			},
			want: map[string]string{},
		},
		{
			name: "MkdirAll with SyncDir of the parent is kept",
			setup: func(s memSetup) {
				s.check(s.m.MkdirAll("/d/sub", 0o755))
				s.check(s.m.SyncDir("/d"))
				s.durable("/d/sub/x", "abc")
			},
			want: map[string]string{"/d/sub": "<dir>", "/d/sub/x": "abc"},
		},
		{
			name: "unsynced truncate is undone",
			setup: func(s memSetup) {
				s.durable("/d/x", "hello")
				s.check(s.open("/d/x", rw).Truncate(1))
			},
			want: map[string]string{"/d/x": "hello"},
		},
		{
			name: "unsynced overwrite of synced bytes is undone",
			setup: func(s memSetup) {
				s.durable("/d/x", "hello")
				f := s.open("/d/x", rw)
				s.check(f.Truncate(2))
				s.write(f, "HELLO WORLD")
				s.write(s.open("/d/x", rw|os.O_TRUNC), "j")
			},
			want: map[string]string{"/d/x": "hello"},
		},
		{
			name: "second sync wins",
			setup: func(s memSetup) {
				s.durable("/d/x", "hello")
				f := s.open("/d/x", rw|os.O_TRUNC)
				s.write(f, "bye")
				s.check(f.Sync())
				s.write(f, " now")
			},
			want: map[string]string{"/d/x": "bye"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemSetup(t)
			tc.setup(s)
			got := tree(t, s.m.Crash(vfs.CrashOptions{}), "/")
			want := map[string]string{"/d": "<dir>"}
			maps.Copy(want, tc.want)
			if !maps.Equal(got, want) {
				t.Errorf("after Crash got %q, want %q", got, want)
			}
		})
	}
}

func TestMem_Crash_Independent(t *testing.T) {
	s := newMemSetup(t)
	s.durable("/d/x", "abc")
	f := s.open("/d/x", os.O_RDWR|os.O_APPEND)
	c := s.m.Crash(vfs.CrashOptions{})

	// Writing to the old FS, through an old handle or a new name, does
	// not reach the copy.
	s.write(f, "def")
	s.check(f.Sync())
	s.durable("/d/y", "old")
	if got, want := tree(t, c, "/d"), map[string]string{"/d/x": "abc"}; !maps.Equal(got, want) {
		t.Errorf("crash copy = %q, want %q", got, want)
	}
	// And the other way round.
	writeFile(t, c, "/d/x", "new")
	if got, want := readFile(t, s.m, "/d/x"), "abcdef"; got != want {
		t.Errorf("old FS /d/x = %q, want %q", got, want)
	}
}

func TestMem_Crash_Locks(t *testing.T) {
	s := newMemSetup(t)
	l, err := s.m.Lock("/d/LOCK")
	s.check(err)
	defer l.Close()
	c := s.m.Crash(vfs.CrashOptions{})
	l2, err := c.Lock("/d/LOCK")
	if err != nil {
		t.Fatalf("Lock after Crash = %v, want the lock released", err)
	}
	l2.Close()
	if _, err := s.m.Lock("/d/LOCK"); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("Lock on the old FS error = %v, want ErrLocked", err)
	}
}

func TestMem_Crash_Tear(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	const synced, tail = "synced:", "0123456789"
	s := newMemSetup(t)
	s.durable("/d/x", synced)
	s.write(s.open("/d/x", os.O_WRONLY|os.O_APPEND), tail)

	seen := make(map[int]bool) // torn lengths
	for range 300 {
		c := s.m.Crash(vfs.CrashOptions{Rand: rng, Tear: true})
		got := readFile(t, c, "/d/x")
		if len(got) < len(synced) || !strings.HasPrefix(synced+tail, got) {
			t.Fatalf("torn file = %q, want %q plus a prefix of %q", got, synced, tail)
		}
		seen[len(got)-len(synced)] = true

		// What the tear left is durable now.
		if again := readFile(t, c.Crash(vfs.CrashOptions{}), "/d/x"); again != got {
			t.Fatalf("crash of the torn copy = %q, want %q", again, got)
		}
	}
	if !seen[0] || !seen[len(tail)] {
		t.Errorf("torn lengths seen %v, want both 0 and %d among them", seen, len(tail))
	}
	// Without Tear nothing unsynced survives.
	if got := readFile(t, s.m.Crash(vfs.CrashOptions{Rand: rng}), "/d/x"); got != synced {
		t.Errorf("without Tear = %q, want %q", got, synced)
	}
}

func TestMem_Crash_TearNilRandIsFixed(t *testing.T) {
	s := newMemSetup(t)
	for _, name := range []string{"/d/a", "/d/b", "/d/c"} {
		s.durable(name, "")
		s.write(s.open(name, os.O_WRONLY), "0123456789abcdef")
	}
	first := tree(t, s.m.Crash(vfs.CrashOptions{Tear: true}), "/")
	for range 5 {
		if got := tree(t, s.m.Crash(vfs.CrashOptions{Tear: true}), "/"); !maps.Equal(got, first) {
			t.Fatalf("nil Rand tore %q, then %q", first, got)
		}
	}
}

// TestMem_Crash_Concurrent crashes while a writer appends and syncs. Run
// with -race.
func TestMem_Crash_Concurrent(t *testing.T) {
	s := newMemSetup(t)
	s.durable("/d/x", "")
	f := s.open("/d/x", os.O_WRONLY|os.O_APPEND)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 500 {
			f.Write([]byte{byte(i)})
			if i%7 == 0 {
				f.Sync()
			}
		}
	})
	for range 50 {
		c := s.m.Crash(vfs.CrashOptions{Tear: true})
		got := readFile(t, c, "/d/x")
		for i := range len(got) {
			if got[i] != byte(i) {
				t.Fatalf("byte %d = %d, want %d", i, got[i], byte(i))
			}
		}
	}
	wg.Wait()
}

func TestMem_FileBytes(t *testing.T) {
	s := newMemSetup(t)
	s.durable("/d/x", "hello")
	b, err := s.m.FileBytes("/d/x")
	s.check(err)
	b[0] ^= 0x20 // flip a bit: "Hello"
	s.check(s.m.SetFileBytes("/d/x", b))
	b[1] = '!' // SetFileBytes copied
	if got, want := readFile(t, s.m, "/d/x"), "Hello"; got != want {
		t.Errorf("after SetFileBytes = %q, want %q", got, want)
	}
	if got, want := readFile(t, s.m.Crash(vfs.CrashOptions{}), "/d/x"), "Hello"; got != want {
		t.Errorf("after SetFileBytes and Crash = %q, want %q", got, want)
	}
	if _, err := s.m.FileBytes("/d/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FileBytes(missing) error = %v, want ErrNotExist", err)
	}
	if err := s.m.SetFileBytes("/d", nil); err == nil {
		t.Error("SetFileBytes of a directory succeeded")
	}
}

func TestMem_Paths(t *testing.T) {
	s := newMemSetup(t)
	s.durable("/d/x", "hello")
	for _, name := range []string{"d/x", "/d/./x", "//d/x", "/d/../d/x", "/../d/x"} {
		b, err := s.m.FileBytes(name)
		if err != nil || !bytes.Equal(b, []byte("hello")) {
			t.Errorf("FileBytes(%q) = %q, %v, want hello", name, b, err)
		}
	}
	if _, err := s.m.OpenFile("/d", os.O_RDONLY, 0); err == nil {
		t.Error("opening a directory succeeded")
	}
	if err := s.m.Rename("/d", "/d/sub"); err == nil {
		t.Error("renaming a directory into itself succeeded")
	}
	if err := s.m.Remove("/"); err == nil {
		t.Error("removing the root succeeded")
	}
	if err := s.m.SyncDir("/d/x"); err == nil {
		t.Error("SyncDir of a file succeeded")
	}
}
