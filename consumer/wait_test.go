package consumer_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/leakcheck"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// openTopic opens a DB with an empty topic "orders" of the given partitions.
func openTopic(t *testing.T, partitions int) (*passbook.DB, *passbook.Topic) {
	t.Helper()
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	return db, topic
}

// waiters counts the goroutines in a storage wait, and says whether one
// of them is blocked in a select.
func waiters() (n int, selecting bool) {
	for _, g := range leakcheck.Stacks() {
		if strings.Contains(g, "storage.WaitAny(") || strings.Contains(g, "storage.(*Log).Wait(") {
			n++
			selecting = selecting || strings.Contains(g, "[select")
		}
	}
	return n, selecting
}

// TestConsumer_Wait_NoGoroutinesPileUp waits on a consumer of 16
// partitions 200 times, each wait ended by an append to one partition or
// by its ctx: while it blocks, only the caller waits (no goroutine per
// partition), and none is left waiting once it returns.
func TestConsumer_Wait_NoGoroutinesPileUp(t *testing.T) {
	db, topic := openTopic(t, 16)
	c, err := consumer.New(t.Context(), topic, db.Offsets(), consumer.Options{Name: "tail"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for round := range 200 {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Wait(ctx) }()
		for {
			n, selecting := waiters()
			if selecting {
				if n != 1 {
					t.Fatalf("round %d: %d goroutines waiting for one Wait over 16 partitions", round, n)
				}
				break
			}
			runtime.Gosched()
		}
		var want error = context.Canceled
		if round%2 == 0 {
			// One record, read at once: the consumer is at the head again.
			p := int32(round / 2 % 16)
			if _, err := topic.AppendTo(p, []passbook.Record{{Value: []byte("v")}}, storage.InOS); err != nil {
				t.Fatal(err)
			}
			want = nil
		} else {
			cancel()
		}
		if err := <-done; !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("round %d: Wait = %v, want %v", round, err, want)
		}
		cancel()
		if want == nil {
			if err := c.Drain(t.Context(), func(context.Context, consumer.Message) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, _ := waiters(); n != 0 {
		t.Errorf("%d goroutines still waiting after the last Wait returned", n)
	}
}

// TestConsumer_Wait_LeaseLost: a consumer waiting on its partitions is
// told when another holder takes its name's lease: Wait returns the
// loss (ErrFenced), not a timeout.
func TestConsumer_Wait_LeaseLost(t *testing.T) {
	for _, partitions := range []int{1, 4} {
		db, topic := openTopic(t, partitions)
		ctx := t.Context()
		c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "tail", Holder: "first", LeaseTTL: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var held *offsets.LeaseHeldError
		if _, err := db.Offsets().Acquire(ctx, "tail", "orders", "second", time.Minute); !errors.As(err, &held) {
			t.Fatalf("Acquire by a second holder = %v, want a LeaseHeldError", err)
		}
		if _, err := db.Offsets().TakeOver(ctx, held.Held, "second", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); !errors.Is(err, offsets.ErrFenced) {
			t.Errorf("%d partitions: Wait after the lease was taken = %v, want ErrFenced", partitions, err)
		}
		c.Close()
	}
}
