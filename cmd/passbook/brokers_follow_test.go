package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveAt runs `passbook serve` on dir with its Kafka listener at addr
// (so that a client can find it again after a restart) and returns once
// it accepts, with a function that stops it (SIGTERM, then wait).
func serveAt(t *testing.T, dir, addr string) (stop func()) {
	t.Helper()
	cmd := exec.Command(plainBinary(t), "--data", dir, "serve", "--kafka", addr, "--http", freePort(t))
	cmd.Env = binaryEnv()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	}
	t.Cleanup(stop)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return stop
		}
		select {
		case <-exited:
			t.Fatalf("passbook serve exited: %v\n%s", cmd.ProcessState, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestBrokers_FollowOutlastsTheServer: `consume --follow --brokers`
// stays when the server goes away — it says so on stderr and tries
// again, with a backoff — and once the server is back it carries on:
// every record produced before and after, each once, and what it wrote
// committed when Ctrl-C stops it. With --commit every=150 the first 100
// records are written and not yet committed when the server goes; they
// are not written again after it.
func TestBrokers_FollowOutlastsTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a server stopped and started again under a follower")
	}
	for _, commit := range []string{"after", "every=150"} {
		t.Run(commit, func(t *testing.T) { followOutlastsTheServer(t, commit) })
	}
}

func followOutlastsTheServer(t *testing.T, commit string) {
	quickExit(t)
	dir := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	stop := serveAt(t, dir, addr)
	b := []string{"--brokers", addr}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "create", "t")...); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	produce := func(from, n int) {
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "v-%05d\n", from+i)
		}
		if _, stderr, code := runBinary(t, "", in.String(), append(b, "produce", "t")...); code != 0 {
			t.Fatalf("produce: exit %d: %s", code, stderr)
		}
	}
	produce(0, 100)

	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(passbookBinary(t), append(b, "consume", "t", "--consumer", "tail", "--follow", "--session-timeout", "2s", "--commit", commit)...)
	cmd.Env, cmd.Stdout = binaryEnv(), f
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	if exited, err := waitForOutput(out, 100*int64(len("v-00000\n")), done); exited {
		t.Fatalf("consume --follow exited: %v: %s", err, stderr)
	}

	stop()
	waitFor(t, 60*time.Second, "consume to say it tries again", func() bool {
		select {
		case err := <-done:
			t.Fatalf("consume --follow exited when the server went away: %v: %s", err, stderr)
		default:
		}
		return strings.Contains(stderr.String(), "trying again in")
	})
	serveAt(t, dir, addr)
	produce(100, 100)
	if exited, err := waitForOutput(out, 200*int64(len("v-00000\n")), done); exited {
		t.Fatalf("consume --follow exited: %v: %s", err, stderr)
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("consume after SIGINT: exit %d, want 130: %s", code, stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 200 {
		want = append(want, fmt.Sprintf("v-%05d", i))
	}
	if l := lines(got); !slices.Equal(l, want) {
		t.Errorf("consume wrote %d lines, want the 200 produced, in order, each once", len(l))
	}
	if again, _, _ := runBinary(t, "", "", append(b, "consume", "t", "--consumer", "tail")...); again != "" {
		t.Errorf("the next run read %q again, want nothing (all committed)", again)
	}
	t.Logf("consume's stderr:\n%s", stderr)
}
