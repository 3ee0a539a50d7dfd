package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// consumeTopic makes a data directory in a new temporary directory with
// topic t of n records, "v-0000000", "v-0000001", …, in partitions (each
// partition p holding values p, p+partitions, …). It returns the working
// directory (the data is in its passbook-data).
func consumeTopic(t *testing.T, n, partitions int) string {
	t.Helper()
	dir := t.TempDir()
	db, err := passbook.Open(filepath.Join(dir, "passbook-data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err := db.CreateTopic("t", passbook.TopicConfig{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	for p := range partitions {
		var recs []passbook.Record
		for i := p; i < n; i += partitions {
			recs = append(recs, passbook.Record{Value: fmt.Appendf(nil, "v-%07d", i)})
			if len(recs) == 5000 || i+partitions >= n {
				if _, err := topic.AppendTo(int32(p), recs, storage.DefaultDurability); err != nil {
					t.Fatal(err)
				}
				recs = recs[:0]
			}
		}
	}
	return dir
}

// lines splits consume's text output into its values. A last line with
// no newline — a write torn by the kill — was not delivered: it is
// dropped.
func lines(out []byte) []string {
	s := string(out)
	if i := strings.LastIndexByte(s, '\n'); i+1 < len(s) {
		s = s[:i+1]
	}
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// delivery counts how often each of n values was delivered.
func delivery(t *testing.T, n int, outs ...[]byte) (counts []int, missing, twice int) {
	t.Helper()
	counts = make([]int, n)
	for _, out := range outs {
		for _, l := range lines(out) {
			var i int
			if _, err := fmt.Sscanf(l, "v-%07d", &i); err != nil || i < 0 || i >= n {
				t.Fatalf("consume printed %q, not a value of the topic", l)
			}
			counts[i]++
		}
	}
	for _, c := range counts {
		if c == 0 {
			missing++
		}
		if c > 1 {
			twice += c - 1
		}
	}
	return counts, missing, twice
}

// startConsume starts `passbook consume t --consumer name args…` in dir
// with its stdout going to the file out.
func startConsume(t *testing.T, dir, out, name string, args ...string) (*exec.Cmd, <-chan error) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(passbookBinary(t), append([]string{"consume", "t", "--consumer", name}, args...)...)
	cmd.Dir, cmd.Stdout = dir, f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil && stderr.Len() > 0 && !strings.Contains(stderr.String(), "interrupted") {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		done <- err
	}()
	return cmd, done
}

// waitForOutput waits until the file out holds at least size bytes or the
// process is done (it returns true then, with the process's error).
func waitForOutput(out string, size int64, done <-chan error) (exited bool, err error) {
	for {
		select {
		case err := <-done:
			return true, err
		default:
		}
		if fi, err := os.Stat(out); err == nil && fi.Size() >= size {
			return false, nil
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// quickExit stops the race detector's one-second sleep at the exit of
// every child (its atexit_sleep_ms), which would otherwise be most of
// these tests' time.
func quickExit(t *testing.T) {
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// TestConsume_Kill9 is the promise of --commit, through the built binary:
// a consume writing to a file is killed with SIGKILL at a random moment
// (once its output reaches a random size), then the same consumer
// resumes. With after (and every=N) the two runs together hold every
// record; with before, none twice. What each mode may cost is bounded:
// after and before by one 64 KiB buffer, every=N by N records.
func TestConsume_Kill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 rounds run in the default tier, not under -short")
	}
	const n, partitions, lineBytes = 300_000, 3, len("v-0000000\n")
	const buffer = outputBuffer / lineBytes // the records one buffer holds
	quickExit(t)
	dir := consumeTopic(t, n, partitions)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for _, tc := range []struct {
		commit               string
		rounds               int
		lossless             bool // every record delivered at least once
		atMostOnce           bool // no record delivered twice
		maxTwice, maxMissing int
	}{
		{commit: "after", rounds: 4, lossless: true, maxTwice: buffer},
		{commit: "before", rounds: 4, atMostOnce: true, maxMissing: buffer},
		{commit: "every=1000", rounds: 3, lossless: true, maxTwice: 1000},
	} {
		t.Run(tc.commit, func(t *testing.T) {
			for round := range tc.rounds {
				name := fmt.Sprintf("k-%s-%d", strings.ReplaceAll(tc.commit, "=", ""), round)
				out := filepath.Join(t.TempDir(), "out")
				target := rng.Int64N(int64(n * lineBytes))
				cmd, done := startConsume(t, dir, out, name, "--commit", tc.commit)
				exited, err := waitForOutput(out, target, done)
				if !exited {
					// Then up to 2 ms more, so that the kill lands anywhere
					// in the cycle of filling, writing and committing.
					time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
					cmd.Process.Kill() // SIGKILL, of this test's own child only
					err = <-done
					if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
						err = nil // killed, as meant; otherwise it finished (or failed) first
					}
				}
				if err != nil {
					t.Fatalf("round %d: consume: %v", round, err)
				}
				first, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				rest, stderr, code := runBinary(t, dir, "", "consume", "t", "--consumer", name, "--commit", tc.commit)
				if code != 0 {
					t.Fatalf("round %d: resumed consume: exit %d: %s", round, code, stderr)
				}
				_, missing, twice := delivery(t, n, first, []byte(rest))
				t.Logf("round %d: killed after %d of %d bytes: %d missing, %d delivered twice", round, len(first), n*lineBytes, missing, twice)
				if tc.lossless && missing > 0 {
					t.Errorf("round %d: %d records never delivered (--commit %s is at-least-once)", round, missing, tc.commit)
				}
				if tc.atMostOnce && twice > 0 {
					t.Errorf("round %d: %d records delivered twice (--commit %s is at-most-once)", round, twice, tc.commit)
				}
				if twice > tc.maxTwice {
					t.Errorf("round %d: %d records delivered twice, want at most %d", round, twice, tc.maxTwice)
				}
				if missing > tc.maxMissing {
					t.Errorf("round %d: %d records lost, want at most %d", round, missing, tc.maxMissing)
				}
			}
		})
	}
}

// TestConsume_Signal: on SIGINT or SIGTERM consume writes out what it
// buffered, commits exactly that and exits 130 or 143; the next run starts
// at the next record: every record exactly once over the two runs.
func TestConsume_Signal(t *testing.T) {
	const n = 300_000
	quickExit(t)
	dir := consumeTopic(t, n, 2)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{
		{syscall.SIGINT, 130},
		{syscall.SIGTERM, 143},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			for _, follow := range []bool{false, true} {
				name := fmt.Sprintf("s-%d-%v", tc.sig, follow)
				out := filepath.Join(t.TempDir(), "out")
				args := []string{}
				if follow {
					args = append(args, "--follow")
				}
				cmd, done := startConsume(t, dir, out, name, args...)
				// Without --follow: interrupted part-way (if it has not
				// finished first); with it: waiting at the head.
				size := int64(n * len("v-0000000\n") / 3)
				if follow {
					size = int64(n * len("v-0000000\n"))
				}
				exited, err := waitForOutput(out, size, done)
				if !exited {
					if err := cmd.Process.Signal(tc.sig); err != nil {
						t.Fatal(err)
					}
					err = <-done
					if code := cmd.ProcessState.ExitCode(); code != tc.code {
						t.Fatalf("follow %v: exit %d after %v, want %d (%v)", follow, code, tc.sig, tc.code, err)
					}
				} else if err != nil {
					t.Fatalf("follow %v: consume: %v", follow, err)
				}
				first, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				rest, stderr, code := runBinary(t, dir, "", "consume", "t", "--consumer", name)
				if code != 0 {
					t.Fatalf("resumed consume: exit %d: %s", code, stderr)
				}
				_, missing, twice := delivery(t, n, first, []byte(rest))
				t.Logf("follow %v: %d records before %v, %d after", follow, len(lines(first)), tc.sig, len(lines([]byte(rest))))
				if missing > 0 || twice > 0 {
					t.Errorf("follow %v: %d records missing and %d delivered twice over the two runs, want every record exactly once", follow, missing, twice)
				}
			}
		})
	}
}

// TestConsume_BadStart: an --from offset outside a partition and an
// unknown --partition are bad input, through the built binary: exit 2, a
// message naming the partition and what is valid, and nothing committed.
func TestConsume_BadStart(t *testing.T) {
	quickExit(t)
	dir := consumeTopic(t, 1_000, 2) // 500 records in each partition
	for _, tc := range []struct {
		args []string
		want []string // in the error, in this order
	}{
		{[]string{"--from", "501"}, []string{"offset 501 on t/0 is past the head", "valid offsets are 0 to 500", "use --from earliest (0) or --from latest (500)"}},
		{[]string{"--from", "9999999", "--partition", "1"}, []string{"offset 9,999,999 on t/1 is past the head", "use --from earliest (0) or --from latest (500)"}},
		{[]string{"--partition", "2"}, []string{"topic t has no partition 2: its partitions are 0 to 1"}},
		{[]string{"--partition", "0,0"}, []string{"partition 0 of t is named twice"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, stderr, code := runBinary(t, dir, "", append([]string{"consume", "t", "--consumer", "bad"}, tc.args...)...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want exit 2 and nothing printed", code, out)
			}
			rest := stderr
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q does not say %q", stderr, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	db, err := passbook.Open(filepath.Join(dir, "passbook-data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if list, err := db.Offsets().List(t.Context(), offsets.Filter{Consumer: "bad"}); err != nil || len(list) != 0 {
		t.Errorf("consumer bad has committed %v (%v), want nothing", list, err)
	}
}
