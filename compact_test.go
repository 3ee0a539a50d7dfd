package passbook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

func TestTopic_Compact(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := passbook.TopicConfig{Partitions: 2, CleanupPolicy: passbook.CleanupCompact, SegmentBytes: 1 << 10,
		RetentionBytes: 1 << 10, DeleteRetention: time.Minute}
	prices, err := db.CreateTopic("prices", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		if _, err := prices.Append(passbook.Record{Key: fmt.Appendf(nil, "sku-%d", i%30), Value: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := prices.Append(passbook.Record{Value: []byte("no key")}); !errors.Is(err, storage.ErrNoKey) {
		t.Fatalf("keyless append to a compacted topic = %v, want storage.ErrNoKey", err)
	}
	// cleanup.policy=compact: retention is off, as in Kafka.
	for p := range int32(2) {
		l, _ := prices.Partition(p)
		if n, err := l.Retain(); err != nil || n != 0 || l.StartOffset() != 0 {
			t.Fatalf("partition %d: retention deleted %d segments (%v) of a compact topic", p, n, err)
		}
	}
	stats, err := prices.Compact(context.Background())
	if err != nil || len(stats) != 2 {
		t.Fatalf("Compact = %v, %v", stats, err)
	}
	newest := map[string]string{}
	for p := range int32(2) {
		if stats[p].RecordsRemoved == 0 || stats[p].BytesAfter >= stats[p].BytesBefore {
			t.Fatalf("partition %d: %+v", p, stats[p])
		}
		for rec, err := range prices.Records(p, 0) {
			if err != nil {
				t.Fatal(err)
			}
			newest[string(rec.Key)] = string(rec.Value)
		}
	}
	for i := 570; i < 600; i++ {
		if got := newest[fmt.Sprintf("sku-%d", i%30)]; got != fmt.Sprint(i) {
			t.Fatalf("sku-%d reads %q, want %d", i%30, got, i)
		}
	}
	db.Close()

	db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prices, _ = db.Topic("prices")
	if got := prices.Config(); got.DeleteRetention != time.Minute || !got.Compacted() {
		t.Fatalf("config after reopen: %+v", got)
	}
	orders, _ := db.CreateTopic("orders", passbook.TopicConfig{})
	if _, err := orders.Compact(context.Background()); !errors.Is(err, storage.ErrNotCompacted) {
		t.Fatalf("Compact of a delete topic = %v, want storage.ErrNotCompacted", err)
	}
}
