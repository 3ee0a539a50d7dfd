package vfs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// TestOS_Lock_OtherProcess has a child process hold the lock and checks
// that Lock names the child's pid.
func TestOS_Lock_OtherProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("flock is unix-only")
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOS_Lock_HelperProcess$")
	cmd.Env = append(os.Environ(), "VFS_TEST_LOCK_HELPER="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()

	// Wait for the child to say it holds the lock.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "locked" {
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}

	_, err = vfs.OS().Lock(name)
	var le *vfs.LockedError
	if !errors.Is(err, vfs.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("Lock error = %v, want a *LockedError", err)
	}
	if want := fmt.Sprintf("vfs: %s is locked by process %d", name, cmd.Process.Pid); err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if le.PID != cmd.Process.Pid {
		t.Errorf("PID = %d, want %d", le.PID, cmd.Process.Pid)
	}

	// Once the child exits, the lock is free.
	stdin.Close()
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v", err)
	}
	l, err := vfs.OS().Lock(name)
	if err != nil {
		t.Fatalf("Lock after the holder exited = %v", err)
	}
	l.Close()
}

// TestOS_Lock_HelperProcess is the child of TestOS_Lock_OtherProcess: it
// takes the lock, says "locked" and holds it until stdin closes.
func TestOS_Lock_HelperProcess(t *testing.T) {
	name := os.Getenv("VFS_TEST_LOCK_HELPER")
	if name == "" {
		t.Skip("helper process for TestOS_Lock_OtherProcess")
	}
	l, err := vfs.OS().Lock(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.Close()
	os.Exit(0)
}

func TestOS_OSFile(t *testing.T) {
	type osFiler interface{ OSFile() *os.File }
	name := filepath.Join(t.TempDir(), "x")
	f, err := vfs.OS().OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	of, ok := f.(osFiler)
	if !ok {
		t.Fatalf("%T has no OSFile method", f)
	}
	if got := of.OSFile().Name(); got != name {
		t.Errorf("OSFile().Name() = %q, want %q", got, name)
	}
	g, err := vfs.NewFaulty(vfs.OS(), vfs.FaultyOptions{FailAt: -1}).OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, ok := g.(osFiler); ok {
		t.Errorf("Faulty's %T exposes OSFile, bypassing faults", g)
	}
}
