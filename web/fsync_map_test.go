package web

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// The timer keeps the logs' mapped write path (vfs.MapFS): passbook
// serve wraps its file system in one for /metrics.
func TestSyncTimer_Maps(t *testing.T) {
	st := NewSyncTimer(nil)
	if runtime.GOOS != "linux" {
		if _, err := st.MapFile(filepath.Join(t.TempDir(), "x"), 1<<20); err == nil {
			t.Fatal("mapped where the OS does not map")
		}
		return
	}
	name := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !vfs.CanMap(st) {
		t.Fatal("the timer hides the mapping")
	}
	m, err := st.MapFile(name, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Allocate(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteAt([]byte("mapped"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b[:6]) != "mapped" {
		t.Fatalf("read %q, %v", b[:6], err)
	}
	if _, err := NewSyncTimer(vfs.WithoutMapping(vfs.OS())).MapFile(name, 1<<20); !errors.Is(err, vfs.ErrNoMapping) {
		t.Fatalf("a timer over a file system without mapping: %v, want ErrNoMapping", err)
	}
}
