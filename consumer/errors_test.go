package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// TestRangeError: an offset outside a partition names the partition, the
// valid range (the head included: a consumer may start there) and what to
// use instead, with the caller's option name when it gives one.
func TestRangeError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  consumer.RangeError
		want string
	}{
		{"past the head", consumer.RangeError{Topic: "orders", Partition: 2, Offset: 500_000, Start: 0, Head: 300_000, Option: "--from"},
			"consumer: offset 500,000 on orders/2 is past the head: valid offsets are 0 to 300,000 (it holds 0 to 299,999; 300,000 is the head, where only new records are read); use --from earliest (0) or --from latest (300,000) instead"},
		{"deleted by retention", consumer.RangeError{Topic: "orders", Partition: 0, Offset: 5, Start: 1_000, Head: 2_000},
			"consumer: offset 5 on orders/0 was deleted by retention (the log starts at 1,000): valid offsets are 1,000 to 2,000 (it holds 1,000 to 1,999; 2,000 is the head, where only new records are read); use earliest (1,000) or latest (2,000) instead"},
		{"empty", consumer.RangeError{Topic: "t", Partition: 0, Offset: 1, Option: "--to"},
			"consumer: offset 1 on t/0 is past the head: it is empty, so the only valid offset is 0; use --to earliest (0) or --to latest (0) instead"},
		{"everything deleted", consumer.RangeError{Topic: "t", Partition: 1, Offset: 3, Start: 10, Head: 10},
			"consumer: offset 3 on t/1 was deleted by retention (the log starts at 10): it holds no records now (retention deleted those below 10), so the only valid offset is 10; use earliest (10) or latest (10) instead"},
		{"negative", consumer.RangeError{Topic: "t", Partition: 0, Offset: -1, Start: 0, Head: 4},
			"consumer: offset -1 on t/0 is negative: valid offsets are 0 to 4 (it holds 0 to 3; 4 is the head, where only new records are read); use earliest (0) or latest (4) instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &tc.err
			if got := err.Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			var oor *storage.OutOfRangeError
			if !errors.Is(err, storage.ErrOutOfRange) || !errors.Is(err, consumer.ErrInvalid) || !errors.As(err, &oor) || oor.Offset != tc.err.Offset {
				t.Errorf("errors.Is(err, storage.ErrOutOfRange / consumer.ErrInvalid) or errors.As(err, *storage.OutOfRangeError) false for %v", err)
			}
		})
	}
}

// TestConsumer_OutOfRange: New and Seek refuse a start outside a
// partition (past its head, below its log start after retention) with a
// *RangeError, and an unknown or repeated partition with a
// *PartitionError; neither commits anything, and Seek moves no partition
// when one of them is out of range.
func TestConsumer_OutOfRange(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	db, err := passbook.Open(t.TempDir(), &passbook.Options{Now: func() time.Time { return now }, MinSegmentBytes: -1}) // tiny segments, for retention
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err := db.CreateTopic("events", passbook.TopicConfig{Partitions: 2, SegmentBytes: 4096, RetentionAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := topic.AppendTo(0, []passbook.Record{{Value: fmt.Appendf(nil, "event-%04d-%s", i, make([]byte, 40))}}, storage.DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Hour)
	l0, _ := topic.Partition(0)
	if _, err := l0.Retain(); err != nil {
		t.Fatal(err)
	}
	start := l0.StartOffset() // partition 1 is empty
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		start      consumer.Start
		partitions []int32
		want       any // *consumer.RangeError or *consumer.PartitionError
	}{
		{"past the head", consumer.AtOffset(201), []int32{0}, &consumer.RangeError{Topic: "events", Partition: 0, Offset: 201, Start: start, Head: 200}},
		{"below the log start", consumer.AtOffset(start - 1), []int32{0}, &consumer.RangeError{Topic: "events", Partition: 0, Offset: start - 1, Start: start, Head: 200}},
		{"valid on one partition, not the other", consumer.AtOffset(start + 10), nil, &consumer.RangeError{Topic: "events", Partition: 1, Offset: start + 10}},
		{"unknown partition", consumer.Earliest(), []int32{0, 2}, &consumer.PartitionError{Topic: "events", Partition: 2, Partitions: 2}},
		{"negative partition", consumer.Earliest(), []int32{-1}, &consumer.PartitionError{Topic: "events", Partition: -1, Partitions: 2}},
		{"repeated partition", consumer.Earliest(), []int32{1, 1}, &consumer.PartitionError{Topic: "events", Partition: 1, Partitions: 2, Duplicate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				switch want := tc.want.(type) {
				case *consumer.RangeError:
					var got *consumer.RangeError
					if !errors.As(err, &got) || *got != *want {
						t.Errorf("%s: %v; want %v", what, err, want)
					}
				case *consumer.PartitionError:
					var got *consumer.PartitionError
					if !errors.As(err, &got) || got.Topic != want.Topic || got.Partition != want.Partition || got.Partitions != want.Partitions || got.Duplicate != want.Duplicate {
						t.Errorf("%s: %v; want %v", what, err, want)
					}
					if !want.Duplicate && !errors.Is(err, passbook.ErrUnknownPartition) {
						t.Errorf("%s: %v does not match passbook.ErrUnknownPartition", what, err)
					}
				}
				if !errors.Is(err, consumer.ErrInvalid) {
					t.Errorf("%s: %v does not match ErrInvalid", what, err)
				}
			}
			_, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "new", Start: tc.start, Partitions: tc.partitions})
			check("New", err)
			_, err = consumer.Seek(ctx, db.Offsets(), topic, "seek", tc.start, tc.partitions)
			check("Seek", err)
			for _, name := range []string{"new", "seek"} {
				if list, err := db.Offsets().List(ctx, offsets.Filter{Consumer: name}); err != nil || len(list) != 0 {
					t.Errorf("%s committed %v (%v), want nothing", name, list, err)
				}
			}
		})
	}
}
