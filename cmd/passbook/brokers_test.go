package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/testcerts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kfakeBrokers starts franz-go's kfake as a three-broker cluster in this
// process, on free loopback ports, and returns its addresses as
// --brokers takes them.
func kfakeBrokers(t *testing.T) string {
	t.Helper()
	// Three distinct free ports: each listener is held until all three
	// are picked (one closed at once may be handed out again).
	var ports []int
	var held []net.Listener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range held {
		ln.Close()
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.Ports(ports...), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

// timings matches what changes from run to run in a summary line.
var timings = regexp.MustCompile(`in [0-9.]+(ns|µs|ms|s|m[0-9.]+s)|\([0-9,.]+ records/s\)|\d+ batches`)

// steady is out with its timings replaced, for comparing two runs.
func steady(out string) string { return timings.ReplaceAllString(out, "…") }

// brokersStep is one command of a session run both on a data directory
// and, with --brokers, against passbook serve on a copy of it.
type brokersStep struct {
	args  []string
	stdin string
	// How the two runs' stdout compare: "same" byte for byte; "sorted":
	// the same lines in any order (several partitions read by a group
	// come in the order the fetches do); "columns N": the same first N
	// columns of each line (the rest is what Kafka's protocol does not
	// tell: bytes, segments, commit times, durability).
	compare string
}

// TestBrokers_SameAsDataDirectory: every data command, run with
// --brokers against `passbook serve` on a copy of a data directory,
// prints what it prints on the data directory itself (stdout, the
// stderr of errors and summaries, the exit status), step by step through
// the same session of reads and changes — bad input included (exit 2,
// the same message, nothing changed).
func TestBrokers_SameAsDataDirectory(t *testing.T) {
	quickExit(t)
	local := filepath.Join(t.TempDir(), "passbook-data")
	run := func(dir string, stdin string, args ...string) (string, string, int) {
		return runBinary(t, dir, stdin, append([]string{"--data", local}, args...)...)
	}
	for _, setup := range [][]string{
		{"topic", "create", "one"},
		{"topic", "create", "three", "--partitions", "3", "--retention", "72h"},
		{"topic", "create", "keys", "--cleanup-policy", "compact"},
	} {
		if _, stderr, code := run("", "", setup...); code != 0 {
			t.Fatalf("%v: exit %d: %s", setup, code, stderr)
		}
	}
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "k%d:value %d\n", i%17, i)
	}
	for _, setup := range []struct {
		stdin string
		args  []string
	}{
		{in.String(), []string{"produce", "one"}},
		{in.String(), []string{"produce", "three", "--key-sep", ":"}},
		{in.String(), []string{"produce", "keys", "--key-sep", ":"}},
		{"", []string{"consume", "one", "--consumer", "early", "--max", "50"}},
		{"", []string{"consume", "three", "--consumer", "early", "--max", "10", "--partition", "1"}},
		{"", []string{"consume", "three", "--consumer", "done"}},
	} {
		if _, stderr, code := run("", setup.stdin, setup.args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", setup.args, code, stderr)
		}
	}
	served := filepath.Join(t.TempDir(), "passbook-data")
	if out, err := exec.Command("cp", "-a", local, served).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	srv, _, _ := launchServe(t, served, 20*time.Second, 15*time.Second)

	for _, step := range []brokersStep{
		{args: []string{"topic", "list"}, compare: "columns 3"},
		{args: []string{"topic", "describe", "three"}, compare: "columns 5"}, // BYTES too: the served copy holds the same files
		{args: []string{"topic", "describe", "keys"}, compare: "columns 4"},
		{args: []string{"topic", "describe", "nope"}},
		{args: []string{"lag"}},
		{args: []string{"lag", "--json"}},
		{args: []string{"lag", "--consumer", "early", "--topic", "three"}},
		{args: []string{"lag", "--consumer", "nobody"}},
		{args: []string{"lag", "--topic", "nope"}},
		{args: []string{"offsets", "list"}, compare: "columns 4"},
		{args: []string{"offsets", "list", "--consumer", "done", "--topic", "three"}, compare: "columns 4"},
		{args: []string{"consume", "one", "--consumer", "early", "--max", "20"}},
		{args: []string{"consume", "one", "--consumer", "early", "--max", "5", "--format", "json", "--commit", "none"}},
		{args: []string{"consume", "one", "--consumer", "fresh", "--from", "150"}},
		{args: []string{"consume", "one", "--consumer", "fresh2", "--from", "999"}},
		{args: []string{"consume", "three", "--consumer", "early"}, compare: "sorted"},
		{args: []string{"consume", "three", "--consumer", "p2", "--partition", "2", "--from", "latest"}},
		{args: []string{"consume", "three", "--consumer", "p9", "--partition", "9"}},
		{args: []string{"consume", "nope", "--consumer", "x"}},
		{args: []string{"consume", "one"}},
		{args: []string{"lag"}},
		{args: []string{"replay", "three", "--consumer", "done", "--to", "earliest"}},
		{args: []string{"replay", "three", "--consumer", "done", "--to", "5", "--partition", "0"}},
		{args: []string{"replay", "three", "--consumer", "done", "--to", "9999"}},
		{args: []string{"replay", "three", "--consumer", "typo", "--to", "earliest"}},
		{args: []string{"replay", "three", "--consumer", "new", "--to", "latest", "--create"}},
		{args: []string{"replay", "three", "--consumer", "done", "--to", "earliest", "--partition", "7"}},
		{args: []string{"lag", "--topic", "three"}},
		{args: []string{"offsets", "set", "3", "--consumer", "early", "--topic", "one"}},
		{args: []string{"offsets", "set", "300", "--consumer", "early", "--topic", "one"}},
		{args: []string{"offsets", "set", "1", "--consumer", "early", "--topic", "one", "--partition", "4"}},
		{args: []string{"offsets", "set", "-3", "--consumer", "early", "--topic", "one"}},
		{args: []string{"offsets", "delete", "--consumer", "early", "--topic", "three"}}, // OffsetDelete: one topic of the group's two
		{args: []string{"offsets", "delete", "--consumer", "new"}},
		{args: []string{"offsets", "delete", "--consumer", "never"}},
		{args: []string{"lag"}},
		{args: []string{"produce", "one", "--print-offsets"}, stdin: "a\nb\nc\n"},
		{args: []string{"produce", "three", "--print-offsets", "--key-sep", ":"}, stdin: "x:1\ny:2\nz:3\nx:4\n"},
		{args: []string{"produce", "keys", "--key-sep", ":"}, stdin: "a:1\nno key here\nb:2\n"},
		{args: []string{"produce", "one", "--max-line", "3"}, stdin: "abc\nabcd\n"},
		{args: []string{"produce", "nope"}, stdin: "a\n"},
		{args: []string{"topic", "create", "made", "--partitions", "2"}},
		{args: []string{"topic", "create", "made"}},
		{args: []string{"topic", "create", "bad", "--partitions", "0"}},
		{args: []string{"topic", "create", "__internal"}},
		{args: []string{"topic", "list"}, compare: "columns 3"},
		{args: []string{"topic", "delete", "made"}},
		{args: []string{"topic", "delete", "made"}},
		{args: []string{"topic", "list"}, compare: "columns 3"},
	} {
		name := strings.Join(step.args, " ")
		wantOut, wantErr, wantCode := run("", step.stdin, step.args...)
		args := append([]string{"--brokers", srv.kafkaAddr}, step.args...)
		gotOut, gotErr, gotCode := runBinary(t, "", step.stdin, args...)
		if gotCode != wantCode {
			t.Errorf("%s: exit %d over Kafka, %d on the data directory\nstderr over Kafka: %s\nstderr locally: %s", name, gotCode, wantCode, gotErr, wantErr)
			continue
		}
		// produce's resume lines repeat the command's own flags.
		gotErr = strings.ReplaceAll(gotErr, "--brokers "+srv.kafkaAddr, "--data "+local)
		if g, w := steady(gotErr), steady(wantErr); g != w {
			t.Errorf("%s: stderr over Kafka:\n%s\non the data directory:\n%s", name, g, w)
		}
		g, w := gotOut, wantOut
		switch {
		case step.compare == "sorted":
			g, w = sortedLines(g), sortedLines(w)
		case strings.HasPrefix(step.compare, "columns "):
			n, _ := strconv.Atoi(strings.TrimPrefix(step.compare, "columns "))
			g, w = firstColumns(g, n), firstColumns(w, n)
		}
		if g != w {
			t.Errorf("%s: stdout over Kafka:\n%s\non the data directory:\n%s", name, gotOut, wantOut)
		}
	}
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// firstColumns keeps the first n whitespace-separated fields of each
// line, and only the label of topic describe's durability (the server's
// over Kafka).
func firstColumns(s string, n int) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if strings.HasPrefix(line, "  durability:") {
			f = f[:1]
		}
		b.WriteString(strings.Join(f[:min(n, len(f))], " ") + "\n")
	}
	return b.String()
}

// TestBrokers_Kfake: every data command with --brokers against a
// three-broker Kafka cluster (kfake), the way a user runs them.
func TestBrokers_Kfake(t *testing.T) {
	quickExit(t)
	brokers := kfakeBrokers(t)
	for _, tc := range []struct {
		args     []string
		stdin    string
		code     int
		stdout   string // want exactly, if set
		sorted   bool   // stdout's lines in any order (a group reads partitions as fetches come)
		contains string // want in stdout (or stderr for a failure)
	}{
		{args: []string{"topic", "create", "orders", "--partitions", "3", "--retention", "168h", "--max-message-bytes", "65536"}, stdout: "created topic orders with 3 partitions\n"},
		{args: []string{"topic", "create", "orders"}, code: 1, contains: "passbook: topic already exists: orders"},
		{args: []string{"topic", "create", "prices", "--cleanup-policy", "compact", "--delete-retention", "1h"}, stdout: "created topic prices with 1 partition\n"},
		{args: []string{"topic", "create", "x", "--durability", "fsync"}, code: 2, contains: "--durability has no Kafka topic setting"},
		{args: []string{"topic", "list"}, contains: "orders           3        0"},
		{args: []string{"topic", "describe", "orders"}, contains: "retention:      168h0m0s"},
		{args: []string{"topic", "describe", "prices"}, contains: "cleanup policy: compact (tombstones kept 1h0m0s)"},
		{args: []string{"produce", "orders", "--key-sep", ":", "--print-offsets"}, stdin: "a:1\nb:2\nc:3\na:4\n", stdout: "1:0\n2:0\n1:1\n1:2\n"},
		{args: []string{"produce", "prices"}, stdin: "no key\n", code: 2, contains: "line 1 refused"},
		{args: []string{"produce", "orders", "--key-sep", ":"}, stdin: "big:" + strings.Repeat("x", 70000) + "\n", code: 2, contains: "over the topic's max message bytes 65,536"},
		{args: []string{"consume", "orders", "--consumer", "billing"}, sorted: true, stdout: "1\n2\n3\n4\n"},
		{args: []string{"consume", "orders", "--consumer", "billing"}, stdout: ""},
		{args: []string{"lag", "--consumer", "billing"}, stdout: "  CONSUMER   TOPIC  PARTITION  COMMITTED  HEAD  LAG  MISSED\n" +
			"   billing  orders          0          -     0    0       0\n" +
			"   billing  orders          1          3     3    0       0\n" +
			"   billing  orders          2          1     1    0       0\n"},
		{args: []string{"offsets", "list", "--consumer", "billing"}, contains: "billing   orders  1          3          -"},
		{args: []string{"replay", "orders", "--consumer", "billing", "--to", "earliest"}, stdout: "billing on orders/0: nothing committed -> 0\nbilling on orders/1: 3 -> 0\nbilling on orders/2: 1 -> 0\n"},
		{args: []string{"replay", "orders", "--consumer", "billing", "--to", "2026-01-01T00:00:00Z", "--partition", "1"}, stdout: "billing on orders/1: 0 -> 0\n"},
		{args: []string{"replay", "orders", "--consumer", "billing", "--to", "7"}, code: 2, contains: "offset 7 on orders/0 is past the head: it is empty"},
		{args: []string{"consume", "orders", "--consumer", "billing", "--format", "json", "--max", "1", "--partition", "2"}, contains: `"partition":2,"offset":0,`},
		{args: []string{"offsets", "set", "1", "--consumer", "billing", "--topic", "orders", "--partition", "1"}, stdout: "billing on orders/1: committed offset 1\n"},
		{args: []string{"offsets", "set", "5", "--consumer", "billing", "--topic", "orders", "--partition", "1"}, code: 2, contains: "offset 5 on orders/1 is past the head"},
		{args: []string{"lag", "--consumer", "billing", "--json"}, contains: `"partition": 1,
    "committed": 1,
    "start": 0,
    "head": 3,
    "stable": 3,
    "lag": 2,`},
		{args: []string{"topic", "create", "other"}, stdout: "created topic other with 1 partition\n"},
		{args: []string{"produce", "other"}, stdin: "z\n"},
		{args: []string{"consume", "other", "--consumer", "billing"}, stdout: "z\n"},
		{args: []string{"offsets", "delete", "--consumer", "billing", "--topic", "other"}, stdout: "deleted 1 committed offset of billing\n"}, // OffsetDelete
		{args: []string{"offsets", "list", "--consumer", "billing", "--topic", "other"}, stdout: "CONSUMER  TOPIC  PARTITION  COMMITTED  UPDATED\n"},
		{args: []string{"offsets", "delete", "--consumer", "billing", "--topic", "orders"}, stdout: "deleted 3 committed offsets of billing\n"}, // DeleteGroups: all it had
		{args: []string{"lag"}, stdout: "no consumer has committed an offset yet\n"},
		{args: []string{"topic", "delete", "prices"}, stdout: "deleted topic prices\n"},
		{args: []string{"topic", "describe", "prices"}, code: 1, contains: "passbook: unknown topic: prices"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := runBinary(t, "", tc.stdin, append([]string{"--brokers", brokers}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.sorted {
				stdout = strings.TrimPrefix(sortedLines(stdout), "\n") + "\n"
			}
			if tc.stdout != "" || (tc.contains == "" && tc.code == 0) {
				if stdout != tc.stdout {
					t.Errorf("stdout:\n%q\nwant:\n%q", stdout, tc.stdout)
				}
			}
			where := stdout
			if tc.code != 0 {
				where = stderr
			}
			if tc.contains != "" && !strings.Contains(where, tc.contains) {
				t.Errorf("output does not say %q:\nstdout: %s\nstderr: %s", tc.contains, stdout, stderr)
			}
		})
	}
}

// TestBrokers_BadFlags: client settings that cannot work are bad input
// (exit 2, nothing contacted); an unreachable broker is an error naming
// its address (exit 1), soon — not a hang.
func TestBrokers_BadFlags(t *testing.T) {
	quickExit(t)
	dead := freePort(t) // nothing listens there
	for _, tc := range []struct {
		env      []string
		args     []string
		code     int
		contains string
	}{
		{args: []string{"lag", "--brokers", dead, "--data", "x"}, code: 2, contains: "--data and --brokers: give one"},
		{args: []string{"lag", "--brokers", "nocolon"}, code: 2, contains: "nocolon is not HOST:PORT"},
		{args: []string{"lag", "--brokers", ","}, code: 2, contains: "want HOST:PORT"},
		{args: []string{"lag", "--tls"}, code: 2, contains: "--tls applies only with --brokers"},
		{args: []string{"topic", "compact", "t", "--brokers", dead}, code: 2, contains: "topic compact works on a data directory"},
		{args: []string{"lag", "--brokers", dead, "--tls-cert", "c.pem"}, code: 2, contains: "--tls-cert and --tls-key go together"},
		{args: []string{"lag", "--brokers", dead, "--sasl-mechanism", "md5", "--user", "u"}, code: 2, contains: `--sasl-mechanism "md5": want plain, scram-sha-256 or scram-sha-512`},
		{args: []string{"lag", "--brokers", dead, "--sasl-mechanism", "plain"}, code: 2, contains: "needs --user NAME"},
		{args: []string{"lag", "--brokers", dead, "--user", "u"}, code: 2, contains: "--user needs --sasl-mechanism"},
		{args: []string{"lag", "--brokers", dead, "--sasl-mechanism", "plain", "--user", "u"}, code: 2, contains: "give the password with --password-stdin or $PASSBOOK_PASSWORD"},
		{args: []string{"produce", "t", "--brokers", dead, "--sasl-mechanism", "plain", "--user", "u", "--password-stdin"}, code: 2, contains: "produce reads its records from standard input"},
		{args: []string{"produce", "t", "--brokers", dead, "--durability", "fsync"}, code: 2, contains: "--durability applies on a data directory"},
		{args: []string{"consume", "t", "--consumer", "c", "--session-timeout", "5s"}, code: 2, contains: "--session-timeout applies only with --brokers"},
		{args: []string{"consume", "t", "--consumer", "c", "--brokers", dead, "--session-timeout", "1ms"}, code: 2, contains: "--session-timeout 1ms: want 1s to 1h"},
		{args: []string{"lag", "--brokers", dead, "--tls-ca", "/nonexistent/ca.pem"}, code: 1, contains: "--tls-ca: open /nonexistent/ca.pem"},
		{args: []string{"lag", "--brokers", dead}, code: 1, contains: "cannot reach the Kafka brokers at " + dead},
		{env: []string{"PASSBOOK_BROKERS=" + dead}, args: []string{"topic", "list"}, code: 1, contains: "cannot reach the Kafka brokers at " + dead},
		{args: []string{"consume", "t", "--consumer", "c", "--brokers", dead, "--follow"}, code: 1, contains: "cannot reach the Kafka brokers at " + dead},
		{env: []string{"PASSBOOK_BROKERS=" + dead}, args: []string{"lag", "--data", "x"}, code: 1, contains: "no data directory"}, // --data wins over the environment
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			_, stderr, code := runProcess(t, passbookBinary(t), dir, append(binaryEnv(), tc.env...), "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.contains) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, tc.code, tc.contains)
			}
			if _, err := os.Stat(filepath.Join(dir, "passbook-data")); err == nil {
				t.Errorf("a data directory was made")
			}
		})
	}
}

// TestBrokers_FollowAndProduce: `consume --brokers … --follow` and
// `produce --brokers …`, two processes as in two shells, work together
// against one passbook serve; Ctrl-C stops the consumer with what it
// wrote committed (lag 0, and the next run reads nothing again).
func TestBrokers_FollowAndProduce(t *testing.T) {
	quickExit(t)
	srv := startServe(t)
	b := []string{"--brokers", srv.kafkaAddr}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "create", "t", "--partitions", "2")...); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd, done := startConsume(t, "", out, "tail", "--brokers", srv.kafkaAddr, "--follow", "--session-timeout", "2s")
	const n = 3000
	var want []string
	for round := range 3 {
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "v-%07d\n", round*n+i)
		}
		if _, stderr, code := runBinary(t, "", in.String(), append(b, "produce", "t")...); code != 0 {
			t.Fatalf("produce: exit %d: %s", code, stderr)
		}
		for i := range n {
			want = append(want, fmt.Sprintf("v-%07d", round*n+i))
		}
		// The follower writes each round out as it comes (it is at the
		// head when it has handed out what was fetched).
		if exited, err := waitForOutput(out, int64(len(want)*len("v-0000000\n")), done); exited {
			t.Fatalf("consume --follow exited: %v", err)
		}
	}
	cmd.Process.Signal(syscall.SIGINT) // this test's own child
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("consume after SIGINT: exit %d, want 130", code)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := lines(got)
	slices.Sort(lines)
	if !slices.Equal(lines, want) {
		t.Errorf("consume --follow wrote %d lines, want the %d produced, each once", len(lines), len(want))
	}
	stdout, stderr, code := runBinary(t, "", "", append(b, "lag", "--consumer", "tail", "--json")...)
	if code != 0 {
		t.Fatalf("lag: exit %d: %s", code, stderr)
	}
	var rows []struct {
		Lag       int64 `json:"lag"`
		Committed int64 `json:"committed"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("lag --json: %v: %s", err, stdout)
	}
	for p, r := range rows {
		if r.Lag != 0 {
			t.Errorf("partition %d: lag %d after the follower stopped, want 0 (committed %d)", p, r.Lag, r.Committed)
		}
	}
	if again, _, _ := runBinary(t, "", "", append(b, "consume", "t", "--consumer", "tail")...); again != "" {
		t.Errorf("the next run read %d bytes again, want nothing", len(again))
	}

	// One topic's offsets of a group that has others: deleted by
	// OffsetDelete, and only that topic's.
	for _, step := range [][]string{{"topic", "create", "u"}, {"produce", "u"}, {"consume", "u", "--consumer", "tail"}} {
		if _, stderr, code := runBinary(t, "", "x\n", append(slices.Clip(b), step...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", step, code, stderr)
		}
	}
	if out, stderr, code := runBinary(t, "", "", append(slices.Clip(b), "offsets", "delete", "--consumer", "tail", "--topic", "u")...); code != 0 ||
		out != "deleted 1 committed offset of tail\n" {
		t.Errorf("offsets delete --topic: exit %d, %q, %q; want exit 0, deleted 1 committed offset", code, out, stderr)
	}
	out, _, _ = runBinary(t, "", "", append(slices.Clip(b), "offsets", "list", "--consumer", "tail")...)
	if strings.Contains(out, " u ") || !strings.Contains(out, "tail      t") {
		t.Errorf("after the delete, offsets list says:\n%s\nwant tail's offsets on t kept, none on u", out)
	}
}

// TestBrokers_ReplayRefusesLiveGroup: replay, offsets set and offsets
// delete refuse a group while one of its consumers runs (exit 1, saying
// so) and change nothing; once it stops they work.
func TestBrokers_ReplayRefusesLiveGroup(t *testing.T) {
	quickExit(t)
	brokers := kfakeBrokers(t)
	b := []string{"--brokers", brokers}
	if _, stderr, code := runBinary(t, "", "a\nb\nc\n", append(b, "topic", "create", "t")...); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runBinary(t, "", "a\nb\nc\n", append(b, "produce", "t")...); code != 0 {
		t.Fatal(stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd, done := startConsume(t, "", out, "live", "--brokers", brokers, "--follow", "--session-timeout", "2s")
	if exited, err := waitForOutput(out, int64(len("a\nb\nc\n")), done); exited {
		t.Fatalf("consume exited: %v", err)
	}
	for _, args := range [][]string{
		{"replay", "t", "--consumer", "live", "--to", "earliest"},
		{"offsets", "set", "0", "--consumer", "live", "--topic", "t"},
		{"offsets", "delete", "--consumer", "live"},
	} {
		_, stderr, code := runBinary(t, "", "", append(b, args...)...)
		if code != 1 || !strings.Contains(stderr, "the consumer group has live members: live has 1 member") || !strings.Contains(stderr, "stop its consumers first") {
			t.Errorf("%v while the group runs: exit %d, %q; want exit 1 saying it has live members", args, code, stderr)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM) // this test's own child
	<-done
	stdout, stderr, code := runBinary(t, "", "", append(b, "replay", "t", "--consumer", "live", "--to", "earliest")...)
	if code != 0 || stdout != "live on t/0: 3 -> 0\n" {
		t.Errorf("replay once stopped: exit %d, %q, %s; want live on t/0: 3 -> 0", code, stdout, stderr)
	}
}

// TestBrokers_Kill9: consume --brokers against passbook serve, killed
// with SIGKILL at a random moment, then resumed as the same consumer
// group: the promise of --commit holds as on a data directory
// (TestConsume_Kill9): after and every=N lose nothing, before delivers
// nothing twice, each within its bound.
func TestBrokers_Kill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 rounds run in the default tier, not under -short")
	}
	const n, partitions, lineBytes = 100_000, 3, len("v-0000000\n")
	const buffer = outputBuffer / lineBytes
	quickExit(t)
	dir := consumeTopic(t, n, partitions)
	srv, _, _ := launchServe(t, filepath.Join(dir, "passbook-data"), 20*time.Second, 15*time.Second)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for _, tc := range []struct {
		commit               string
		lossless, atMostOnce bool
		maxTwice, maxMissing int
	}{
		{commit: "after", lossless: true, maxTwice: buffer},
		{commit: "before", atMostOnce: true, maxMissing: buffer},
		{commit: "every=1000", lossless: true, maxTwice: 1000},
	} {
		t.Run(tc.commit, func(t *testing.T) {
			for round := range 2 {
				name := fmt.Sprintf("k-%s-%d", strings.ReplaceAll(tc.commit, "=", ""), round)
				out := filepath.Join(t.TempDir(), "out")
				target := rng.Int64N(int64(n * lineBytes))
				remote := []string{"--brokers", srv.kafkaAddr, "--commit", tc.commit, "--session-timeout", "1s"}
				cmd, done := startConsume(t, dir, out, name, remote...)
				exited, err := waitForOutput(out, target, done)
				if !exited {
					// Then up to 2 ms more, so that the kill lands anywhere
					// in the cycle of fetching, writing and committing.
					time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
					cmd.Process.Kill() // SIGKILL, of this test's own child only
					err = <-done
					if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
						err = nil
					}
				}
				if err != nil {
					t.Fatalf("round %d: consume: %v", round, err)
				}
				first, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				rest, stderr, code := runBinary(t, dir, "", append([]string{"consume", "t", "--consumer", name}, remote...)...)
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
				if twice > tc.maxTwice || missing > tc.maxMissing {
					t.Errorf("round %d: %d twice, %d missing; want at most %d and %d", round, twice, missing, tc.maxTwice, tc.maxMissing)
				}
			}
		})
	}
}

// TestBrokers_SCRAMOverTLS: the data commands against passbook serve
// with TLS and SASL SCRAM-SHA-512 (--tls-ca, --sasl-mechanism, --user,
// the password on standard input or in PASSBOOK_PASSWORD); a wrong
// password, an untrusted certificate and no SASL at all are refused
// (exit 1, saying why), and nothing is written by them.
func TestBrokers_SCRAMOverTLS(t *testing.T) {
	quickExit(t)
	dir := t.TempDir()
	certs := testcerts.Write(t, t.TempDir(), "alice")
	if _, stderr, code := runBinary(t, "", "s3cret\n", "--data", dir, "user", "add", "alice", "--password-stdin", "--mechanism", "scram-sha-512"); code != 0 {
		t.Fatalf("user add: exit %d: %s", code, stderr)
	}
	srv, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second, "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile, "--sasl", "scram-sha-512")
	secure := []string{"--brokers", srv.kafkaAddr, "--tls-ca", certs.CAFile, "--sasl-mechanism", "scram-sha-512", "--user", "alice"}
	withStdin := append(slices.Clip(secure), "--password-stdin")
	env := append(binaryEnv(), "PASSBOOK_PASSWORD=s3cret")
	for _, tc := range []struct {
		env          []string
		stdin        string
		args, flags  []string
		code         int
		stdout, says string
		stdoutRE     string // instead of stdout
	}{
		{stdin: "s3cret\n", args: []string{"topic", "create", "t", "--partitions", "2"}, flags: withStdin, stdout: "created topic t with 2 partitions\n"},
		{env: env, stdin: "one\ntwo\nthree\n", args: []string{"produce", "t", "--print-offsets"}, flags: secure, stdout: "0:0\n1:0\n0:1\n"},
		{stdin: "s3cret\n", args: []string{"consume", "t", "--consumer", "c", "--partition", "0"}, flags: withStdin, stdout: "one\nthree\n"},
		{env: env, args: []string{"offsets", "list"}, flags: secure, stdout: "CONSUMER  TOPIC  PARTITION  COMMITTED  UPDATED\nc         t      0          2          -\n"},
		{env: env, args: []string{"lag"}, flags: secure, stdout: "  CONSUMER  TOPIC  PARTITION  COMMITTED  HEAD  LAG  MISSED\n" +
			"         c      t          0          2     2    0       0\n         c      t          1          -     1    1       0\n"},
		{stdin: "wrong\n", args: []string{"produce", "t", "--file", "/dev/null"}, flags: withStdin, code: 1, says: "the Kafka brokers at " + srv.kafkaAddr + " refused the login of alice: SASL_AUTHENTICATION_FAILED"},
		{stdin: "s3cret\n", args: []string{"topic", "list"}, flags: []string{"--brokers", srv.kafkaAddr, "--tls", "--sasl-mechanism", "scram-sha-512", "--user", "alice", "--password-stdin"},
			code: 1, says: "certificate signed by unknown authority"},
		{args: []string{"topic", "list"}, flags: []string{"--brokers", srv.kafkaAddr, "--tls-ca", certs.CAFile}, code: 1, says: "cannot reach the Kafka brokers at " + srv.kafkaAddr},
		// BYTES: the partitions' sizes by DescribeLogDirs, which depend on
		// how the client batched the three records (TestBrokers_SameAsDataDirectory
		// checks them against the data directory's).
		{env: env, args: []string{"topic", "list"}, flags: secure, stdoutRE: `^  TOPIC  PARTITIONS  RECORDS  BYTES\n      t           2        3 +[1-9][0-9]*\n$`},
	} {
		t.Run(strings.Join(append(slices.Clip(tc.args), tc.flags[len(tc.flags)-1]), " "), func(t *testing.T) {
			args := append(slices.Clip(tc.args), tc.flags...)
			stdout, stderr, code := runProcess(t, passbookBinary(t), "", append(binaryEnv(), tc.env...), tc.stdin, args...)
			want := tc.stdout == stdout
			if tc.stdoutRE != "" {
				want, tc.stdout = regexp.MustCompile(tc.stdoutRE).MatchString(stdout), tc.stdoutRE
			}
			if code != tc.code || (tc.code == 0 && !want) || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, %q, saying %q", code, stdout, stderr, tc.code, tc.stdout, tc.says)
			}
		})
	}
}

// TestBrokers_GroupShares: two `consume --follow` of one consumer group
// against passbook serve share the topic's partitions, each record going
// to one of them; when one stops (SIGTERM), the other takes over its
// partitions from what it committed: nothing lost, nothing read twice
// (the stopped one committed what it wrote). A third without --follow
// finds nothing left to read.
func TestBrokers_GroupShares(t *testing.T) {
	quickExit(t)
	srv := startServe(t)
	b := []string{"--brokers", srv.kafkaAddr}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "create", "t", "--partitions", "4")...); code != 0 {
		t.Fatalf("topic create: %s", stderr)
	}
	dir := t.TempDir()
	outA, outB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	follow := append(slices.Clip(b), "--follow", "--session-timeout", "2s")
	a, doneA := startConsume(t, "", outA, "shared", follow...)
	bb, doneB := startConsume(t, "", outB, "shared", follow...)
	produce := func(from, n int) {
		t.Helper()
		var in strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&in, "v-%07d\n", i)
		}
		if _, stderr, code := runBinary(t, "", in.String(), append(b, "produce", "t")...); code != 0 {
			t.Fatalf("produce: exit %d: %s", code, stderr)
		}
	}
	// waitAll waits until the two outputs hold every one of the first n
	// values (or a consumer exits: a failure).
	waitAll := func(n int, done ...<-chan error) {
		t.Helper()
		for {
			for _, d := range done {
				select {
				case err := <-d:
					t.Fatalf("a consumer exited: %v", err)
				default:
				}
			}
			x, _ := os.ReadFile(outA)
			y, _ := os.ReadFile(outB)
			if _, missing, _ := delivery(t, n, x, y); missing == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Both are members, each with partitions, before anything is written
	// (else the first to join could read it all before the other joins).
	adm := kadmClient(t, srv.kafkaAddr)
	for shared := false; !shared; time.Sleep(20 * time.Millisecond) {
		for _, d := range []<-chan error{doneA, doneB} {
			select {
			case err := <-d:
				t.Fatalf("a consumer exited: %v", err)
			default:
			}
		}
		dg, err := adm.DescribeGroups(t.Context(), "shared")
		if err != nil {
			t.Fatal(err)
		}
		g := dg["shared"]
		shared = len(g.Members) == 2 && g.State == "Stable"
		for _, m := range g.Members {
			if ca, ok := m.Assigned.AsConsumer(); !ok || len(ca.Topics) == 0 || len(ca.Topics[0].Partitions) == 0 {
				shared = false
			}
		}
	}
	const n = 4000
	produce(0, n)
	waitAll(n, doneA, doneB)
	stop := func(cmd *exec.Cmd, done <-chan error) {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM) // this test's own child
		<-done
		if code := cmd.ProcessState.ExitCode(); code != 143 {
			t.Fatalf("consume after SIGTERM: exit %d, want 143", code)
		}
	}
	began := time.Now()
	stop(a, doneA)
	produce(n, n)
	waitAll(2*n, doneB)
	t.Logf("the second consumer had the first's partitions and read their records %s after the first was stopped", time.Since(began).Round(time.Millisecond))
	stop(bb, doneB)
	x, _ := os.ReadFile(outA)
	y, _ := os.ReadFile(outB)
	_, missing, twice := delivery(t, 2*n, x, y)
	t.Logf("first consumer: %d lines, second: %d", len(lines(x)), len(lines(y)))
	if missing > 0 || twice > 0 {
		t.Errorf("%d records missing, %d read twice; want every one once", missing, twice)
	}
	if len(lines(x)) == 0 || len(lines(x)) == 2*n {
		t.Errorf("the first consumer read %d of the first %d records: the group did not share the partitions", len(lines(x)), n)
	}
	if rest, stderr, code := runBinary(t, "", "", append(b, "consume", "t", "--consumer", "shared")...); code != 0 || rest != "" {
		t.Errorf("a third run: exit %d, %d bytes read (%s); want nothing left", code, len(rest), stderr)
	}
}

// kadmClient is an admin client of the brokers at addr (HOST:PORT[,…]), closed at the
// end of the test.
func kadmClient(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestBrokers_LagAsKafkaConsumerGroups: lag --brokers shows, for every
// partition a group has committed on, the committed offset, the log end
// offset and the lag that Kafka's own tools compute (kadm.Lag, which
// does what kafka-consumer-groups --describe does), against a
// three-broker cluster.
func TestBrokers_LagAsKafkaConsumerGroups(t *testing.T) {
	quickExit(t)
	brokers := kfakeBrokers(t)
	b := []string{"--brokers", brokers}
	var in strings.Builder
	for i := range 900 {
		fmt.Fprintf(&in, "k%d:%d\n", i%31, i)
	}
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"topic", "create", "a", "--partitions", "3"}},
		{"", []string{"topic", "create", "b", "--partitions", "2"}},
		{in.String(), []string{"produce", "a", "--key-sep", ":"}},
		{in.String(), []string{"produce", "b"}},
		{"", []string{"consume", "a", "--consumer", "g1", "--max", "500"}},
		{"", []string{"consume", "b", "--consumer", "g1", "--max", "100", "--partition", "1"}},
		{"", []string{"consume", "a", "--consumer", "g2"}},
		{"", []string{"replay", "a", "--consumer", "g2", "--to", "40", "--partition", "2"}},
	} {
		if _, stderr, code := runBinary(t, "", step.stdin, append(slices.Clip(b), step.args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", step.args, code, stderr)
		}
	}
	stdout, stderr, code := runBinary(t, "", "", append(slices.Clip(b), "lag", "--json")...)
	if code != 0 {
		t.Fatalf("lag: exit %d: %s", code, stderr)
	}
	var rows []struct {
		Consumer, Topic string
		Partition       int32
		Committed, Head int64
		Lag             int64
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	lags, err := kadmClient(t, brokers).Lag(t.Context(), "g1", "g2")
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, r := range rows {
		if r.Committed < 0 {
			continue // nothing committed: kafka-consumer-groups shows no row for it
		}
		want, ok := lags[r.Consumer].Lag.Lookup(r.Topic, r.Partition)
		if !ok || want.Err != nil {
			t.Errorf("%s %s/%d: kadm.Lag has no row (%v)", r.Consumer, r.Topic, r.Partition, want.Err)
			continue
		}
		if r.Committed != want.Commit.At || r.Head != want.End.Offset || r.Lag != want.Lag {
			t.Errorf("%s %s/%d: committed %d, head %d, lag %d; Kafka's tools: %d, %d, %d",
				r.Consumer, r.Topic, r.Partition, r.Committed, r.Head, r.Lag, want.Commit.At, want.End.Offset, want.Lag)
		}
		compared++
	}
	var committed int
	for _, g := range lags {
		for _, ps := range g.Lag {
			for _, l := range ps {
				if l.Commit.At >= 0 {
					committed++
				}
			}
		}
	}
	if compared != committed || compared == 0 {
		t.Errorf("lag shows %d committed partitions, Kafka's tools %d", compared, committed)
	}
}
