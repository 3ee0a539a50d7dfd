package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// TestConsumer_CommittedOffsetInACompactedGap: a consumer whose committed
// offset falls in a gap compaction left goes on at the next record kept,
// reads every record kept after it, and commits past the gap.
func TestConsumer_CommittedOffsetInACompactedGap(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users, err := db.CreateTopic("users", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact, SegmentBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		// Every hundredth record's key is its own: those stay, with
		// compacted ranges between them.
		rec := passbook.Record{Key: fmt.Appendf(nil, "user-%d", i%25), Value: fmt.Appendf(nil, "v%d", i)}
		if i%100 == 0 {
			rec.Key = fmt.Appendf(nil, "once-%d", i)
		}
		if _, err := users.AppendTo(0, []passbook.Record{rec}, storage.DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := users.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for rec, err := range users.Records(0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, rec.Offset)
	}
	// An offset in the middle of a compacted range.
	const gap = 150
	if _, found := slices.BinarySearch(kept, gap); found || kept[1] != 100 || kept[2] != 200 {
		t.Fatalf("offset %d is not in a gap between 100 and 200: %v", gap, kept)
	}
	ctx := context.Background()
	key := offsets.Key{Consumer: "mirror", Topic: "users"}
	if err := db.Offsets().Commit(ctx, key, gap); err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(ctx, users, db.Offsets(), consumer.Options{Name: "mirror"})
	if err != nil {
		t.Fatalf("a committed offset in a gap: %v", err)
	}
	var got []int64
	if err := c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		got = append(got, m.Offset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	i, _ := slices.BinarySearch(kept, gap)
	if !slices.Equal(got, kept[i:]) {
		t.Fatalf("from the gap at %d the consumer read %v, want %v", gap, got, kept[i:])
	}
	if next, _ := db.Offsets().Committed(ctx, key); next != 2000 {
		t.Fatalf("committed %d after the run, want the head 2000", next)
	}
	t.Logf("committed %d (a gap), read %d records from %d on", gap, len(got), got[0])
}
