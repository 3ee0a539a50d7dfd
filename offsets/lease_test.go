package offsets_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// clock is a settable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func openClock(t *testing.T) (*offsets.SQLite, *clock) {
	c := newClock()
	return open(t, tempPath(t), &offsets.Options{Now: c.Now}), c
}

func TestSQLite_Acquire(t *testing.T) {
	s, clk := openClock(t)
	a, err := s.Acquire(ctx, "billing", "orders", "host-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := offsets.Lease{Consumer: "billing", Topic: "orders", Holder: "host-a", Generation: 1,
		Expires: clk.Now().Add(10 * time.Second), TTL: 10 * time.Second}
	if a.Consumer != want.Consumer || a.Topic != want.Topic || a.Holder != want.Holder ||
		a.Generation != want.Generation || !a.Expires.Equal(want.Expires) || a.TTL != want.TTL {
		t.Fatalf("Acquire = %+v, want %+v", a, want)
	}

	// Another holder while the lease is live: refused, with who and until when.
	clk.Advance(9 * time.Second)
	_, err = s.Acquire(ctx, "billing", "orders", "host-b", time.Minute)
	if !errors.Is(err, offsets.ErrLeaseHeld) {
		t.Fatalf("second holder: err = %v, want ErrLeaseHeld", err)
	}
	var held *offsets.LeaseHeldError
	if !errors.As(err, &held) || held.Held.Holder != "host-a" || held.Held.Generation != 1 {
		t.Fatalf("err = %#v, want a *LeaseHeldError naming host-a", err)
	}
	for _, part := range []string{`"host-a"`, "2026-01-02T03:04:15Z", "1s from now", `consumer "billing"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %s", err, part)
		}
	}

	// Other consumers and topics have their own leases.
	if _, err := s.Acquire(ctx, "billing", "refunds", "host-b", time.Minute); err != nil {
		t.Errorf("lease on another topic: %v", err)
	}

	// Expired: host-b takes over and the generation goes up.
	clk.Advance(time.Second)
	b, err := s.Acquire(ctx, "billing", "orders", "host-b", time.Minute)
	if err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if b.Generation != 2 {
		t.Errorf("takeover generation = %d, want 2", b.Generation)
	}
	if _, err := s.Renew(ctx, a); !errors.Is(err, offsets.ErrFenced) {
		t.Errorf("Renew of the lost lease: err = %v, want ErrFenced", err)
	}
	if err := s.Release(ctx, a); !errors.Is(err, offsets.ErrFenced) {
		t.Errorf("Release of the lost lease: err = %v, want ErrFenced", err)
	}

	// Renew extends; Release frees at once.
	clk.Advance(30 * time.Second)
	b2, err := s.Renew(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if !b2.Expires.Equal(clk.Now().Add(time.Minute)) || b2.Generation != b.Generation {
		t.Errorf("Renew = %+v, want expiry now+1m and the same generation", b2)
	}
	clk.Advance(45 * time.Second) // past b's expiry, within b2's
	if _, err := s.Acquire(ctx, "billing", "orders", "host-c", time.Minute); !errors.Is(err, offsets.ErrLeaseHeld) {
		t.Errorf("Acquire during a renewed lease: err = %v, want ErrLeaseHeld", err)
	}
	if err := s.Release(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, b2); !errors.Is(err, offsets.ErrFenced) {
		t.Errorf("second Release: err = %v, want ErrFenced", err)
	}
	if err := s.CommitFenced(ctx, b2, offsets.Key{Consumer: "billing", Topic: "orders"}, 1); !errors.Is(err, offsets.ErrFenced) {
		t.Errorf("CommitFenced after Release: err = %v, want ErrFenced", err)
	}
	c, err := s.Acquire(ctx, "billing", "orders", "host-c", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if c.Generation != 3 {
		t.Errorf("generation after Release = %d, want 3", c.Generation)
	}

	// The holder itself may re-acquire: a new generation fences its old one.
	c2, err := s.Acquire(ctx, "billing", "orders", "host-c", time.Minute)
	if err != nil || c2.Generation != 4 {
		t.Fatalf("re-acquire by the holder = %+v, %v; want generation 4", c2, err)
	}
	if _, err := s.Renew(ctx, c); !errors.Is(err, offsets.ErrFenced) {
		t.Errorf("Renew of the replaced generation: err = %v, want ErrFenced", err)
	}
}

func TestSQLite_CommitFenced(t *testing.T) {
	s, clk := openClock(t)
	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 3}
	a, err := s.Acquire(ctx, k.Consumer, k.Topic, "host-a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitFenced(ctx, a, k, 10); err != nil {
		t.Fatalf("CommitFenced by the holder: %v", err)
	}
	// Expired but not taken over: still the current generation.
	clk.Advance(2 * time.Second)
	if err := s.CommitFenced(ctx, a, k, 11); err != nil {
		t.Fatalf("CommitFenced after expiry, no takeover: %v", err)
	}
	b, err := s.Acquire(ctx, k.Consumer, k.Topic, "host-b", time.Second)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		lease   offsets.Lease
		key     offsets.Key
		offset  int64
		wantErr error
		want    int64
	}{
		{"StaleHolder", a, k, 99, offsets.ErrFenced, 11},
		{"ForgedHolder", offsets.Lease{Consumer: k.Consumer, Topic: k.Topic, Holder: "host-a", Generation: b.Generation}, k, 99, offsets.ErrFenced, 11},
		{"NoLease", offsets.Lease{Consumer: k.Consumer, Topic: k.Topic, Holder: "x", Generation: 1}, k, 99, offsets.ErrFenced, 11},
		{"OtherTopic", b, offsets.Key{Consumer: k.Consumer, Topic: "other", Partition: 3}, 99, offsets.ErrInvalid, 11},
		{"NegativeOffset", b, k, -1, offsets.ErrInvalid, 11},
		{"CurrentHolder", b, k, 12, nil, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CommitFenced(ctx, tt.lease, tt.key, tt.offset)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("CommitFenced: err = %v, want %v", err, tt.wantErr)
			}
			if got, err := s.Committed(ctx, k); err != nil || got != tt.want {
				t.Errorf("Committed = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestSQLite_Lease_InvalidInput(t *testing.T) {
	s, _ := openClock(t)
	tests := []struct {
		name                    string
		consumer, topic, holder string
		ttl                     time.Duration
	}{
		{"empty consumer", "", "t", "h", time.Second},
		{"empty topic", "c", "", "h", time.Second},
		{"empty holder", "c", "t", "", time.Second},
		{"zero ttl", "c", "t", "h", 0},
		{"sub-millisecond ttl", "c", "t", "h", time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Acquire(ctx, tt.consumer, tt.topic, tt.holder, tt.ttl); !errors.Is(err, offsets.ErrInvalid) {
				t.Errorf("Acquire: err = %v, want ErrInvalid", err)
			}
			l := offsets.Lease{Consumer: tt.consumer, Topic: tt.topic, Holder: tt.holder, Generation: 1, TTL: tt.ttl}
			if _, err := s.Renew(ctx, l); !errors.Is(err, offsets.ErrInvalid) {
				t.Errorf("Renew: err = %v, want ErrInvalid", err)
			}
		})
	}
}

// Leases, like offsets, survive a reopen; generations never repeat.
func TestSQLite_Lease_Reopen(t *testing.T) {
	clk := newClock()
	path := tempPath(t)
	s := open(t, path, &offsets.Options{Now: clk.Now})
	a, err := s.Acquire(ctx, "c", "t", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path, &offsets.Options{Now: clk.Now})
	b, err := s.Acquire(ctx, "c", "t", "h", time.Minute)
	if err != nil || b.Generation != 2 {
		t.Fatalf("Acquire after reopen = %+v, %v; want generation 2", b, err)
	}
}

// Concurrent Acquires by many holders: exactly one wins.
func TestSQLite_Acquire_Concurrent(t *testing.T) {
	s, _ := openClock(t)
	const holders = 8
	var wg sync.WaitGroup
	results := make(chan error, holders)
	for h := range holders {
		wg.Go(func() {
			_, err := s.Acquire(ctx, "c", "t", string(rune('a'+h)), time.Minute)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, offsets.ErrLeaseHeld):
			t.Errorf("Acquire: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d holders acquired the lease, want 1", won)
	}
}
