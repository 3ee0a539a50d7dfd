package offsets_test

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook/offsets"
)

const (
	crashEnv     = "OFFSETS_TEST_CRASH_PATH"
	crashCommits = 200
)

// A returned commit survives a crash of the process (SIGKILL, no Close),
// in both durability modes.
func TestSQLite_ProcessCrash(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	for _, sync := range []string{"normal", "full"} {
		t.Run(sync, func(t *testing.T) {
			path := tempPath(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestSQLite_ProcessCrash$")
			cmd.Env = append(os.Environ(), crashEnv+"="+path, "OFFSETS_TEST_SYNC="+sync)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, out)
			}
			s := open(t, path, nil)
			k := offsets.Key{Consumer: "c", Topic: "t"}
			if got, err := s.Committed(ctx, k); err != nil || got != crashCommits {
				t.Errorf("after crash: Committed = %d, %v; want %d", got, err, crashCommits)
			}
		})
	}
}

func crashChild(path string) {
	opts := &offsets.Options{}
	if os.Getenv("OFFSETS_TEST_SYNC") == "full" {
		opts.Synchronous = offsets.SyncFull
	}
	s, err := offsets.Open(path, opts)
	if err != nil {
		panic(err)
	}
	k := offsets.Key{Consumer: "c", Topic: "t"}
	for i := range int64(crashCommits) {
		if err := s.Commit(ctx, k, i+1); err != nil {
			panic(err)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
