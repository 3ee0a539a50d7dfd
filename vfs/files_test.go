package vfs_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// TestWriteFileAtomic_EveryFault fails each operation of a replacement in
// turn, then loses power: the file holds the old bytes or the new, never a
// mix or nothing, and once WriteFileAtomic returns nil the new bytes
// survive the power loss.
func TestWriteFileAtomic_EveryFault(t *testing.T) {
	old, repl := []byte("old contents"), []byte("the new contents, longer than the old")
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		if err := mem.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := mem.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(mem, "/d", "f.json", old); err != nil {
			t.Fatal(err)
		}
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, ShortWrite: true})
		err := vfs.WriteFileAtomic(faulty, "/d", "f.json", repl)
		done := faulty.Ops() <= i
		if done && err != nil {
			t.Fatalf("no fault injected, yet: %v", err)
		}
		if !done && !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("fault at op %d: %v, want one matching ErrInjected", i, err)
		}
		got, rerr := vfs.ReadFile(mem.Crash(vfs.CrashOptions{}), "/d/f.json")
		switch {
		case rerr != nil:
			t.Fatalf("fault at op %d: after a power loss: %v", i, rerr)
		case err == nil && string(got) != string(repl):
			t.Fatalf("fault at op %d: acknowledged, yet %q after a power loss", i, got)
		case string(got) != string(old) && string(got) != string(repl):
			t.Fatalf("fault at op %d: %q after a power loss, want the old or the new bytes", i, got)
		}
		if done {
			return
		}
	}
}

func TestRemoveAll(t *testing.T) {
	mem := vfs.NewMem()
	for _, d := range []string{"/d/a/b", "/d/c"} {
		if err := mem.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/d/x", "/d/a/y", "/d/a/b/z"} {
		if err := vfs.WriteFileAtomic(mem, "/d", "tmp", nil); err != nil {
			t.Fatal(err)
		}
		if err := mem.Rename("/d/tmp", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := vfs.RemoveAll(mem, "/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/d"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after RemoveAll: %v, want ErrNotExist", err)
	}
	if err := vfs.RemoveAll(mem, "/d"); err != nil {
		t.Fatalf("RemoveAll of what is not there: %v, want nil", err)
	}
}
