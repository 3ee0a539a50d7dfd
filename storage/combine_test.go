package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// TestAppend_CombinedAppendersGetTheirOwn: appenders that combine into one
// batch (combine.go) each get their own first offset, their records dense
// and in their order from it, and their own error: a call refused for a
// timestamp too far ahead refuses only itself, on both write paths.
func TestAppend_CombinedAppendersGetTheirOwn(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    func(dir string) *Options
	}{
		{"mapped", func(string) *Options { return &Options{SegmentBytes: 256 << 10} }},
		{"write(2)", func(string) *Options { return &Options{SegmentBytes: 256 << 10, FS: vfs.WithoutMapping(vfs.OS())} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, tc.o(dir))
			defer l.Close()
			const goroutines, calls_ = 16, 200
			type call struct {
				first int64
				vals  [][]byte
			}
			var mu sync.Mutex
			var got []call
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for c := range calls_ {
						n := 1 + (g+c)%5
						recs := make([]batch.Record, n)
						vals := make([][]byte, n)
						for i := range recs {
							vals[i] = fmt.Appendf(nil, "g%02d-c%03d-r%d", g, c, i)
							recs[i].Value = vals[i]
						}
						refused := c%17 == 3
						if refused {
							recs[n-1].Timestamp = time.Now().Add(48 * time.Hour) // past TimestampAfterMax
						}
						first, err := l.Append(recs, InOS)
						if refused {
							if !errors.Is(err, ErrInvalidTimestamp) {
								t.Errorf("g%d call %d: %v, want ErrInvalidTimestamp", g, c, err)
							}
							continue
						}
						if err != nil {
							t.Errorf("g%d call %d: %v", g, c, err)
							return
						}
						mu.Lock()
						got = append(got, call{first, vals})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			stored := map[int64][]byte{}
			for rec, err := range l.Records(0) {
				if err != nil {
					t.Fatal(err)
				}
				stored[rec.Offset] = bytes.Clone(rec.Value)
			}
			n := 0
			for _, c := range got {
				for i, v := range c.vals {
					if s := stored[c.first+int64(i)]; !bytes.Equal(s, v) {
						t.Fatalf("offset %d: %q, want %q (record %d of the call that got %d)", c.first+int64(i), s, v, i, c.first)
					}
					n++
				}
			}
			if int64(n) != l.Head() || len(stored) != n {
				t.Fatalf("%d records acknowledged, %d stored, head %d", n, len(stored), l.Head())
			}
			rounds, calls := combined(l)
			if calls != goroutines*calls_ {
				t.Errorf("%d Appends in %d rounds: want all %d", calls, rounds, goroutines*calls_)
			}
			t.Logf("%d Appends in %d rounds", calls, rounds)
		})
	}
}

// combined returns how many rounds the log's combiner took and how many
// Appends were in them.
func combined(l *Log) (rounds, calls int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.comb.rounds, l.comb.calls
}

// TestAppend_WaitingAppendersCombine: Appends that queue while the log is
// held are taken in one round, as one batch, each with its own offsets.
func TestAppend_WaitingAppendersCombine(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	const n = 16
	l.mu.Lock() // as an append in progress would
	firsts := make([]int64, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			var err error
			if firsts[g], err = l.Append(recs(g, 1), InOS); err != nil {
				t.Error(err)
			}
		})
	}
	for queued := 0; queued < n; { // one leads (waiting for mu), the others wait for it
		l.comb.mu.Lock()
		queued = len(l.comb.waiting)
		l.comb.mu.Unlock()
		runtime.Gosched()
	}
	l.mu.Unlock()
	wg.Wait()
	if rounds, calls := combined(l); rounds != 1 || calls != n {
		t.Fatalf("%d Appends in %d rounds, want %d in 1", calls, rounds, n)
	}
	batches := 0
	s := l.active()
	var fr batchReader
	fr.reset(s.log, 0, s.size.Load())
	for {
		if _, _, _, err := fr.next(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		batches++
	}
	stored := map[int64][]byte{}
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		stored[rec.Offset] = rec.Value
	}
	seen := map[int64]bool{}
	for g, first := range firsts {
		if !bytes.Equal(stored[first], value(g)) || seen[first] {
			t.Fatalf("appender %d got offset %d, which holds %q", g, first, stored[first])
		}
		seen[first] = true
	}
	if batches != 1 || l.Head() != n {
		t.Fatalf("%d batches, head %d: want the round as one batch of %d", batches, l.Head(), n)
	}
}
