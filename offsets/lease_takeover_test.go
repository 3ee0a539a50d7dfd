package offsets

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestSQLite_TakeOver(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	s, err := Open(filepath.Join(t.TempDir(), "o.db"), &Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	dead, err := s.Acquire(ctx, "c", "t", "host:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The dead holder's lease is live, but a successor that knows it is
	// gone takes it over at once; the old generation is fenced.
	l, err := s.TakeOver(ctx, dead, "host:2", time.Minute)
	if err != nil || l.Generation != dead.Generation+1 || l.Holder != "host:2" {
		t.Fatalf("TakeOver = %+v, %v", l, err)
	}
	if err := s.CommitFenced(ctx, dead, Key{Consumer: "c", Topic: "t"}, 5); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit under the taken-over lease: %v, want ErrFenced", err)
	}
	// A stale view of the lease cannot take it from its new, live holder.
	if _, err := s.TakeOver(ctx, dead, "host:3", time.Minute); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("TakeOver with a stale lease: %v, want ErrLeaseHeld", err)
	}
}

func TestSQLite_CommitTxFenced(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	k := Key{Consumer: "c", Topic: "t"}
	old, _ := s.Acquire(ctx, "c", "t", "one", time.Minute)
	current, _ := s.TakeOver(ctx, old, "two", time.Minute)
	for _, tc := range []struct {
		lease Lease
		want  error
	}{{old, ErrFenced}, {current, nil}} {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = s.CommitTxFenced(ctx, tx, tc.lease, k, 7)
		if !errors.Is(err, tc.want) {
			t.Fatalf("generation %d: %v, want %v", tc.lease.Generation, err, tc.want)
		}
		if err != nil {
			tx.Rollback()
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Committed(ctx, k); got != 7 {
		t.Fatalf("committed = %d, want 7", got)
	}
}
