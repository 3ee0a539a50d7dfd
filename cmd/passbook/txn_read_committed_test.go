package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxn_ReadCommittedOverServe: franz-go consumers of `passbook serve`
// (the real binary) read a partition where a transactional producer
// committed some transactions and aborted others, interleaved with plain
// records, across many small segments. read_committed drops every
// aborted record (from the aborted-transaction index the fetches
// return) and stops before a transaction still open; read_uncommitted
// sees every record; neither sees a marker. A fetch that starts inside
// an aborted transaction drops its rest too. After the broker is
// SIGKILLed and restarted on the same data directory, both see the same
// again (the index and the open transaction rebuilt from the log).
func TestTxn_ReadCommittedOverServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs passbook serve")
	}
	b := newETLBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Segments of 2 KiB (under Kafka's 1 MiB floor, so with --data, the
	// broker stopped): transactions span rolls.
	b.kill(t)
	if out, errOut, code := runBinary(t, b.dir, "", "--data", b.dir, "topic", "create", "rc", "--internal-segment-bytes", "2048"); code != 0 {
		t.Fatalf("topic create: exit %d\n%s%s", code, out, errOut)
	}
	b.start(t)
	txn := b.client(t, kgo.TransactionalID("rc-producer"), kgo.DefaultProduceTopic("rc"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer txn.Close()
	plain := b.client(t, kgo.DefaultProduceTopic("rc"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer plain.Close()

	var committed, all []string
	for i := range 12 {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for r := range 8 {
			v := fmt.Sprintf("t%02d-r%d", i, r)
			vals = append(vals, v)
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		p := fmt.Sprintf("plain-%02d", i)
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte(p)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 1
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		all = append(all, vals...)
		all = append(all, p)
		if commit {
			committed = append(committed, vals...)
		}
		committed = append(committed, p)
	}
	// A transaction left open: read_committed stops before it, and
	// before the plain record after it.
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after-open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	all = append(all, "open", "after-open")

	check := func(when string) {
		t.Helper()
		if got := consumeRC(t, b, ctx, kgo.ReadCommitted(), 0, len(committed)); !slices.Equal(got, committed) {
			t.Errorf("%s: read_committed read\n%q\nwant\n%q", when, got, committed)
		}
		if got := consumeRC(t, b, ctx, kgo.ReadUncommitted(), 0, len(all)); !slices.Equal(got, all) {
			t.Errorf("%s: read_uncommitted read\n%q\nwant\n%q", when, got, all)
		}
		// Start inside transaction 1, which was aborted: at its fourth
		// record.
		off := offsetOf(t, b, ctx, "t01-r3")
		want := committed[slices.Index(committed, "plain-01"):]
		if got := consumeRC(t, b, ctx, kgo.ReadCommitted(), off, len(want)); !slices.Equal(got, want) {
			t.Errorf("%s: read_committed from offset %d (inside an aborted transaction) read\n%q\nwant\n%q", when, off, got, want)
		}
	}
	check("live")
	if idx, _ := filepath.Glob(filepath.Join(b.dir, "topics", "rc", "0", "*.txnindex")); len(idx) < 3 {
		t.Fatalf("%d .txnindex files: the transactions should span several segments", len(idx))
	}
	b.kill(t)
	b.start(t)
	check("after SIGKILL and restart")
}

// consumeRC reads n records of partition 0 of topic rc from offset from
// with the isolation level iso, and returns their values. It then polls
// once more, briefly, to see that nothing else comes.
func consumeRC(t *testing.T, b *etlBroker, ctx context.Context, iso kgo.IsolationLevel, from int64, n int) []string {
	t.Helper()
	cl := b.client(t, kgo.FetchIsolationLevel(iso), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rc": {0: kgo.NewOffset().At(from)}}))
	defer cl.Close()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v (%q)", len(got), n, ctx.Err(), got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	for _, r := range cl.PollFetches(short).Records() {
		got = append(got, string(r.Value))
	}
	return got
}

// offsetOf finds the offset of the record with value v, read
// uncommitted.
func offsetOf(t *testing.T, b *etlBroker, ctx context.Context, v string) int64 {
	t.Helper()
	cl := b.client(t, kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rc": {0: kgo.NewOffset().At(0)}}))
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record %q: %v", v, ctx.Err())
		}
		for _, r := range fs.Records() {
			if string(r.Value) == v {
				return r.Offset
			}
		}
	}
}
