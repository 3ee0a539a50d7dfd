package offsets

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

const walCrashEnv = "OFFSETS_TEST_WALMAP_PATH"

// TestSQLite_ProcessCrash_MappedWAL: a child process commits as fast as it
// can and says on stdout each offset whose Commit returned; it is killed
// with SIGKILL at a random moment. Every offset it announced must be
// there after a reopen — through WAL checkpoints and restarts
// (autocheckpoint 1,000 pages), and through the mapping growing past its
// first chunk (autocheckpoint off, the WAL past walMapChunk).
func TestSQLite_ProcessCrash_MappedWAL(t *testing.T) {
	if path := os.Getenv(walCrashEnv); path != "" {
		walCrashChild(path, os.Getenv("OFFSETS_TEST_WALMAP_CKPT"))
		return
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		name    string
		ckpt    string
		atLeast int // commits before the kill, at the least
	}{
		{"checkpoints", "1000", 2_500},
		{"mapping grows", "0", walMapChunk/(pageSize+24) + 500},
	} {
		for trial := range 3 {
			t.Run(fmt.Sprintf("%s/%d", tc.name, trial), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "offsets.db")
				cmd := exec.Command(os.Args[0], "-test.run=^TestSQLite_ProcessCrash_MappedWAL$")
				cmd.Env = append(os.Environ(), walCrashEnv+"="+path, "OFFSETS_TEST_WALMAP_CKPT="+tc.ckpt)
				cmd.Stderr = os.Stderr
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				killAt := tc.atLeast + rng.IntN(2_000)
				sc := bufio.NewScanner(out)
				acked := int64(-1)
				for sc.Scan() {
					if acked, err = strconv.ParseInt(sc.Text(), 10, 64); err != nil {
						t.Fatalf("child said %q", sc.Text())
					}
					if acked == int64(killAt) {
						cmd.Process.Signal(syscall.SIGKILL) // while it goes on committing
						break
					}
				}
				cmd.Wait()
				if acked != int64(killAt) {
					t.Fatalf("the child stopped at %d, before %d", acked, killAt)
				}
				s, err := Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				got, err := s.Committed(context.Background(), Key{Consumer: "c", Topic: "t"})
				if err != nil || got < acked {
					t.Fatalf("after SIGKILL: committed %d, %v; the child had announced %d", got, err, acked)
				}
			})
		}
	}
}

func walCrashChild(path, ckpt string) {
	s, err := Open(path, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := s.do(ctx, func(c *sqlite3.Conn) error { return c.Exec("PRAGMA wal_autocheckpoint=" + ckpt) }); err != nil {
		panic(err)
	}
	w := bufio.NewWriter(os.Stdout)
	k := Key{Consumer: "c", Topic: "t"}
	for i := int64(1); ; i++ {
		if err := s.Commit(ctx, k, i); err != nil {
			panic(err)
		}
		fmt.Fprintln(w, i)
		w.Flush()
	}
}
