// Package leakcheck fails a package's tests when goroutines they started
// still run after the last test: a goroutine left behind by a closed
// server, reader or consumer is a bug, even when every test passed.
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
//
// It is the standard library's runtime.Stack, read the way
// go.uber.org/goleak reads it, without the dependency.
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Grace is how long goroutines get to end after the last test (a closed
// connection's reader, a stopped ticker's loop) before they are leaks.
// Run looks again as soon as they are gone; it waits the whole Grace
// only when some goroutine never ends.
const Grace = 10 * time.Second

// ignored are goroutines that belong to the runtime, the test binary or
// a library, not to the package, each started once for the process and
// for good: the signal loop of os/signal, and the meter ticker of
// go-metrics that sarama's first client starts.
var ignored = []string{
	"os/signal.signal_recv",
	"os/signal.loop",
	"runtime.ensureSigM",
	"testing.(*M).",
	"testing.tRunner",
	"testing.runTests",
	"github.com/rcrowley/go-metrics.(*meterArbiter).tick",
}

// Run runs the tests, then the package's cleanups (what it keeps for
// all its tests, like a fuzz target's shared server), and, when the
// tests all passed, fails (returning 1) if goroutines they started are
// still running after Grace, printing each one's stack. It returns the
// exit code for os.Exit.
func Run(m *testing.M, cleanups ...func()) int {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	if code != 0 {
		return code
	}
	if leaks := Find(Grace); leaks != "" {
		fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running after the last test:\n\n%s\n", leaks)
		return 1
	}
	return 0
}

// Find returns the stacks of the goroutines other than the caller's and
// the ignored ones, once there are none or grace has passed: "" when
// every one ended.
func Find(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	wait := time.Millisecond
	for {
		leaks := others()
		if len(leaks) == 0 {
			return ""
		}
		if !time.Now().Before(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// others lists the stacks of every goroutine but the caller's and the
// ignored ones.
func others() []string {
	var out []string
	for _, s := range Stacks()[1:] {
		if !isIgnored(s) {
			out = append(out, s)
		}
	}
	return out
}

// Stacks returns the stack of every goroutine, the caller's first: a
// "goroutine N [state]:" line and its frames each, as runtime.Stack
// writes them. Tests that check which goroutines wait where read them.
func Stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if s := string(bytes.TrimSpace(g)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func isIgnored(stack string) bool {
	for _, line := range strings.Split(stack, "\n")[1:] {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "created by ") {
			continue // a file:line, or who started it
		}
		for _, f := range ignored {
			if strings.HasPrefix(line, f) {
				return true
			}
		}
	}
	return false
}
