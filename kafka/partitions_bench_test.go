package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceAcksAll_Partitions (issue 21, item 1): a franz-go
// producer with acks=all sends 100-byte records round robin over one
// partition or 1,000, in windows of 10,000 records (the same window and
// total for both, every acknowledgement of a window awaited before the
// next), to an in-process passbook server (every acknowledged record
// fsync'd) and, as the in-memory reference, to franz-go's kfake with
// 1,000 partitions. The last sub-benchmark reports the ratios:
// "x-1p" (passbook at 1,000 partitions ÷ passbook at one) and "x-kfake"
// (passbook at 1,000 ÷ kfake at 1,000).
//
//	go test ./kafka -run '^$' -bench ProduceAcksAll_Partitions -benchtime 200000x
func BenchmarkProduceAcksAll_Partitions(b *testing.B) {
	const window = 10_000
	var mu sync.Mutex
	rate := map[string]float64{}
	for _, tc := range []struct {
		name       string
		partitions int
		kfake      bool
	}{
		{"passbook-1p", 1, false},
		{"passbook-1000p", 1000, false},
		{"kfake-1000p", 1000, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := fmt.Sprintf("acks-all-%dp", tc.partitions)
			var addr string
			if tc.kfake {
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(tc.partitions), topic))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(c.Close)
				addr = c.ListenAddrs()[0]
			} else {
				ts := startServer(b, nil)
				ts.createTopic(b, topic, tc.partitions)
				addr = ts.addr
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1_000_012),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(2*window))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			// Warm up, untimed: metadata, the connection, a record to
			// every partition.
			produceWindowTo(b, cl, topic, tc.partitions)
			b.ResetTimer()
			began := time.Now()
			for n := 0; n < b.N; n += window {
				produceWindowTo(b, cl, topic, min(window, b.N-n))
			}
			r := float64(b.N) / time.Since(began).Seconds()
			b.ReportMetric(r, "records/s")
			b.ReportMetric(0, "ns/op")
			mu.Lock()
			defer mu.Unlock()
			rate[tc.name] = r
			if tc.kfake {
				if one, many := rate["passbook-1p"], rate["passbook-1000p"]; one > 0 && many > 0 {
					b.ReportMetric(many/one, "x-1p")
					b.ReportMetric(many/r, "x-kfake")
				}
			}
		})
	}
}

// produceWindowTo produces n records to topic and waits for every
// acknowledgement.
func produceWindowTo(b *testing.B, cl *kgo.Client, topic string, n int) {
	var wg sync.WaitGroup
	var failed atomic.Int64
	wg.Add(n)
	ctx := context.Background()
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: benchValue}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d records failed", f, n)
	}
}
