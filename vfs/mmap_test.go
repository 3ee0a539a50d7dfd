package vfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// TestMapFS_Conformance: every file system that maps keeps MapFS's
// promises — a mapped write is visible to reads of the file at once,
// never grows it, and leaves its length to Allocate.
func TestMapFS_Conformance(t *testing.T) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			fsys, dir := im.new(t)
			if !vfs.CanMap(fsys) {
				if runtime.GOOS == "linux" {
					t.Fatalf("%s cannot map on linux", im.name)
				}
				t.Skip("no mapping on", runtime.GOOS)
			}
			name := filepath.Join(dir, "seg")
			writeFile(t, fsys, name, "head")
			m, err := fsys.(vfs.MapFS).MapFile(name, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if m.Size() != 4 {
				t.Fatalf("size %d, want 4 (mapping changes no length)", m.Size())
			}
			if _, err := m.WriteAt([]byte("x"), 4); !errors.Is(err, syscall.EFAULT) {
				t.Fatalf("write past the end: %v, want EFAULT", err)
			}
			if err := m.Allocate(3 << 20); err != nil { // past the reserve: maps more
				t.Fatal(err)
			}
			if m.Size() != 3<<20 {
				t.Fatalf("size %d after Allocate", m.Size())
			}
			m.Populate(4, 1<<20) // a hint: changes nothing
			if _, err := m.WriteAt([]byte("-body"), 4); err != nil {
				t.Fatal(err)
			}
			if _, err := m.WriteAt([]byte("tail"), 3<<20-4); err != nil {
				t.Fatal(err)
			}
			big := bytes.Repeat([]byte("0123456789abcdef"), 40<<10/16) // past the OS's pwrite threshold
			if n, err := m.WriteAt(big, 1<<20); err != nil || n != len(big) {
				t.Fatalf("a 40 KiB write: %d, %v", n, err)
			}
			f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := make([]byte, 9)
			if _, err := f.ReadAt(got, 0); err != nil || string(got) != "head-body" {
				t.Fatalf("read %q, %v: the mapped write is not visible", got, err)
			}
			if _, err := f.ReadAt(got[:4], 3<<20-4); err != nil || string(got[:4]) != "tail" {
				t.Fatalf("read %q, %v at the end", got[:4], err)
			}
			back := make([]byte, len(big))
			if _, err := f.ReadAt(back, 1<<20); err != nil || !bytes.Equal(back, big) {
				t.Fatalf("the 40 KiB write read back wrong: %v", err)
			}
			zeros := make([]byte, 1<<10)
			if _, err := f.ReadAt(zeros, 9); err != nil || !bytes.Equal(zeros, make([]byte, 1<<10)) {
				t.Fatalf("allocated bytes are not zeros: %v", err)
			}
			if err := f.Sync(); err != nil { // fdatasync writes the mapping back
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := m.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
				t.Fatalf("write after Close: %v", err)
			}
			if fi, err := fsys.Stat(name); err != nil || fi.Size() != 3<<20 {
				t.Fatalf("after Close: %v, %v (Close keeps the length)", fi, err)
			}
			if _, err := fsys.(vfs.MapFS).MapFile(filepath.Join(dir, "missing"), 1<<20); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("mapping a missing file: %v", err)
			}
		})
	}
}

// TestMapFS_PopulateRacesWrites: Populate on one goroutine while the
// writer copies and allocates on another (the storage engine's use),
// under -race.
func TestMapFS_PopulateRacesWrites(t *testing.T) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			fsys, dir := im.new(t)
			if !vfs.CanMap(fsys) {
				t.Skip("no mapping")
			}
			name := filepath.Join(dir, "seg")
			writeFile(t, fsys, name, "")
			m, err := fsys.(vfs.MapFS).MapFile(name, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			rec := bytes.Repeat([]byte{7}, 100)
			var wg sync.WaitGroup
			for i := range 2000 {
				off := int64(i * len(rec))
				if off+int64(len(rec)) > m.Size() {
					wg.Wait() // Allocate may remap: not concurrent with Populate
					if err := m.Allocate(m.Size() + 64<<10); err != nil {
						t.Fatal(err)
					}
					wg.Add(1)
					go func(from int64) { defer wg.Done(); m.Populate(from, 64<<10) }(m.Size() - 64<<10)
				}
				if _, err := m.WriteAt(rec, off); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := vfs.ReadFile(fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[:2000*100], bytes.Repeat([]byte{7}, 2000*100)) {
				t.Fatal("mapped bytes lost or changed")
			}
		})
	}
}

// TestMem_MappedWritesAreUnsynced: a power loss (Crash) keeps mapped
// bytes only once the file was synced, as it does written ones; with
// Pages it keeps any of the unsynced pages, each whole or as zeros.
func TestMem_MappedWritesAreUnsynced(t *testing.T) {
	mem := vfs.NewMem()
	writeFile(t, mem, "/seg", "")
	if err := mem.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	m, err := mem.MapFile("/seg", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Allocate(16 << 10); err != nil {
		t.Fatal(err)
	}
	m.WriteAt([]byte("synced"), 0)
	f, _ := mem.OpenFile("/seg", os.O_RDWR, 0)
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	page := bytes.Repeat([]byte{1}, 4096)
	for p := int64(4096); p < 16<<10; p += 4096 {
		m.WriteAt(page, p)
	}
	lost, _ := mem.Crash(vfs.CrashOptions{}).FileBytes("/seg")
	if len(lost) != 16<<10 || string(lost[:6]) != "synced" || !bytes.Equal(lost[4096:], make([]byte, 12<<10)) {
		t.Fatalf("power loss kept unsynced mapped bytes (or lost synced ones)")
	}
	seenZero, seenKept := false, false
	for seed := range uint64(32) {
		got, _ := mem.Crash(vfs.CrashOptions{Tear: true, Pages: true, Rand: newRand(seed)}).FileBytes("/seg")
		if string(got[:6]) != "synced" || len(got) != 16<<10 {
			t.Fatalf("seed %d: synced bytes or the synced length lost", seed)
		}
		for p := 4096; p < len(got); p += 4096 {
			switch pg := got[p : p+4096]; {
			case bytes.Equal(pg, page):
				seenKept = true
			case bytes.Equal(pg, make([]byte, 4096)):
				seenZero = true
			default:
				t.Fatalf("seed %d: page at %d is neither written nor zeros", seed, p)
			}
		}
	}
	if !seenZero || !seenKept {
		t.Fatalf("pages: lost seen %v, kept seen %v; want both over 32 seeds", seenZero, seenKept)
	}
}

// TestFaulty_MappedFaults: FaultyFS counts a mapped write as a write and
// an allocation as a truncate, and fails them as it fails those.
func TestFaulty_MappedFaults(t *testing.T) {
	mem := vfs.NewMem()
	writeFile(t, mem, "/seg", "")
	fsys := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: 2, Kinds: vfs.OpWrite | vfs.OpTruncate | vfs.OpOpen, ShortWrite: true})
	m, err := fsys.MapFile("/seg", 1<<20) // op 0
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Allocate(8); err != nil { // op 1
		t.Fatal(err)
	}
	n, err := m.WriteAt([]byte("abcdefgh"), 0) // op 2: fails, half copied
	if !errors.Is(err, vfs.ErrInjected) || n != 4 {
		t.Fatalf("n=%d err=%v, want 4 and an injected fault", n, err)
	}
	if b, _ := mem.FileBytes("/seg"); string(b) != "abcd\x00\x00\x00\x00" {
		t.Fatalf("file %q", b)
	}
	if vfs.CanMap(vfs.WithoutMapping(mem)) || vfs.CanMap(vfs.NewFaulty(vfs.WithoutMapping(mem), vfs.FaultyOptions{FailAt: -1})) {
		t.Fatal("WithoutMapping still maps")
	}
}

// TestFull_MappedAllocate: a full disk refuses an allocation with ENOSPC,
// never a mapped write into space already allocated.
func TestFull_MappedAllocate(t *testing.T) {
	mem := vfs.NewMem()
	writeFile(t, mem, "/seg", "")
	d := vfs.NewFull(mem)
	m, err := d.MapFile("/seg", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Allocate(8); err != nil {
		t.Fatal(err)
	}
	d.SetFull(true)
	if err := m.Allocate(16); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Allocate on a full disk: %v", err)
	}
	if _, err := m.WriteAt([]byte("12345678"), 0); err != nil {
		t.Fatalf("a write into allocated space failed: %v", err)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 9)) }
