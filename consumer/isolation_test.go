package consumer_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/storage"
)

// appendTxn appends values as one transactional batch of producer pid
// to partition 0 of topic, as a transactional Kafka producer's batch is
// stored.
func appendTxn(t testing.TB, topic *passbook.Topic, pid int64, seq int32, values ...string) {
	t.Helper()
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]batch.Record, len(values))
	for i, v := range values {
		rs[i] = batch.Record{Value: []byte(v)}
	}
	b, err := batch.Append(nil, rs, batch.Options{Idempotent: true, ProducerID: pid, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	const offAttributes, offCRC = 21, 17
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := l.AppendBatch(b, storage.InOS); err != nil {
		t.Fatal(err)
	}
}

func marker(t testing.TB, topic *passbook.Topic, pid int64, typ storage.ControlType) {
	t.Helper()
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendMarker(storage.Marker{ProducerID: pid, Type: typ}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
}

// txnTopic opens a topic whose partition 0 holds, in order: plain "p0",
// aborted "a1" "a2", committed "c1", plain "p1", then an open
// transaction "o1" and plain "p2" after it.
func txnTopic(t *testing.T) (*passbook.DB, *passbook.Topic) {
	db, topic := openOrders(t, 0)
	if _, err := topic.AppendTo(0, []passbook.Record{{Value: []byte("p0")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	appendTxn(t, topic, 1, 0, "a1", "a2")
	appendTxn(t, topic, 2, 0, "c1")
	marker(t, topic, 1, storage.ControlAbort)
	marker(t, topic, 2, storage.ControlCommit)
	if _, err := topic.AppendTo(0, []passbook.Record{{Value: []byte("p1")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	appendTxn(t, topic, 3, 0, "o1")
	if _, err := topic.AppendTo(0, []passbook.Record{{Value: []byte("p2")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	return db, topic
}

func drainValues(t *testing.T, db *passbook.DB, topic *passbook.Topic, o consumer.Options) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := consumer.New(ctx, topic, db.Offsets(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	if err := c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		got = append(got, string(m.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestConsumer_Isolation: the embedded consumer reads committed data by
// default (aborted records and markers skipped, stopping at the open
// transaction), everything but markers read_uncommitted; lag counts up
// to the last stable offset; Topic.Records is read committed too.
func TestConsumer_Isolation(t *testing.T) {
	db, topic := txnTopic(t)
	for _, tc := range []struct {
		name string
		iso  storage.Isolation
		want []string
	}{
		{"default: read_committed", storage.ReadCommitted, []string{"p0", "c1", "p1"}},
		{"read_uncommitted", storage.ReadUncommitted, []string{"p0", "a1", "a2", "c1", "p1", "o1", "p2"}},
	} {
		got := drainValues(t, db, topic, consumer.Options{Name: tc.name, Isolation: tc.iso})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: consumed %q, want %q", tc.name, got, tc.want)
		}
	}
	// The committed consumer stopped at the LSO (7: o1's offset), past
	// both markers.
	lags, err := consumer.Lag(context.Background(), db.Offsets(), topic, "default: read_committed")
	if err != nil {
		t.Fatal(err)
	}
	if l := lags[0]; l.Committed != 7 || l.Stable != 7 || l.Head != 9 || l.Lag != 0 {
		t.Errorf("read_committed consumer's lag: %+v, want committed 7, stable 7, head 9, lag 0", l)
	}
	var recs []string
	for r, err := range topic.Records(0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, string(r.Value))
	}
	if want := []string{"p0", "c1", "p1"}; !slices.Equal(recs, want) {
		t.Errorf("Topic.Records: %q, want %q", recs, want)
	}

	// Once the open transaction commits, the committed consumer goes on
	// from where it stopped.
	marker(t, topic, 3, storage.ControlCommit)
	if lags, _ := consumer.Lag(context.Background(), db.Offsets(), topic, "default: read_committed"); lags[0].Lag != 3 {
		t.Errorf("lag after the commit: %+v, want 3 (o1, p2 and the marker's offset)", lags[0])
	}
	if got, want := drainValues(t, db, topic, consumer.Options{Name: "default: read_committed"}), []string{"o1", "p2"}; !slices.Equal(got, want) {
		t.Errorf("after the commit: consumed %q, want %q", got, want)
	}
	// The marker at the head (9) was skipped after p2: the committed
	// offset is past it, so no lag is left for a record nobody can read.
	if lags, _ := consumer.Lag(context.Background(), db.Offsets(), topic, "default: read_committed"); lags[0].Committed != 10 || lags[0].Lag != 0 {
		t.Errorf("lag after draining past the last marker: %+v, want committed 10, lag 0", lags[0])
	}
	// So for every commit mode, and for the CLI's CommitNone with Commit.
	for _, mode := range []consumer.Commit{consumer.CommitAfter, consumer.CommitBefore, consumer.CommitEvery, consumer.CommitNone} {
		name := "mode " + mode.String()
		ctx := context.Background()
		c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: name, Commit: mode, EveryN: 100})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Drain(ctx, func(context.Context, consumer.Message) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if mode == consumer.CommitNone {
			if err := c.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		if lags, _ := consumer.Lag(ctx, db.Offsets(), topic, name); lags[0].Committed != 10 {
			t.Errorf("%s: committed %d after draining, want 10 (past the last marker)", name, lags[0].Committed)
		}
	}
}

// TestConsumer_Isolation_WaitsForCommit: a following read_committed
// consumer at the LSO is woken by the marker, not by the transaction's
// records.
func TestConsumer_Isolation_WaitsForCommit(t *testing.T) {
	db, topic := openOrders(t, 0)
	appendTxn(t, topic, 5, 0, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "tail"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan string, 1)
	go func() {
		var got string
		err := c.Run(ctx, func(ctx context.Context, m consumer.Message) error {
			got = string(m.Value)
			return consumer.Stop
		})
		if err != nil {
			got = err.Error()
		}
		done <- got
	}()
	marker(t, topic, 5, storage.ControlCommit)
	if got := <-done; got != "x" {
		t.Fatalf("Run: %q, want the committed record x", got)
	}
}

func TestParseIsolation(t *testing.T) {
	for in, want := range map[string]storage.Isolation{"read_committed": storage.ReadCommitted, "read_uncommitted": storage.ReadUncommitted} {
		if got, err := consumer.ParseIsolation(in); err != nil || got != want {
			t.Errorf("ParseIsolation(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := consumer.ParseIsolation("serializable"); err == nil {
		t.Error("ParseIsolation(serializable) succeeded")
	}
}
