package consumer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
)

// benchConsume drains a topic of n records with the given commit mode and
// reports records/s.
func benchConsume(b *testing.B, n int, mode consumer.Commit, everyN int) {
	db, topic := openOrders(b, n)
	ctx := context.Background()
	b.ResetTimer()
	total := 0
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("bench-%d", i)
		c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: name, Commit: mode, EveryN: everyN})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Drain(ctx, func(ctx context.Context, m consumer.Message) error { return nil }); err != nil {
			b.Fatal(err)
		}
		c.Close()
		if got, _ := db.Offsets().Committed(ctx, offsets.Key{Consumer: name, Topic: "orders"}); got != int64(n) {
			b.Fatalf("committed %d", got)
		}
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
}

// A commit after every record, each surviving a crash of the process.
func BenchmarkConsumer_CommitAfterEach(b *testing.B) {
	benchConsume(b, 100_000, consumer.CommitAfter, 0)
}

func BenchmarkConsumer_CommitEvery10000(b *testing.B) {
	benchConsume(b, 1_000_000, consumer.CommitEvery, 10_000)
}
