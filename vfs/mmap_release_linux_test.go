package vfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// rssFileKB is the process's resident file-backed memory (RssFile), in
// KiB: what a shared mapping's touched pages add to RSS.
func rssFileKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestOS_MappedReleaseLeavesRSS: pages written through a mapping count
// in the process's RSS until Release, after which they are out of it and
// every byte is still the file's, as a read of the file and a new
// mapping see.
func TestOS_MappedReleaseLeavesRSS(t *testing.T) {
	const size = 32 << 20
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := vfs.OS().(vfs.MapFS).MapFile(name, size)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Allocate(size); err != nil {
		t.Fatal(err)
	}
	before := rssFileKB(t)
	chunk := bytes.Repeat([]byte("passbook"), 512) // 4 KiB
	for off := int64(0); off < size; off += int64(len(chunk)) {
		if _, err := m.WriteAt(chunk, off); err != nil {
			t.Fatal(err)
		}
	}
	written := rssFileKB(t)
	if grew := written - before; grew < size/1024/2 {
		t.Skipf("RssFile grew by %d KiB for %d KiB written: this kernel does not count the mapping's pages, nothing to release", grew, size/1024)
	}
	m.Release(0, size)
	released := rssFileKB(t)
	if left := released - before; left > size/1024/8 {
		t.Fatalf("RssFile %d KiB above the start after Release (was %d KiB after writing %d KiB), want at most %d", left, written-before, size/1024, size/1024/8)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || !bytes.Equal(got, bytes.Repeat(chunk, size/len(chunk))) {
		t.Fatalf("the file after Release is not what was written (%d bytes)", len(got))
	}
}
