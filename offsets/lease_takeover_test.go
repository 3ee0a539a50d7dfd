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
