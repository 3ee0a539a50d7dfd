package offsets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// TestSQLite_FileLostUnderStore: offsets.db deleted, replaced or
// truncated under an open store. The store notices — at the next commit
// in SyncGroup (its fsync checks the file first), within WatchInterval in
// the other modes — and from then on refuses every call with
// ErrUnavailable, naming what happened; OnUnavailable hears it once. No
// commit is acknowledged into a file no one will read after that.
func TestSQLite_FileLostUnderStore(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, path string)
		want string
	}{
		{"Deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "was deleted"},
		{"Replaced", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.db")
			s, err := offsets.Open(other, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "was replaced"},
		{"Truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "was truncated"},
	}
	for _, mode := range []offsets.Sync{offsets.SyncGroup, offsets.SyncNormal} {
		for _, tt := range tests {
			t.Run(mode.String()+"/"+tt.name, func(t *testing.T) {
				path := tempPath(t)
				var heard atomic.Int32
				s := open(t, path, &offsets.Options{Synchronous: mode, OnUnavailable: func(error) { heard.Add(1) }})
				k := offsets.Key{Consumer: "billing", Topic: "orders"}
				if err := s.Commit(ctx, k, 1500); err != nil {
					t.Fatal(err)
				}
				tt.do(t, path)
				var err error
				if mode == offsets.SyncGroup {
					err = s.Commit(ctx, k, 1501) // refused at once
				} else {
					deadline := time.Now().Add(10 * offsets.WatchInterval)
					for err == nil && time.Now().Before(deadline) {
						time.Sleep(offsets.WatchInterval / 10)
						err = s.Commit(ctx, k, 1501)
					}
				}
				if !errors.Is(err, offsets.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("commit after the file %s: %v; want ErrUnavailable saying %q", strings.ToLower(tt.name), err, tt.want)
				}
				if _, err := s.Committed(ctx, k); !errors.Is(err, offsets.ErrUnavailable) {
					t.Fatalf("Committed once unavailable: %v; want ErrUnavailable", err)
				}
				if !errors.Is(s.Err(), offsets.ErrUnavailable) || heard.Load() != 1 {
					t.Fatalf("Err() = %v, OnUnavailable called %d times; want ErrUnavailable, once", s.Err(), heard.Load())
				}
			})
		}
	}
}
