package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcUsage reads this test process's own figures: a resident set of
// at least the 64 MiB it has just touched, and CPU time that grows when
// it spins.
func TestProcUsage(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	rss, cpu0, err := procUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < int64(len(buf)) {
		t.Errorf("RSS %d B after touching %d B", rss, len(buf))
	}
	// Spin until the kernel has counted 50 ms more CPU time, however
	// busy the machine is.
	spent := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for from := spent(); spent()-from < 50*time.Millisecond; {
	}
	_, cpu1, err := procUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu1 <= cpu0 {
		t.Errorf("CPU time %v after spinning, %v before", cpu1, cpu0)
	}
	if buf[len(buf)-1] != byte(len(buf)-1) {
		t.Fatal("buffer changed")
	}
	if _, _, err := procUsage(-1); err == nil {
		t.Error("no error for pid -1")
	}
}
