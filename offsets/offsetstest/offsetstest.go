// Package offsetstest is a conformance suite for implementations of
// offsets.Store, like net/http/httptest is for handlers:
//
//	func TestMyStore(t *testing.T) {
//		offsetstest.RunStoreTests(t, func(t *testing.T) offsets.Store { return myStore(t) })
//	}
package offsetstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// RunStoreTests runs the behaviour every offsets.Store must have. open
// returns a new, empty store for each subtest, on the wall clock (UpdatedAt
// is checked against time.Now); the suite closes it.
func RunStoreTests(t *testing.T, open func(t *testing.T) offsets.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s offsets.Store)
	}{
		{"NotFound", testNotFound},
		{"Commit", testCommit},
		{"CommitMany", testCommitMany},
		{"CommitEntries", testCommitEntries},
		{"InvalidInput", testInvalidInput},
		{"List", testList},
		{"Delete", testDelete},
		{"CanceledContext", testCanceledContext},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

func key(c, tp string, p int32) offsets.Key {
	return offsets.Key{Consumer: c, Topic: tp, Partition: p}
}

// mustCommitted fails t unless k's committed offset is want.
func mustCommitted(t *testing.T, s offsets.Store, k offsets.Key, want int64) {
	t.Helper()
	got, err := s.Committed(ctx, k)
	if err != nil {
		t.Fatalf("Committed(%v): %v", k, err)
	}
	if got != want {
		t.Fatalf("Committed(%v) = %d, want %d", k, got, want)
	}
}

// mustEmpty fails t if s holds any entry.
func mustEmpty(t *testing.T, s offsets.Store) {
	t.Helper()
	list, err := s.List(ctx, offsets.Filter{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 0 {
		t.Fatalf("List = %v, want nothing", list)
	}
}

func testNotFound(t *testing.T, s offsets.Store) {
	k := key("c", "t", 0)
	_, err := s.Committed(ctx, k)
	if !errors.Is(err, offsets.ErrNotFound) {
		t.Fatalf("Committed on an empty store: err = %v, want ErrNotFound", err)
	}
	if err := s.Commit(ctx, key("c", "t", 1), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Committed(ctx, k); !errors.Is(err, offsets.ErrNotFound) {
		t.Fatalf("Committed of another partition: err = %v, want ErrNotFound", err)
	}
}

func testCommit(t *testing.T, s offsets.Store) {
	steps := []struct {
		key    offsets.Key
		offset int64
	}{
		{key("c", "t", 0), 0},
		{key("c", "t", 0), 10},
		{key("c", "t", 1), 7},
		{key("d", "t", 0), 3},
		{key("c", "u", 0), 1 << 40},
		{key("c", "t", 0), 4}, // backwards is allowed: a consumer may seek back
		{key("group one/ü", "topic.with-dots", 2147483647), 9},
	}
	want := map[offsets.Key]int64{}
	for _, st := range steps {
		if err := s.Commit(ctx, st.key, st.offset); err != nil {
			t.Fatalf("Commit(%v, %d): %v", st.key, st.offset, err)
		}
		want[st.key] = st.offset
		for k, off := range want {
			mustCommitted(t, s, k, off)
		}
	}
}

func testCommitMany(t *testing.T, s offsets.Store) {
	batch := map[offsets.Key]int64{
		key("c", "t", 0): 1, key("c", "t", 1): 2, key("c", "u", 0): 3, key("d", "t", 0): 4,
	}
	if err := s.CommitMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for k, off := range batch {
		mustCommitted(t, s, k, off)
	}
	if err := s.CommitMany(ctx, nil); err != nil {
		t.Fatalf("CommitMany(nil): %v", err)
	}
	// One bad key: nothing of the batch is written.
	bad := map[offsets.Key]int64{key("c", "t", 0): 100, key("c", "t", 1): -1}
	if err := s.CommitMany(ctx, bad); !errors.Is(err, offsets.ErrInvalid) {
		t.Fatalf("CommitMany with a negative offset: err = %v, want ErrInvalid", err)
	}
	mustCommitted(t, s, key("c", "t", 0), 1)
}

func testCommitEntries(t *testing.T, s offsets.Store) {
	before := time.Now().Truncate(time.Millisecond)
	k := key("g", "t", 0)
	err := s.CommitEntries(ctx, []offsets.Entry{
		{Key: k, Offset: 1, Metadata: "first"},
		{Key: key("g", "t", 1), Offset: 2},
		{Key: k, Offset: 3, Metadata: "last wins"},
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, offsets.Filter{Consumer: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("List = %v, want 2 entries", list)
	}
	if got := list[0]; got.Key != k || got.Offset != 3 || got.Metadata != "last wins" {
		t.Errorf("entry = %+v, want offset 3 metadata %q", got, "last wins")
	}
	after := time.Now()
	if u := list[0].UpdatedAt; u.Before(before) || u.After(after) {
		t.Errorf("UpdatedAt = %v, want within [%v, %v]", u, before, after)
	}
	// A commit replaces the entry, metadata included.
	if err := s.Commit(ctx, k, 4); err != nil {
		t.Fatal(err)
	}
	list, _ = s.List(ctx, offsets.Filter{Consumer: "g", Topic: "t"})
	if list[0].Offset != 4 || list[0].Metadata != "" {
		t.Errorf("after Commit: %+v, want offset 4 and no metadata", list[0])
	}
}

func testInvalidInput(t *testing.T, s offsets.Store) {
	tests := []struct {
		name   string
		key    offsets.Key
		offset int64
	}{
		{"negative offset", key("c", "t", 0), -1},
		{"empty consumer", key("", "t", 0), 0},
		{"empty topic", key("c", "", 0), 0},
		{"negative partition", key("c", "t", -1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Commit(ctx, tt.key, tt.offset); !errors.Is(err, offsets.ErrInvalid) {
				t.Errorf("Commit: err = %v, want ErrInvalid", err)
			}
			err := s.CommitEntries(ctx, []offsets.Entry{{Key: key("ok", "t", 0), Offset: 1}, {Key: tt.key, Offset: tt.offset}})
			if !errors.Is(err, offsets.ErrInvalid) {
				t.Errorf("CommitEntries: err = %v, want ErrInvalid", err)
			}
			if tt.offset >= 0 {
				if _, err := s.Committed(ctx, tt.key); !errors.Is(err, offsets.ErrInvalid) {
					t.Errorf("Committed: err = %v, want ErrInvalid", err)
				}
			}
			mustEmpty(t, s)
		})
	}
	if _, err := s.Delete(ctx, offsets.Filter{}); !errors.Is(err, offsets.ErrInvalid) {
		t.Errorf("Delete(Filter{}): err = %v, want ErrInvalid", err)
	}
}

// seed commits a small grid of offsets in a scrambled order and returns
// the keys sorted as List must return them.
func seed(t *testing.T, s offsets.Store) []offsets.Key {
	t.Helper()
	keys := []offsets.Key{
		key("B", "x", 0), key("a", "x", 10), key("a", "x", 2), key("a", "y", 0),
		key("b", "x", 1), key("b", "y", 0), key("a", "x", 0), key("b", "x", 0),
	}
	for i, k := range keys {
		if err := s.Commit(ctx, k, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Byte order: "B" < "a" < "b"; partitions numerically.
	return []offsets.Key{
		key("B", "x", 0), key("a", "x", 0), key("a", "x", 2), key("a", "x", 10),
		key("a", "y", 0), key("b", "x", 0), key("b", "x", 1), key("b", "y", 0),
	}
}

func keysOf(list []offsets.Entry) []offsets.Key {
	var keys []offsets.Key
	for _, e := range list {
		keys = append(keys, e.Key)
	}
	return keys
}

func filtered(keys []offsets.Key, f offsets.Filter) []offsets.Key {
	var out []offsets.Key
	for _, k := range keys {
		if (f.Consumer == "" || f.Consumer == k.Consumer) && (f.Topic == "" || f.Topic == k.Topic) &&
			(len(f.Partitions) == 0 || slices.Contains(f.Partitions, k.Partition)) {
			out = append(out, k)
		}
	}
	return out
}

var filters = []offsets.Filter{
	{Consumer: "a"}, {Topic: "x"}, {Consumer: "b", Topic: "y"}, {Consumer: "nobody"}, {Topic: "nothing"},
	{Consumer: "a", Topic: "x", Partitions: []int32{0, 10}}, {Topic: "x", Partitions: []int32{1}}, {Consumer: "a", Topic: "x", Partitions: []int32{5}},
}

func testList(t *testing.T, s offsets.Store) {
	all := seed(t, s)
	for _, f := range append([]offsets.Filter{{}}, filters...) {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			list, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := keysOf(list), filtered(all, f); !slices.Equal(got, want) {
				t.Errorf("List(%+v) = %v, want %v", f, got, want)
			}
			for _, e := range list {
				if e.UpdatedAt.IsZero() {
					t.Errorf("%v: zero UpdatedAt", e.Key)
				}
			}
		})
	}
}

func testDelete(t *testing.T, s offsets.Store) {
	for _, f := range filters {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			all := seed(t, s)
			t.Cleanup(func() { s.Delete(ctx, offsets.Filter{Topic: "x"}); s.Delete(ctx, offsets.Filter{Topic: "y"}) })
			gone := filtered(all, f)
			n, err := s.Delete(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(gone) {
				t.Errorf("Delete(%+v) = %d, want %d", f, n, len(gone))
			}
			list, err := s.List(ctx, offsets.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var want []offsets.Key
			for _, k := range all {
				if !slices.Contains(gone, k) {
					want = append(want, k)
				}
			}
			if got := keysOf(list); !slices.Equal(got, want) {
				t.Errorf("after Delete(%+v): %v, want %v", f, got, want)
			}
		})
	}
}

func testCanceledContext(t *testing.T, s offsets.Store) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	k := key("c", "t", 0)
	if err := s.Commit(cctx, k, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit: err = %v, want context.Canceled", err)
	}
	if err := s.CommitMany(cctx, map[offsets.Key]int64{k: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("CommitMany: err = %v, want context.Canceled", err)
	}
	if _, err := s.Committed(cctx, k); !errors.Is(err, context.Canceled) {
		t.Errorf("Committed: err = %v, want context.Canceled", err)
	}
	if _, err := s.List(cctx, offsets.Filter{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List: err = %v, want context.Canceled", err)
	}
	if _, err := s.Delete(cctx, offsets.Filter{Consumer: "c"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete: err = %v, want context.Canceled", err)
	}
	mustEmpty(t, s)
}

func testConcurrent(t *testing.T, s offsets.Store) {
	const goroutines, commits = 8, 50 // small: each may be an fsync
	shared := key("shared", "t", 0)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			own := key(fmt.Sprintf("c%d", g), "t", int32(g))
			for i := range int64(commits) {
				if err := s.Commit(ctx, own, i+1); err != nil {
					errs <- err
					return
				}
				if i%10 != 0 {
					continue
				}
				if err := s.Commit(ctx, shared, int64(g)); err != nil {
					errs <- err
					return
				}
				if i%20 == 0 {
					if _, err := s.List(ctx, offsets.Filter{Topic: "t"}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := range goroutines {
		mustCommitted(t, s, key(fmt.Sprintf("c%d", g), "t", int32(g)), commits)
	}
	if got, err := s.Committed(ctx, shared); err != nil || got < 0 || got >= goroutines {
		t.Errorf("shared key = %d, %v: want one goroutine's value", got, err)
	}
}

func testClosed(t *testing.T, s offsets.Store) {
	k := key("c", "t", 0)
	if err := s.Commit(ctx, k, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if err := s.Commit(ctx, k, 2); !errors.Is(err, offsets.ErrClosed) {
		t.Errorf("Commit after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Committed(ctx, k); !errors.Is(err, offsets.ErrClosed) {
		t.Errorf("Committed after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.List(ctx, offsets.Filter{}); !errors.Is(err, offsets.ErrClosed) {
		t.Errorf("List after Close: err = %v, want ErrClosed", err)
	}
}
