package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// numberedLines is n lines "v-0000000\n" … for produce's stdin.
func numberedLines(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "v-%07d\n", i)
	}
	return b.String()
}

// describeJSON is topic describe --json of name.
func describeJSON(t *testing.T, args ...string) passbook.TopicInfo {
	t.Helper()
	stdout, stderr, code := runBinary(t, "", "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var info passbook.TopicInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("describe --json: %v\n%s", err, stdout)
	}
	return info
}

// TestTopicAlterTrim_DataDirectory: topic alter and topic trim on a data
// directory, the way a user runs them, with their errors and exit codes.
func TestTopicAlterTrim_DataDirectory(t *testing.T) {
	dir := t.TempDir()
	run := func(stdin string, args ...string) (string, string, int) {
		return runBinary(t, "", stdin, append([]string{"--data", dir}, args...)...)
	}
	for _, step := range [][]string{
		{"topic", "create", "t"},
		{"topic", "create", "keys", "--cleanup-policy", "compact"},
	} {
		if _, stderr, code := run("", step...); code != 0 {
			t.Fatalf("%v: exit %d: %s", step, code, stderr)
		}
	}
	if _, stderr, code := run(numberedLines(0, 100), "produce", "t"); code != 0 {
		t.Fatalf("produce: exit %d: %s", code, stderr)
	}
	// A consumer that read 10 records, committed, before the trim.
	if _, stderr, code := run("", "consume", "t", "--consumer", "early", "--max", "10"); code != 0 {
		t.Fatalf("consume: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"grow", []string{"topic", "alter", "t", "--partitions", "3"}, 0, "topic t has 3 partitions (was 1)\n", ""},
		{"not an increase", []string{"topic", "alter", "t", "--partitions", "2"}, 2, "", "would not be an increase"},
		{"the same count", []string{"topic", "alter", "t", "--partitions", "3"}, 2, "", "already has 3 partitions"},
		{"no count", []string{"topic", "alter", "t"}, 2, "", "--partitions: give"},
		{"too many", []string{"topic", "alter", "t", "--partitions", "10001"}, 2, "", "want 1 to 10,000"},
		{"unknown topic", []string{"topic", "alter", "nosuch", "--partitions", "3"}, 1, "", "unknown topic"},
		{"trim", []string{"topic", "trim", "t", "--partition", "0", "--before", "40"}, 0, "topic t partition 0 starts at 40: 40 records deleted, 60 kept\n", ""},
		{"trim below the start", []string{"topic", "trim", "t", "--partition", "0", "--before", "10"}, 0, "topic t partition 0 starts at 40 already: nothing deleted (60 records kept)\n", ""},
		{"past the head", []string{"topic", "trim", "t", "--partition", "0", "--before", "101"}, 2, "", "past partition 0's head, 100 (give at most 100"},
		{"not an offset", []string{"topic", "trim", "t", "--partition", "0", "--before", "soon"}, 2, "", "want an offset"},
		{"no partition", []string{"topic", "trim", "t", "--before", "1"}, 2, "", "--partition: give"},
		{"unknown partition", []string{"topic", "trim", "t", "--partition", "7", "--before", "0"}, 2, "", "no partition 7"},
		{"a compact topic", []string{"topic", "trim", "keys", "--partition", "0", "--before", "0"}, 2, "", "cleanup.policy compact"},
		{"trim a new partition to its head", []string{"topic", "trim", "t", "--partition", "2", "--before", "head"}, 0, "topic t partition 2 starts at 0 already: nothing deleted (0 records kept)\n", ""},
	} {
		stdout, stderr, code := run("", tc.args...)
		if code != tc.code || tc.stdout != "" && stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	info := describeJSON(t, "--data", dir, "topic", "describe", "t")
	if len(info.Partitions) != 3 || info.Config.Partitions != 3 || info.Partitions[0].StartOffset != 40 || info.Partitions[0].Records != 60 {
		t.Errorf("describe: %+v", info)
	}
	// The records below the start are gone for readers too.
	stdout, stderr, code := run("", "consume", "t", "--consumer", "reader", "--from", "earliest", "--max", "1")
	if code != 0 || !strings.HasPrefix(stdout, "v-0000040") {
		t.Errorf("consume from earliest: exit %d, %q, %s", code, stdout, stderr)
	}
	// The consumer committed below the new start is told, as after
	// retention; replay --to earliest moves it to the start.
	if stdout, stderr, code := run("", "consume", "t", "--consumer", "early", "--max", "1"); code == 0 || !strings.Contains(stderr, "starts at 40") {
		t.Errorf("consume below the start: exit %d, %q, %s; want an error naming the start", code, stdout, stderr)
	}
	if _, stderr, code := run("", "replay", "t", "--consumer", "early", "--to", "earliest"); code != 0 {
		t.Errorf("replay --to earliest: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := run("", "consume", "t", "--consumer", "early", "--max", "1"); code != 0 || !strings.HasPrefix(stdout, "v-0000040") {
		t.Errorf("consume after replay: exit %d, %q, %s", code, stdout, stderr)
	}
	if stdout, stderr, code := run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d: %s%s", code, stdout, stderr)
	}
}

// TestTopicAlterTrim_Brokers_Kill9: topic alter and topic trim --brokers
// against passbook serve, which is killed (SIGKILL) right after both are
// acknowledged: the data directory keeps both effects, and the restarted
// server serves them — the new partitions take records, a consumer below
// the new start is reset.
func TestTopicAlterTrim_Brokers_Kill9(t *testing.T) {
	quickExit(t)
	dir := t.TempDir()
	srv, stop, _ := launchServe(t, dir, 20*time.Second, 15*time.Second)
	b := []string{"--brokers", srv.kafkaAddr}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "create", "t")...); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runBinary(t, "", numberedLines(0, 100), append(b, "produce", "t")...); code != 0 {
		t.Fatalf("produce: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"topic", "alter", "t", "--partitions", "4"}, 0, "topic t has 4 partitions (was 1)\n", ""},
		{[]string{"topic", "alter", "t", "--partitions", "2"}, 2, "", "would not be an increase"},
		{[]string{"topic", "alter", "nosuch", "--partitions", "2"}, 1, "", "unknown topic"},
		{[]string{"topic", "trim", "t", "--partition", "0", "--before", "101"}, 2, "", "past partition 0's head (high watermark), 100"},
		{[]string{"topic", "trim", "t", "--partition", "9", "--before", "1"}, 2, "", "no partition 9"},
		{[]string{"topic", "trim", "t", "--partition", "0", "--before", "70"}, 0, "topic t partition 0 starts at 70: 70 records deleted, 30 kept\n", ""},
	} {
		stdout, stderr, code := runBinary(t, "", "", append(b, tc.args...)...)
		if code != tc.code || tc.stdout != "" && stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	if err := syscall.Kill(srv.pid, syscall.SIGKILL); err != nil { // this test's own child
		t.Fatal(err)
	}
	stop() // waits for it to be gone

	info := describeJSON(t, "--data", dir, "topic", "describe", "t")
	if len(info.Partitions) != 4 || info.Partitions[0].StartOffset != 70 || info.Partitions[0].Head != 100 {
		t.Fatalf("after SIGKILL: %+v", info)
	}

	srv, _, _ = launchServe(t, dir, 20*time.Second, 15*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(5)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 3, Value: []byte("on a new partition")}).FirstErr(); err != nil {
		t.Fatalf("produce to partition 3: %v", err)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("t", 0); o.Offset != 70 {
		t.Errorf("ListOffsets EARLIEST after the restart: %d, want 70", o.Offset)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer at 5: %v", ctx.Err())
		}
		var first *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
		if first != nil {
			if first.Offset != 70 || string(first.Value) != "v-0000070" {
				t.Errorf("consumer at 5 was reset to offset %d %q, want 70", first.Offset, first.Value)
			}
			break
		}
	}
}
