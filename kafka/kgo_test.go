package kafka

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceAll produces n records with values value(i) and waits for
// every acknowledgement; it returns the offsets acknowledged.
func produceAll(t testing.TB, cl *kgo.Client, topic string, n int, value func(int) []byte) []int64 {
	t.Helper()
	offsets := make([]int64, n)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range n {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value(i)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("record %d: %w", i, err)
				}
				mu.Unlock()
				return
			}
			offsets[i] = r.Offset
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	return offsets
}

// consumeFrom reads n records of partition 0 starting at offset from.
func consumeFrom(t testing.TB, addr, topic string, from int64, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	return got
}

func value(i int) []byte { return fmt.Appendf(nil, "record-%07d-%s", i, "payload") }

func checkRecords(t testing.TB, got []*kgo.Record, from int64) {
	t.Helper()
	for i, r := range got {
		want := from + int64(i)
		if r.Offset != want || string(r.Value) != string(value(int(want))) {
			t.Fatalf("record %d: offset %d value %q, want offset %d value %q", i, r.Offset, r.Value, want, value(int(want)))
		}
	}
}

func TestKgo_Produce100kConsumeByOffset(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "big", 1)
	const n = 100_000
	offsets := produceAll(t, ts.client(t), "big", n, value)
	for i, off := range offsets {
		if off != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, off)
		}
	}
	checkRecords(t, consumeFrom(t, ts.addr, "big", 0, n), 0)
	checkRecords(t, consumeFrom(t, ts.addr, "big", 77_777, n-77_777), 77_777)
	t.Logf("franz-go negotiated: %s", ts.log)
}

func TestKgo_Compression(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct {
		codec kgo.CompressionCodec
		want  batch.Codec
	}{
		{kgo.NoCompression(), batch.None},
		{kgo.GzipCompression(), batch.Gzip},
		{kgo.SnappyCompression(), batch.Snappy},
		{kgo.Lz4Compression(), batch.LZ4},
		{kgo.ZstdCompression(), batch.Zstd},
	} {
		t.Run(tc.want.String(), func(t *testing.T) {
			topic := ts.createTopic(t, "codec-"+tc.want.String(), 1)
			const n = 2000
			cl := ts.client(t, kgo.ProducerBatchCompression(tc.codec), kgo.ProducerLinger(10*time.Millisecond))
			// franz-go sends a batch uncompressed when its codec would not
			// make it smaller (a lone short record, on a busy machine), so
			// every value is long and repetitive enough that each codec
			// shrinks even a batch of one.
			compressible := func(i int) []byte { return fmt.Appendf(nil, "record-%07d-%s", i, strings.Repeat("payload ", 40)) }
			produceAll(t, cl, topic.Name(), n, compressible)
			for i, r := range consumeFrom(t, ts.addr, topic.Name(), 0, n) {
				if r.Offset != int64(i) || !bytes.Equal(r.Value, compressible(i)) {
					t.Fatalf("record %d: offset %d value %.40q…, want offset %d value %.40q…", i, r.Offset, r.Value, i, compressible(i))
				}
			}
			// Stored as received: every batch still has the producer's codec.
			l, _ := topic.Partition(0)
			for off := int64(0); off < l.Head(); {
				c, err := l.ReadBatches(off, 1)
				if err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, c.Size)
				if _, err := c.File.ReadAt(buf, c.Pos); err != nil {
					t.Fatal(err)
				}
				c.Release()
				h, err := batch.Check(buf)
				if err != nil {
					t.Fatal(err)
				}
				if h.Codec() != tc.want {
					t.Fatalf("batch at %d stored with codec %v, want %v", h.BaseOffset, h.Codec(), tc.want)
				}
				off = c.Next
			}
		})
	}
}

func TestKgo_Acks(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct {
		name string
		acks kgo.Acks
	}{{"acks=0", kgo.NoAck()}, {"acks=1", kgo.LeaderAck()}, {"acks=all", kgo.AllISRAcks()}} {
		t.Run(tc.name, func(t *testing.T) {
			topic := ts.createTopic(t, "acks-"+tc.name[5:], 1)
			cl := ts.client(t, kgo.RequiredAcks(tc.acks), kgo.DisableIdempotentWrite())
			const n = 1000
			produceAll(t, cl, topic.Name(), n, value)
			l, _ := topic.Partition(0)
			// acks=0 gets no response: the records land when the
			// server has read the request.
			deadline := time.Now().Add(10 * time.Second)
			for l.Head() < n && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if l.Head() != n {
				t.Fatalf("head %d after %d records", l.Head(), n)
			}
			checkRecords(t, consumeFrom(t, ts.addr, topic.Name(), 0, n), 0)
		})
	}
}

func TestKgo_AutoCreate(t *testing.T) {
	t.Run("allowed", func(t *testing.T) {
		ts := startServer(t, &Options{DefaultPartitions: 3})
		cl := ts.client(t, kgo.AllowAutoTopicCreation())
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		topic, err := ts.db.Topic("auto")
		if err != nil {
			t.Fatal(err)
		}
		if topic.Partitions() != 3 {
			t.Fatalf("auto-created topic has %d partitions, want 3", topic.Partitions())
		}
	})
	for _, tc := range []struct {
		name       string
		opts       *Options
		clientAuto bool
	}{{"client does not allow", nil, false}, {"server disabled", &Options{DisableAutoCreateTopics: true}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.opts)
			opts := []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second)}
			if tc.clientAuto {
				opts = append(opts, kgo.AllowAutoTopicCreation())
			}
			cl := ts.client(t, opts...)
			err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr()
			if err == nil {
				t.Fatal("produce to a missing topic succeeded")
			}
			if _, err := ts.db.Topic("auto"); err == nil {
				t.Fatal("topic was created")
			}
		})
	}
}

func TestKgo_ConsumerPastHeadLongPolls(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "tail", 1)
	cl := ts.client(t)
	produceAll(t, cl, "tail", 10, value)
	got := make(chan []*kgo.Record, 1)
	go func() { got <- consumeFrom(t, ts.addr, "tail", 10, 5) }()
	time.Sleep(500 * time.Millisecond)
	select {
	case recs := <-got:
		t.Fatalf("consumer at the head got %d records before any were produced", len(recs))
	default:
	}
	for i := 10; i < 15; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "tail", Value: value(i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case recs := <-got:
		checkRecords(t, recs, 10)
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not get the records produced after it started")
	}
}
