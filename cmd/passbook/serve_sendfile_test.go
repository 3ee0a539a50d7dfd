package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestServe_ReplaySendfile: a franz-go consumer replays what a producer
// sent through `passbook serve`, every record at its offset with its
// value, and the records went out of the segment files with sendfile
// (passbook_kafka_fetch_sendfile_bytes_total): the data directory's file
// system, as serve opens it, hands its descriptors to the Kafka server.
func TestServe_ReplaySendfile(t *testing.T) {
	p := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pr, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic("replay"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	const n = 20_000
	value := func(i int) string { return fmt.Sprintf("record %06d %0100d", i, i) }
	for i := range n {
		pr.Produce(ctx, &kgo.Record{Partition: 0, Value: []byte(value(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		return
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"replay": {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", seen, n, err)
		}
		fs.EachError(func(topic string, part int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != 0 || r.Offset != int64(seen) || string(r.Value) != value(seen) {
				t.Fatalf("record %d: partition %d offset %d value %.20q", seen, r.Partition, r.Offset, r.Value)
			}
			seen++
		})
	}
	if got := p.metric(t, "passbook_kafka_fetch_sendfile_bytes_total"); got < n*100 {
		t.Errorf("passbook_kafka_fetch_sendfile_bytes_total = %v after replaying %d records of over 100 bytes", got, n)
	}
}
