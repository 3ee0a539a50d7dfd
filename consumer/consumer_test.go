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

var errCrash = errors.New("crash")

// openOrders opens a DB with topic "orders" holding n records.
func openOrders(t testing.TB, n int) (*passbook.DB, *passbook.Topic) {
	t.Helper()
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]passbook.Record, 0, 1000)
	for i := 0; i < n; i++ {
		recs = append(recs, passbook.Record{Value: fmt.Appendf(nil, "order-%d", i)})
		if len(recs) == cap(recs) || i == n-1 {
			if _, err := topic.AppendTo(0, recs, storage.DefaultDurability); err != nil {
				t.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	return db, topic
}

// tally counts how often each offset was handled.
type tally map[int64]int

func (tl tally) summary(n int) (total, missed, duplicated int, dups []int64) {
	for off := int64(0); off < int64(n); off++ {
		c := tl[off]
		total += c
		if c == 0 {
			missed++
		}
		if c > 1 {
			duplicated++
			dups = append(dups, off)
		}
	}
	return
}

// TestConsumer_CrashAndResume is the seed's Part 2: a consumer processes
// each record and crashes right after processing offset 59,999, before
// (or, with CommitBefore, after) committing; a new consumer with the same
// name resumes from the committed offset.
//
// -short (the quick tier) runs it on a tenth of the records: 10,000,
// crashing after offset 5,999.
func TestConsumer_CrashAndResume(t *testing.T) {
	n, crashAt := 100_000, int64(59_999)
	if testing.Short() {
		n, crashAt = 10_000, 5_999
	}
	for _, tc := range []struct {
		commit                    consumer.Commit
		resumeFrom                int64
		total, missed, duplicated int
		wantDups                  []int64
	}{
		{consumer.CommitAfter, crashAt, n + 1, 0, 1, []int64{crashAt}},
		{consumer.CommitBefore, crashAt + 1, n - 1, 1, 0, nil},
	} {
		t.Run(tc.commit.String(), func(t *testing.T) {
			db, topic := openOrders(t, n)
			ctx := context.Background()
			seen := tally{}
			c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "orders-writer", Commit: tc.commit})
			if err != nil {
				t.Fatal(err)
			}
			// The crash lands in the gap between the two steps: after
			// processing (commit after), or after committing (commit before).
			err = c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
				if m.Offset == crashAt && tc.commit == consumer.CommitBefore {
					return errCrash
				}
				seen[m.Offset]++
				if m.Offset == crashAt {
					return errCrash
				}
				return nil
			})
			if !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v", err)
			}
			c.Abandon()

			c2, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "orders-writer", Commit: tc.commit})
			if err != nil {
				t.Fatal(err)
			}
			if got := c2.Positions()[0]; got != tc.resumeFrom {
				t.Fatalf("resumed from %d, want %d", got, tc.resumeFrom)
			}
			if err := c2.Drain(ctx, func(ctx context.Context, m consumer.Message) error { seen[m.Offset]++; return nil }); err != nil {
				t.Fatal(err)
			}
			c2.Close()
			total, missed, duplicated, dups := seen.summary(n)
			if total != tc.total || missed != tc.missed || duplicated != tc.duplicated || fmt.Sprint(dups) != fmt.Sprint(tc.wantDups) {
				t.Fatalf("total %d missed %d duplicated %d at %v; want %d, %d, %d at %v",
					total, missed, duplicated, dups, tc.total, tc.missed, tc.duplicated, tc.wantDups)
			}
			if got, _ := db.Offsets().Committed(ctx, offsets.Key{Consumer: "orders-writer", Topic: "orders"}); got != int64(n) {
				t.Fatalf("committed after the run = %d, want %d", got, n)
			}
		})
	}
}

// TestConsumer_Replay is the seed's Part 3: a new consumer replays all of
// history from offset 0 while the first stays where it is (10,000
// records under -short).
func TestConsumer_Replay(t *testing.T) {
	n := int64(100_000)
	if testing.Short() {
		n = 10_000
	}
	db, topic := openOrders(t, int(n))
	ctx := context.Background()
	key := offsets.Key{Consumer: "orders-writer", Topic: "orders"}
	if err := db.Offsets().Commit(ctx, key, n); err != nil {
		t.Fatal(err)
	}
	b, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "analytics-v2", Start: consumer.Earliest()})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	if err := b.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		if m.Offset != want {
			return fmt.Errorf("read offset %d, want %d", m.Offset, want)
		}
		want++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if want != n {
		t.Fatalf("replayed %d records, want %d", want, n)
	}
	if got, _ := db.Offsets().Committed(ctx, key); got != n {
		t.Fatalf("orders-writer moved to %d", got)
	}
	lag, err := consumer.Lag(ctx, db.Offsets(), topic, "analytics-v2")
	if err != nil || len(lag) != 1 || lag[0].Committed != n || lag[0].Lag != 0 {
		t.Fatalf("lag = %+v, %v", lag, err)
	}
}

func TestConsumer_NameIsExclusive(t *testing.T) {
	db, topic := openOrders(t, 10)
	ctx := context.Background()
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "orders-writer", Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "orders-writer", Holder: "second"})
	if !errors.Is(err, offsets.ErrLeaseHeld) {
		t.Fatalf("second consumer: %v, want ErrLeaseHeld", err)
	}
	t.Logf("error: %v", err)
	if _, err := consumer.Seek(ctx, db.Offsets(), topic, "orders-writer", consumer.Earliest(), nil); !errors.Is(err, offsets.ErrLeaseHeld) {
		t.Fatalf("seek while running: %v, want ErrLeaseHeld", err)
	}
	c.Close()
	c2, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "orders-writer", Holder: "second"})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	c2.Close()
}

func TestConsumer_GapAfterRetention(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	db, err := passbook.Open(t.TempDir(), &passbook.Options{Now: func() time.Time { return now }, MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err := db.CreateTopic("events", passbook.TopicConfig{SegmentBytes: 4096, RetentionAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		topic.AppendTo(0, []passbook.Record{{Value: fmt.Appendf(nil, "event-%04d-%s", i, make([]byte, 40))}}, storage.DefaultDurability)
	}
	ctx := context.Background()
	db.Offsets().Commit(ctx, offsets.Key{Consumer: "slow", Topic: "events"}, 5)
	now = now.Add(2 * time.Hour)
	l, _ := topic.Partition(0)
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset()
	if start <= 5 {
		t.Fatalf("retention left start at %d", start)
	}
	_, err = consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "slow"})
	var gap *consumer.GapError
	if !errors.As(err, &gap) || gap.Missed() != start-5 {
		t.Fatalf("New after retention: %v; want a GapError missing %d", err, start-5)
	}
	t.Logf("error: %v", err)
	for _, tc := range []struct {
		gap  consumer.Gap
		want int64
	}{{consumer.GapResetEarliest, start}, {consumer.GapResetLatest, 200}} {
		c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "slow", OnGap: tc.gap})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Positions()[0]; got != tc.want {
			t.Errorf("gap policy %d: position %d, want %d", tc.gap, got, tc.want)
		}
		c.Abandon()
	}
}

func TestConsumer_CommitEvery(t *testing.T) {
	db, topic := openOrders(t, 25_000)
	ctx := context.Background()
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "batcher", Commit: consumer.CommitEvery, EveryN: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	key := offsets.Key{Consumer: "batcher", Topic: "orders"}
	var committedAt15k int64
	err = c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		if m.Offset == 15_000 {
			committedAt15k, _ = db.Offsets().Committed(ctx, key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if committedAt15k != 10_000 {
		t.Fatalf("committed while handling offset 15,000 = %d, want 10,000", committedAt15k)
	}
	if got, _ := db.Offsets().Committed(ctx, key); got != 25_000 {
		t.Fatalf("committed after Drain = %d, want 25,000", got)
	}
	c.Close()
}

func TestConsumer_RunFollowsNewRecords(t *testing.T) {
	db, topic := openOrders(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "tail", Start: consumer.Latest()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		topic.Append(passbook.Record{Value: []byte("late")})
	}()
	var got string
	err = c.Run(ctx, func(ctx context.Context, m consumer.Message) error {
		got = string(m.Value)
		return consumer.Stop
	})
	if err != nil || got != "late" {
		t.Fatalf("Run = %v, got %q", err, got)
	}
}

// TestConsumer_FollowsManyPartitions tails a four-partition topic while
// records arrive one at a time, so Run waits between nearly every record:
// each record is handled once, in order per partition. Under -race it
// also checks that Wait's per-partition waiters, which outlive it, do not
// read the readers' positions as Run moves them on (found by cmd/torture).
func TestConsumer_FollowsManyPartitions(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "tail"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 400
	go func() {
		for i := range n {
			if _, err := topic.AppendTo(int32(i%4), []passbook.Record{{Value: fmt.Appendf(nil, "%d", i)}}, storage.DefaultDurability); err != nil {
				t.Error(err)
				return
			}
			if i%8 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	next := map[int32]int64{}
	seen := 0
	err = c.Run(ctx, func(ctx context.Context, m consumer.Message) error {
		if m.Offset != next[m.Partition] {
			return fmt.Errorf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		if seen++; seen == n {
			return consumer.Stop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run = %v after %d records", err, seen)
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"earliest", "latest", "42", "2026-01-02T03:04:05Z"} {
		if _, err := consumer.ParseStart(s); err != nil {
			t.Errorf("ParseStart(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "-1", "yesterday"} {
		if _, err := consumer.ParseStart(s); !errors.Is(err, consumer.ErrInvalid) {
			t.Errorf("ParseStart(%q) = %v, want ErrInvalid", s, err)
		}
	}
	for _, s := range []string{"every=0", "every=x", "sometimes"} {
		if _, _, _, err := consumer.ParseCommit(s); !errors.Is(err, consumer.ErrInvalid) {
			t.Errorf("ParseCommit(%q) = %v, want ErrInvalid", s, err)
		}
	}
}
