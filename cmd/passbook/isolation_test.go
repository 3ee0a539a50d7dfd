package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnWrite writes, with a franz-go transactional producer against addr,
// to partition 0 of topic: a committed transaction, an aborted one and a
// transaction left open (its producer kept, so it stays open), and
// returns the open one's producer. Offsets: c1 c2 c3 0–2, commit marker
// 3, a1 a2 4–5, abort marker 6, o1 7.
func txnWrite(t *testing.T, addr, topic string) *kgo.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("isolation-test"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, txn := range []struct {
		values []string
		end    kgo.TransactionEndTry
		open   bool
	}{{[]string{"c1", "c2", "c3"}, kgo.TryCommit, false}, {[]string{"a1", "a2"}, kgo.TryAbort, false}, {[]string{"o1"}, kgo.TryAbort, true}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range txn.values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if txn.open {
			break
		}
		if err := cl.EndTransaction(ctx, txn.end); err != nil {
			t.Fatalf("end the transaction of %v: %v", txn.values, err)
		}
	}
	return cl
}

// TestBinary_ConsumeIsolation: consume reads committed data only by
// default — it stops at the last stable offset (before the open
// transaction) and skips the aborted one — and everything with
// --isolation read_uncommitted; the same over --brokers against passbook
// serve and on the data directory serve wrote, after serve is stopped
// with the transaction still open; replay --to latest moves a consumer to
// where its reads end for its isolation; a bad --isolation exits 2 and
// commits nothing.
func TestBinary_ConsumeIsolation(t *testing.T) {
	dir := t.TempDir()
	p, stop, _ := launchServe(t, dir, 20*time.Second, 15*time.Second)
	if _, errOut, code := runBinary(t, t.TempDir(), "", "topic", "create", "orders", "--brokers", p.kafkaAddr); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, errOut)
	}
	txnWrite(t, p.kafkaAddr, "orders")

	committed, everything := "c1\nc2\nc3\n", "c1\nc2\nc3\na1\na2\no1\n"
	for _, where := range []string{"brokers", "data"} {
		t.Run(where, func(t *testing.T) {
			at := []string{"--brokers", p.kafkaAddr}
			if where == "data" {
				// serve stopped with the transaction open: the data
				// directory's reader finds it open in the log.
				stop()
				at = []string{"--data", dir}
			}
			for _, tc := range []struct {
				name string
				args []string
				want string
			}{
				{"default", nil, committed},
				{"read_committed", []string{"--isolation", "read_committed"}, committed},
				{"read_uncommitted", []string{"--isolation", "read_uncommitted"}, everything},
			} {
				consumerName := where + "-" + tc.name
				args := append(append([]string{"consume", "orders", "--consumer", consumerName}, at...), tc.args...)
				out, errOut, code := runBinary(t, t.TempDir(), "", args...)
				if code != 0 || out != tc.want {
					t.Errorf("%s: exit %d, stdout %q, want %q; stderr %s", strings.Join(args, " "), code, out, tc.want, errOut)
				}
			}
			// A read_committed consumer that stopped at the open
			// transaction resumes there: a second run reads nothing
			// again. Its committed offset is past the markers and the
			// aborted records, at the open transaction's first record
			// (7), as a Kafka consumer's position is.
			again := append([]string{"consume", "orders", "--consumer", where + "-default"}, at...)
			if out, errOut, code := runBinary(t, t.TempDir(), "", again...); code != 0 || out != "" {
				t.Errorf("%s again: exit %d, stdout %q, stderr %s; want nothing read twice", strings.Join(again, " "), code, out, errOut)
			}
			// On both paths the committed offset is past the markers and
			// the aborted records the reader skipped.
			listArgs := append([]string{"offsets", "list", "--consumer", where + "-default"}, at...)
			if out, errOut, code := runBinary(t, t.TempDir(), "", listArgs...); code != 0 || !strings.Contains(out, "orders  0          7") {
				t.Errorf("%s: exit %d, %q %q; want the default consumer's offset at 7", strings.Join(listArgs, " "), code, out, errOut)
			}
			// replay --to latest is where the reads end: the last stable
			// offset (7) read committed, the head (8) read uncommitted.
			for _, tc := range []struct {
				args []string
				want string
			}{
				{nil, ": 7 -> 7\n"}, // the position is past the markers already
				{[]string{"--isolation", "read_uncommitted"}, ": 7 -> 8\n"},
				{[]string{"--isolation", "read_committed"}, ": 8 -> 7\n"},
			} {
				args := append(append([]string{"replay", "orders", "--consumer", where + "-read_committed", "--to", "latest"}, at...), tc.args...)
				out, errOut, code := runBinary(t, t.TempDir(), "", args...)
				if code != 0 || !strings.HasSuffix(out, tc.want) {
					t.Errorf("%s: exit %d, stdout %q, stderr %s; want it to end %q", strings.Join(args, " "), code, out, errOut, tc.want)
				}
			}
			for _, bad := range []string{"committed-ish", "READ_COMMITTED", ""} {
				args := append(append([]string{"replay", "orders", "--consumer", where + "-default", "--to", "earliest"}, at...), "--isolation", bad)
				if _, errOut, code := runBinary(t, t.TempDir(), "", args...); code != 2 || !strings.Contains(errOut, "want read_committed or read_uncommitted") {
					t.Errorf("replay --isolation %q: exit %d, stderr %q; want 2", bad, code, errOut)
				}
			}
			for _, bad := range []string{"committed-ish", "READ_COMMITTED", ""} {
				args := append(append([]string{"consume", "orders", "--consumer", where + "-bad"}, at...), "--isolation", bad)
				_, errOut, code := runBinary(t, t.TempDir(), "", args...)
				if code != 2 || !strings.Contains(errOut, "want read_committed or read_uncommitted") {
					t.Errorf("--isolation %q: exit %d, stderr %q; want 2 naming the two levels", bad, code, errOut)
				}
			}
			listArgs = append([]string{"offsets", "list", "--consumer", where + "-bad"}, at...)
			if out, _, _ := runBinary(t, t.TempDir(), "", listArgs...); strings.Contains(out, "orders") {
				t.Errorf("a refused consume committed: %s", out)
			}
		})
	}
}
