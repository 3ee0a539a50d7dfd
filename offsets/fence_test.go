package offsets_test

import (
	"errors"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// TestSQLite_CommitFenced_AfterCommits: a lease that has committed (and
// so is remembered as current) is fenced the moment the lease row
// changes — by a takeover, a release, or an application's own SQL on
// DB() — and a fenced commit writes nothing.
func TestSQLite_CommitFenced_AfterCommits(t *testing.T) {
	k := offsets.Key{Consumer: "c", Topic: "t"}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *offsets.SQLite, l offsets.Lease) (next offsets.Lease, ok bool)
	}{
		{"take over", func(t *testing.T, s *offsets.SQLite, l offsets.Lease) (offsets.Lease, bool) {
			l2, err := s.TakeOver(ctx, l, "two", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return l2, true
		}},
		{"release", func(t *testing.T, s *offsets.SQLite, l offsets.Lease) (offsets.Lease, bool) {
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			return offsets.Lease{}, false
		}},
		{"SQL on DB()", func(t *testing.T, s *offsets.SQLite, l offsets.Lease) (offsets.Lease, bool) {
			if _, err := s.DB().Exec(`UPDATE passbook_leases SET generation = generation + 1`); err != nil {
				t.Fatal(err)
			}
			return offsets.Lease{}, false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tempPath(t), nil)
			l, err := s.Acquire(ctx, k.Consumer, k.Topic, "one", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for off := int64(1); off <= 3; off++ {
				if err := s.CommitFenced(ctx, l, k, off); err != nil {
					t.Fatalf("commit %d under a current lease: %v", off, err)
				}
			}
			next, ok := tc.change(t, s, l)
			if err := s.CommitFenced(ctx, l, k, 99); !errors.Is(err, offsets.ErrFenced) {
				t.Errorf("commit under the old lease: %v, want ErrFenced", err)
			}
			if got, err := s.Committed(ctx, k); err != nil || got != 3 {
				t.Errorf("committed %d, %v; want 3 (a fenced commit writes nothing)", got, err)
			}
			if ok {
				if err := s.CommitFenced(ctx, next, k, 4); err != nil {
					t.Errorf("commit under the new lease: %v", err)
				}
				if err := s.CommitFenced(ctx, l, k, 98); !errors.Is(err, offsets.ErrFenced) {
					t.Errorf("old lease after the new one committed: %v, want ErrFenced", err)
				}
			}
		})
	}
}
