package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etlBinary builds lab/kafkaetl, the lab's Part 2 over Kafka, into a
// directory of the test (without -race: it is a client of the server
// under test, as serve is built without it for these tests).
func etlBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kafkaetl")
	if out, err := exec.Command("go", "build", "-o", path, "../../lab/kafkaetl").CombinedOutput(); err != nil {
		t.Fatalf("go build lab/kafkaetl: %v\n%s", err, out)
	}
	return path
}

// etlCrash runs kafkaetl with --crash-at, waits for it to say it is at the
// crash point (its work of that offset on the broker, its commit not
// done), and kills it with SIGKILL; it returns how long it ran.
func etlCrash(t *testing.T, etl string, args ...string) time.Duration {
	t.Helper()
	cmd := exec.Command(etl, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	took := time.Since(began)
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // ours, by pid
	cmd.Wait()
	if err != nil || line != "at the crash point\n" {
		t.Fatalf("kafkaetl %s: said %q (%v) before the crash point; stderr:\n%s", strings.Join(args, " "), line, err, stderr.String())
	}
	return took
}

// etlRun runs kafkaetl to the end of its input and returns how many
// records it processed and how long it took.
func etlRun(t *testing.T, etl string, args ...string) (int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang fails, it is not a measure
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(ctx, etl, args...).Output()
	took := time.Since(began)
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("kafkaetl %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	var n int
	if _, err := fmt.Sscanf(string(out), "processed %d records", &n); err != nil {
		t.Fatalf("kafkaetl said %q", out)
	}
	return n, took
}

// countOutput reads topic with `passbook consume --brokers --format json`
// at isolation iso and counts each input offset (the output's key).
func countOutput(t *testing.T, addr, topic, iso string, n int) (lines, missed int, dups []int64) {
	t.Helper()
	out, errOut, code := runBinary(t, t.TempDir(), "", "consume", topic, "--consumer", "count-"+iso, "--brokers", addr, "--format", "json", "--isolation", iso)
	if code != 0 {
		t.Fatalf("consume %s --isolation %s: exit %d: %s", topic, iso, code, errOut)
	}
	counts := make([]int, n)
	for line := range strings.Lines(out) {
		var m struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		off, err := strconv.Atoi(m.Key)
		if err != nil || off < 0 || off >= n || m.Value != "processed order #"+m.Key {
			t.Fatalf("an output record that no input made: %q", line)
		}
		counts[off]++
		lines++
	}
	for off, c := range counts {
		switch {
		case c == 0:
			missed++
		case c > 1:
			dups = append(dups, int64(off))
		}
	}
	return lines, missed, dups
}

// TestBinary_LabKafka is the seed's Part 2 over Kafka against passbook
// serve: a consume-transform-produce program (lab/kafkaetl, franz-go)
// reads 20,000 orders, writes one output each, and is killed with
// SIGKILL after the work of offset 11,999 and before its commit, then
// run again to the end (the seed's 100,000 and 59,999 with
// PASSBOOK_LAB_KAFKA=full, as scripts/test.sh long runs it: committing
// one record at a time under -race, that takes minutes). Committing
// after each record it leaves 1 duplicate (the crash offset) and 0 missed; with the work and the offsets in one
// Kafka transaction (GroupTransactSession) a read_committed reader of the
// output sees every order once, 0 missed and 0 duplicated, while
// read_uncommitted still shows the killed transaction's outputs, aborted.
func TestBinary_LabKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 20,000 records committed one at a time over Kafka (about 30 s)")
	}
	n, crashAt := 20_000, int64(11_999)
	if os.Getenv("PASSBOOK_LAB_KAFKA") == "full" {
		n, crashAt = 100_000, 59_999 // the seed's figures: 2 to 5 minutes
	}
	etl := etlBinary(t)
	p := startServe(t)
	for _, topic := range []string{"orders", "orders-out-after", "orders-out-tx"} {
		if _, errOut, code := runBinary(t, t.TempDir(), "", "topic", "create", topic, "--brokers", p.kafkaAddr); code != 0 {
			t.Fatalf("topic create %s: exit %d: %s", topic, code, errOut)
		}
	}
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "order #%d\n", i)
	}
	if _, errOut, code := runBinary(t, t.TempDir(), in.String(), "produce", "orders", "--brokers", p.kafkaAddr); code != 0 {
		t.Fatalf("produce: exit %d: %s", code, errOut)
	}

	for _, tc := range []struct {
		commit string
		dups   []int64 // read committed
	}{
		{"after", []int64{crashAt}},
		{"tx", nil},
	} {
		t.Run(tc.commit, func(t *testing.T) {
			out := "orders-out-" + tc.commit
			args := []string{"--brokers", p.kafkaAddr, "--in", "orders", "--out", out, "--group", "etl-" + tc.commit, "--commit", tc.commit}
			before := etlCrash(t, etl, append(args, "--crash-at", strconv.FormatInt(crashAt, 10))...)
			redone, after := etlRun(t, etl, args...)

			lines, missed, dups := countOutput(t, p.kafkaAddr, out, "read_committed", n)
			if missed != 0 || !slices.Equal(dups, tc.dups) || lines != n+len(tc.dups) {
				t.Errorf("read_committed: %d outputs, %d missed, duplicated %v; want 0 missed, duplicated %v", lines, missed, dups, tc.dups)
			}
			t.Logf("--commit %s: killed at %d after %s; the restart processed %d records in %s (%.0f records/s)",
				tc.commit, crashAt, before.Round(time.Millisecond), redone, after.Round(time.Millisecond), float64(redone)/after.Seconds())
			if tc.commit != "tx" {
				return
			}
			// The killed transaction's outputs are in the log, aborted:
			// read_uncommitted sees them (crashAt among them), and the
			// restart redid everything from the last committed offset.
			lines, missed, dups = countOutput(t, p.kafkaAddr, out, "read_uncommitted", n)
			if missed != 0 || !slices.Contains(dups, crashAt) || lines != n+len(dups) || redone != n-int(dups[0]) {
				t.Fatalf("read_uncommitted: %d outputs, %d missed, duplicated %v; the restart processed %d; want the aborted outputs, up to %d, duplicated",
					lines, missed, dups, redone, crashAt)
			}
			t.Logf("read_uncommitted sees %d aborted outputs (offsets %d to %d) that read_committed does not", len(dups), dups[0], dups[len(dups)-1])
		})
	}
}
