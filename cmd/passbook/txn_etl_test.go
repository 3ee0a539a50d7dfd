package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exactly once over Kafka's transactions, the way a stream processor
// gets it: a franz-go GroupTransactSession (consume "in", produce "out",
// the offsets in the transaction, read_committed, and require_stable,
// which franz-go always sets) in a
// child process, against the real `passbook serve`. The ETL is SIGKILLed
// in the middle of a transaction three times and the broker twice, and
// every fifth transaction is aborted on purpose. A read_committed reader
// of "out" then sees every input record exactly once and nothing of an
// aborted or killed transaction; a read_uncommitted reader sees those
// too.
func TestTxn_ExactlyOnceETL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes: not in -short")
	}
	const (
		partitions = 3
		perPart    = 400
		total      = partitions * perPart
	)
	b := newETLBroker(t)
	ctx := context.Background()
	admin := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for i := range total {
		admin.Produce(ctx, &kgo.Record{Topic: "in", Partition: int32(i % partitions), Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := admin.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	aborted := map[string]bool{} // attempts the ETL aborted on purpose
	killed := map[string]bool{}  // attempts open when the ETL was killed
	plan := []string{"etl", "broker", "etl", "broker", "etl"}
	run := 0
	child := startETLChild(t, b.addr, run)
	for {
		select {
		case line, ok := <-child.lines:
			if !ok {
				// It exited by itself (an error it could not go on
				// from, such as the broker going away): start another.
				t.Logf("ETL run %d exited: %s", run, child.wait())
				run++
				child = startETLChild(t, b.addr, run)
				continue
			}
			f := strings.Fields(line)
			switch f[0] {
			case "ABORTED":
				aborted[f[1]] = true
			case "MID":
				if len(plan) == 0 {
					continue
				}
				what := plan[0]
				plan = plan[1:]
				t.Logf("SIGKILL the %s in the middle of transaction %s", what, f[1])
				if what == "etl" {
					killed[f[1]] = true
					child.kill()
					run++
					child = startETLChild(t, b.addr, run)
				} else {
					b.kill(t)
					b.start(t)
				}
			case "COMMITTED":
				if len(plan) > 0 {
					continue
				}
				if consumed(t, b, "etl", "in") == total {
					child.stop()
					goto verify
				}
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("no word from the ETL for 2 minutes (plan left %v)", plan)
		}
	}
verify:
	if len(aborted) == 0 || len(killed) != 3 {
		t.Fatalf("%d transactions aborted on purpose, %d killed: the test did not test", len(aborted), len(killed))
	}
	// A sentinel after everything, outside any transaction: reading up
	// to it reads everything.
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: p, Value: []byte("END")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	committed := readOut(t, b, kgo.ReadCommitted(), partitions)
	seen := map[string]int{}
	for _, r := range committed {
		seen[string(r.Value)]++
		if a := attemptOf(r); aborted[a] || killed[a] {
			t.Errorf("read_committed sees %s of transaction %s, which was aborted", r.Value, a)
		}
	}
	missing, dup := 0, 0
	for p := range partitions {
		for o := range perPart {
			switch n := seen[fmt.Sprintf("%d/%d", p, o)]; {
			case n == 0:
				missing++
			case n > 1:
				dup++
			}
		}
	}
	if missing != 0 || dup != 0 || len(committed) != total {
		t.Fatalf("read_committed: %d records for %d inputs: %d missing, %d duplicated", len(committed), total, missing, dup)
	}

	uncommitted := readOut(t, b, kgo.ReadUncommitted(), partitions)
	inAttempt := map[string]int{}
	for _, r := range uncommitted {
		inAttempt[attemptOf(r)]++
	}
	for a := range aborted {
		if inAttempt[a] == 0 {
			t.Errorf("read_uncommitted does not see aborted transaction %s", a)
		}
	}
	for a := range killed {
		if inAttempt[a] == 0 {
			t.Errorf("read_uncommitted does not see killed transaction %s", a)
		}
	}
	t.Logf("%d inputs, %d outputs read_committed, %d read_uncommitted; %d transactions aborted on purpose, %d killed, %d ETL runs",
		total, len(committed), len(uncommitted), len(aborted), len(killed), run+1)
}

func attemptOf(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "attempt" {
			return string(h.Value)
		}
	}
	return ""
}

// consumed is the sum of group's committed offsets on topic.
func consumed(t *testing.T, b *etlBroker, group, topic string) int64 {
	t.Helper()
	cl := b.client(t)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		return -1 // the group moving: ask again at the next commit
	}
	sum := int64(0)
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			sum += o.At
		}
	})
	return sum
}

// readOut reads "out" from its start up to the END sentinel of each
// partition.
func readOut(t *testing.T, b *etlBroker, iso kgo.IsolationLevel, partitions int) []*kgo.Record {
	t.Helper()
	cl := b.client(t, kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	ended := map[int32]bool{}
	for len(ended) < partitions {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			adm := kadm.NewClient(b.client(t))
			ps, _ := adm.DescribeProducers(context.Background(), kadm.TopicsSet{"out": {0: {}, 1: {}, 2: {}}})
			var desc []string
			ps.EachProducer(func(p kadm.DescribedProducer) { desc = append(desc, fmt.Sprintf("%+v", p)) })
			txns, _ := adm.ListTransactions(context.Background(), nil, nil)
			t.Fatalf("reading out: %v after %d records (ended %v); producers %v; transactions %+v", err, len(out), ended, desc, txns)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "END" {
				ended[r.Partition] = true
			} else {
				out = append(out, r)
			}
		})
	}
	return out
}

// etlBroker is `passbook serve` on one data directory and one port,
// which it keeps across SIGKILLs so that clients find it again.
type etlBroker struct {
	dir, addr, http string
	mu              sync.Mutex
	cmd             *exec.Cmd
	exited          chan struct{}
	stderr          *lockedBuffer
}

func newETLBroker(t *testing.T) *etlBroker {
	ports := freePorts(t, 2)
	b := &etlBroker{dir: t.TempDir(), addr: ports[0], http: ports[1]}
	b.start(t)
	t.Cleanup(func() { b.kill(t) })
	return b
}

func (b *etlBroker) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(plainBinary(t), "--data", b.dir, "serve", "--kafka", b.addr, "--http", b.http,
		"--transaction-check-interval", "200ms", "--group-min-session-timeout", "500ms")
	cmd.Env = binaryEnv()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if os.Getenv("PASSBOOK_HOSTILE_LOG") != "" {
		cmd.Stderr = io.MultiWriter(stderr, os.Stderr)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.mu.Lock()
	b.cmd, b.exited, b.stderr = cmd, exited, stderr
	b.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		if c, err := net.DialTimeout("tcp", b.addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("passbook serve exited: %v\n%s", cmd.ProcessState, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("passbook serve did not listen within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill SIGKILLs the broker (the one this test started, by its pid).
func (b *etlBroker) kill(t *testing.T) {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

func (b *etlBroker) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// The ETL child: this test binary run again with etlEnv set to a JSON
// etlConfig. It reports on stdout:
//
//	MID a              transaction a has produced its records, flushed,
//	                   and now waits 300 ms before ending (a kill lands
//	                   in the middle of it)
//	COMMITTED a n      transaction a committed n records
//	ABORTED a          transaction a was aborted on purpose
//	NOTCOMMITTED a     transaction a could not commit (it was aborted)
//
// It stops after the transaction in progress when its stdin closes.
const etlEnv = "PASSBOOK_TXN_ETL"

type etlConfig struct {
	Addr string
	Run  int
}

func TestTxn_ETLChild(t *testing.T) {
	js := os.Getenv(etlEnv)
	if js == "" {
		t.Skip("the ETL child of TestTxn_ExactlyOnceETL")
	}
	var cfg etlConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "etl:", err)
		os.Exit(1)
	}
	os.Exit(etlChild(cfg))
}

func etlChild(cfg etlConfig) int {
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(cfg.Addr),
		kgo.TransactionalID("etl"),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("etl"),
		kgo.ConsumeTopics("in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(2*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(2<<10),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etl:", err)
		return 1
	}
	defer sess.Close()
	for n := 1; ctx.Err() == nil; n++ {
		fs := sess.PollRecords(ctx, 30)
		if ctx.Err() != nil {
			return 0
		}
		if err := fs.Err0(); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "etl: poll:", err)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			fmt.Fprintln(os.Stderr, "etl: begin:", err)
			return 1
		}
		attempt := fmt.Sprintf("%d-%d", cfg.Run, n)
		count := 0
		fs.EachRecord(func(r *kgo.Record) {
			count++
			sess.Produce(ctx, &kgo.Record{Topic: "out", Partition: r.Partition, Value: fmt.Appendf(nil, "%d/%d", r.Partition, r.Offset),
				Headers: []kgo.RecordHeader{{Key: "attempt", Value: []byte(attempt)}}}, nil)
		})
		abort := n%5 == 0
		if abort || n%3 == 0 {
			// Flushed, the records are in the log before the end (an
			// abort would drop them from the client's buffer instead).
			if err := sess.Client().Flush(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "etl: flush:", err)
			}
		}
		if n%3 == 0 {
			say("MID %s", attempt)
			time.Sleep(300 * time.Millisecond)
		}
		committed, err := sess.End(context.Background(), kgo.TransactionEndTry(!abort))
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "etl: end:", err)
			return 1
		case abort:
			say("ABORTED %s", attempt)
		case committed:
			say("COMMITTED %s %d", attempt, count)
		default:
			say("NOTCOMMITTED %s", attempt)
		}
	}
	return 0
}

// etlChildProc is one run of the ETL child.
type etlChildProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	done   chan struct{}
	stderr *lockedBuffer
}

func startETLChild(t *testing.T, addr string, run int) *etlChildProc {
	t.Helper()
	js, _ := json.Marshal(etlConfig{Addr: addr, Run: run})
	cmd := exec.Command(os.Args[0], "-test.run=^TestTxn_ETLChild$")
	cmd.Env = append(os.Environ(), etlEnv+"="+string(js))
	p := &etlChildProc{cmd: cmd, lines: make(chan string, 64), done: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if os.Getenv("PASSBOOK_HOSTILE_LOG") != "" {
		cmd.Stderr = io.MultiWriter(p.stderr, os.Stderr)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "PASS") && !strings.HasPrefix(line, "ok") {
				p.lines <- line
			}
		}
		cmd.Wait()
		close(p.done)
		close(p.lines)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill SIGKILLs the child (by its pid) and waits for it.
func (p *etlChildProc) kill() {
	p.cmd.Process.Kill()
	for range p.lines {
	}
	<-p.done
}

// stop closes the child's stdin: it ends after its transaction.
func (p *etlChildProc) stop() {
	p.stdin.Close()
	for range p.lines {
	}
	<-p.done
}

// wait is how the child ended, and what it said on stderr.
func (p *etlChildProc) wait() string {
	<-p.done
	return fmt.Sprintf("%v\n%s", p.cmd.ProcessState, p.stderr.String())
}
