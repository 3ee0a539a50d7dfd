package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce: what transactions cost a producer. franz-go,
// acks=all, 100-byte records, four partitions, against passbook in the
// same run: an idempotent producer, then a transactional one committing
// every 100 and every 1,000 records (each commit: the transaction log's
// fsyncs, a marker per partition, fsync'd).
//
//	go test ./kafka -run '^$' -bench TxnProduce -benchtime 200000x
func BenchmarkTxnProduce(b *testing.B) {
	b.Run("idempotent", func(b *testing.B) {
		ts := startServer(b, nil)
		ts.createTopic(b, benchTopic, benchPartitions)
		cl := ts.client(b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(250_000), kgo.ProducerLinger(time.Millisecond))
		produceN(b, cl, 1000)
		b.ResetTimer()
		began := time.Now()
		produceN(b, cl, b.N)
		b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "records/s")
		b.ReportMetric(0, "ns/op")
	})
	for _, per := range []int{100, 1000} {
		b.Run(fmt.Sprintf("transactional/%d-per-txn", per), func(b *testing.B) {
			ts := startServer(b, nil)
			ts.createTopic(b, benchTopic, benchPartitions)
			cl := ts.client(b, kgo.TransactionalID("bench"), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.MaxBufferedRecords(250_000), kgo.ProducerLinger(time.Millisecond))
			ctx := context.Background()
			txn := func(n int) {
				if err := cl.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				produceN(b, cl, n)
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatal(err)
				}
			}
			txn(1000)
			b.ResetTimer()
			began := time.Now()
			txns := 0
			for left := b.N; left > 0; left -= per {
				txn(min(per, left))
				txns++
			}
			took := time.Since(began).Seconds()
			b.ReportMetric(float64(b.N)/took, "records/s")
			b.ReportMetric(float64(txns)/took, "txns/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
