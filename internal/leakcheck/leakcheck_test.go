package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	if leaks := Find(time.Second); leaks != "" {
		t.Fatalf("goroutines before the test:\n%s", leaks)
	}
	// A goroutine that ends soon is not a leak: Find waits for it.
	done := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(done)
	}()
	if leaks := Find(Grace); leaks != "" {
		t.Errorf("a goroutine that ended reported as a leak:\n%s", leaks)
	}
	<-done

	// One that never ends (until told) is, with its stack.
	stop := make(chan struct{})
	go blockUntil(stop)
	leaks := Find(50 * time.Millisecond)
	close(stop)
	if !strings.Contains(leaks, "leakcheck.blockUntil(") {
		t.Errorf("the goroutine left running is not reported; Find = %q", leaks)
	}
}

func blockUntil(stop chan struct{}) { <-stop }
