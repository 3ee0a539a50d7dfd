package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRecords appends to l a batch of values of producer pid, as a
// transactional producer's batch would be stored (the coordinator's
// Produce path is not needed for the log side).
func txnAppend(t testing.TB, l *storage.Log, pid int64, seq int32, values ...string) {
	t.Helper()
	rs := make([]batch.Record, len(values))
	for i, v := range values {
		rs[i] = batch.Record{Value: []byte(v)}
	}
	b, err := batch.Append(nil, rs, batch.Options{Idempotent: true, ProducerID: pid, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	batch.SetTransactional(b)
	if _, err := l.AppendBatch(b, storage.InOS); err != nil {
		t.Fatal(err)
	}
}

func writeMarker(t testing.TB, l *storage.Log, pid int64, typ storage.ControlType) {
	t.Helper()
	if _, err := l.AppendMarker(storage.Marker{ProducerID: pid, Type: typ}, storage.Fsync); err != nil {
		t.Fatal(err)
	}
}

func plainAppend(t testing.TB, l *storage.Log, values ...string) {
	t.Helper()
	rs := make([]batch.Record, len(values))
	for i, v := range values {
		rs[i] = batch.Record{Value: []byte(v)}
	}
	if _, err := l.Append(rs, storage.InOS); err != nil {
		t.Fatal(err)
	}
}

// consumeValues consumes partition 0 of topic from offset 0 until it has
// n records, with the given isolation level, and returns their values.
func consumeIsolated(t testing.TB, addr, topic string, n int, iso kgo.IsolationLevel) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v, want %d records: %v", got, n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// TestFetch_ReadCommitted: a franz-go read_committed consumer sees
// plain and committed records only, and stops at the open transaction;
// read_uncommitted sees every record (never a control record).
func TestFetch_ReadCommitted(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "txn", 1)
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	plainAppend(t, l, "plain-0")
	txnAppend(t, l, 7, 0, "aborted-1", "aborted-2")
	txnAppend(t, l, 8, 0, "committed-1")
	writeMarker(t, l, 7, storage.ControlAbort)
	txnAppend(t, l, 8, 1, "committed-2")
	writeMarker(t, l, 8, storage.ControlCommit)
	plainAppend(t, l, "plain-1")
	txnAppend(t, l, 9, 0, "open-1") // holds the LSO
	plainAppend(t, l, "plain-after-open")

	committed := []string{"plain-0", "committed-1", "committed-2", "plain-1"}
	if got := consumeIsolated(t, ts.addr, "txn", len(committed), kgo.ReadCommitted()); !slices.Equal(got, committed) {
		t.Errorf("read_committed: %q, want %q", got, committed)
	}
	all := []string{"plain-0", "aborted-1", "aborted-2", "committed-1", "committed-2", "plain-1", "open-1", "plain-after-open"}
	if got := consumeIsolated(t, ts.addr, "txn", len(all), kgo.ReadUncommitted()); !slices.Equal(got, all) {
		t.Errorf("read_uncommitted: %q, want %q", got, all)
	}

	// The wire: the LSO, the aborted transactions of the range, and
	// ListOffsets LATEST by isolation level.
	raw := dialRaw(t, ts.addr)
	lso := l.LastStableOffset() // the open transaction's first offset
	if lso != 8 {
		t.Fatalf("LSO %d, want 8", lso)
	}
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.IsolationLevel, req.MaxBytes, req.MaxWaitMillis = 12, iso, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "txn"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := raw.do(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || resp.ErrorCode != 0 {
			t.Fatalf("isolation %d: fetch error %d, partition error %d", iso, resp.ErrorCode, p.ErrorCode)
		}
		if p.LastStableOffset != lso || p.HighWatermark != l.Head() {
			t.Errorf("isolation %d: LSO %d, HW %d; want %d, %d", iso, p.LastStableOffset, p.HighWatermark, lso, l.Head())
		}
		var aborted []string
		for _, a := range p.AbortedTransactions {
			aborted = append(aborted, fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset))
		}
		want := []string{"7@1"}
		if iso == 0 {
			want = nil
		}
		if !slices.Equal(aborted, want) {
			t.Errorf("isolation %d: aborted transactions %v, want %v", iso, aborted, want)
		}
		// The records end below the LSO for read_committed.
		end := int64(0)
		for b := p.RecordBatches; len(b) > 0; {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			end, b = h.NextOffset(), b[h.Size():]
		}
		if wantEnd := map[int8]int64{0: l.Head(), 1: lso}[iso]; end != wantEnd {
			t.Errorf("isolation %d: records end at %d, want %d", iso, end, wantEnd)
		}

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.IsolationLevel = 5, iso
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "txn"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr := raw.do(lo).(*kmsg.ListOffsetsResponse)
		if got, want := lr.Topics[0].Partitions[0].Offset, map[int8]int64{0: l.Head(), 1: lso}[iso]; got != want {
			t.Errorf("ListOffsets LATEST, isolation %d: %d, want %d", iso, got, want)
		}
	}
}

// TestFetch_ReadCommitted_LongPollWakesOnMarker: a read_committed
// consumer waiting at the LSO gets the transaction's records once its
// commit marker is written.
func TestFetch_ReadCommitted_LongPollWakesOnMarker(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "txn", 1)
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	txnAppend(t, l, 3, 0, "a", "b")
	done := make(chan []string, 1)
	go func() { done <- consumeIsolated(t, ts.addr, "txn", 2, kgo.ReadCommitted()) }()
	// The consumer long-polls at offset 0 (the LSO) meanwhile; only the
	// marker moves the LSO.
	writeMarker(t, l, 3, storage.ControlCommit)
	if got := <-done; !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("read_committed after the commit: %q", got)
	}
}
