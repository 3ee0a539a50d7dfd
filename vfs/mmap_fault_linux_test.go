package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// TestOS_MappedWriteFaultIsAnError: a mapped store the kernel cannot
// back (here the file cut short behind the mapping's back) fails that
// write with an error matching EIO instead of ending the process with
// SIGBUS, and the writes before it stand.
func TestOS_MappedWriteFaultIsAnError(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := vfs.OS().(vfs.MapFS).MapFile(name, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Allocate(64 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteAt([]byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, 4096); err != nil { // another hand cuts the file
		t.Fatal(err)
	}
	n, err := m.WriteAt([]byte("lost"), 32<<10)
	if n != 0 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("store past the cut: %d, %v; want 0 and an error matching EIO", n, err)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b[:4]) != "kept" {
		t.Fatalf("the file after the fault: %q, %v", b[:min(len(b), 4)], err)
	}
}
