package vfs_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// TestMem_Crash_TearOverwrite: an unsynced overwrite of synced bytes (a
// file updated in place) survives a power loss whole, not at all, or torn
// at any byte: new bytes up to a cut, the synced ones after it. Without
// Tear the synced bytes survive; after a Sync the new ones do.
func TestMem_Crash_TearOverwrite(t *testing.T) {
	const old, upd = "head:0123456789:tail", "head:abcdefghij:tail"
	s := newMemSetup(t)
	s.durable("/d/x", old)
	f := s.open("/d/x", os.O_WRONLY) // at offset 0, no truncation: in place
	s.write(f, upd)

	rng := rand.New(rand.NewPCG(1, 2))
	seen := make(map[int]bool) // cut positions inside "0123456789"
	for range 500 {
		got := readFile(t, s.m.Crash(vfs.CrashOptions{Rand: rng, Tear: true}), "/d/x")
		cut := -1
		for i := 0; i <= len(old); i++ {
			if got == upd[:i]+old[i:] {
				cut = i
				break
			}
		}
		if cut < 0 {
			t.Fatalf("torn overwrite = %q: not the new bytes up to a cut and the old ones after", got)
		}
		seen[min(max(cut, 5), 15)] = true
	}
	for i := 5; i <= 15; i++ {
		if !seen[i] {
			t.Errorf("no tear at byte %d among 500 crashes (seen %v)", i, seen)
		}
	}
	if got := readFile(t, s.m.Crash(vfs.CrashOptions{Rand: rng}), "/d/x"); got != old {
		t.Errorf("without Tear = %q, want the synced %q", got, old)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, s.m.Crash(vfs.CrashOptions{Rand: rng, Tear: true}), "/d/x"); got != upd {
		t.Errorf("after Sync = %q, want %q", got, upd)
	}
}
