package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The built binary, as a user runs it. Tests that drive run() in-process
// can pass while the command fails (the lab's --crash process did), so
// every promise the CLI prints is also tested through a real process.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// passbookBinary builds ./cmd/passbook once per test run (with -race when
// the tests run with it) and returns the executable's path.
func passbookBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "passbook-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "passbook")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runBinary runs the built passbook with args in the working directory
// dir and returns its stdout, stderr and exit status.
func runBinary(t testing.TB, dir, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runProcess(t, passbookBinary(t), dir, binaryEnv(), stdin, args...)
}

// runProcess runs the executable bin with args in dir, with env and stdin,
// and returns its stdout, stderr and exit status; it fails the test only
// when the process cannot be run at all.
func runProcess(t testing.TB, bin, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run passbook %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// binaryEnv is the environment for the built binary: this process's,
// with the race detector's 1 s sleep at exit turned off.
func binaryEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
