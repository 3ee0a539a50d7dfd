package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// segmentBases lists the .log files in dir.
func segmentBases(t *testing.T, fsys vfs.FS, dir string) []int64 {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		if base, ok := SegmentBase(n); ok && strings.HasSuffix(n, ".log") {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases
}

// fiveSegments is a log of 100 records in segments of about 20 records.
func fiveSegments(t *testing.T, o *Options) *Log {
	t.Helper()
	l := mustOpen(t, "/p", o)
	for i := 0; i < 100; i += 4 {
		if _, err := l.Append(recs(i, 4), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() < 4 {
		t.Fatalf("%d segments; want several", l.SegmentCount())
	}
	return l
}

func TestLog_DeleteRecords(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, SegmentBytes: 1 << 10, IndexInterval: 128, SyncInterval: time.Hour}
	l := fiveSegments(t, o)
	bases := segmentBases(t, mem, "/p")
	mid := bases[2] + 3 // inside the third segment

	start, err := l.DeleteRecords(mid)
	if err != nil || start != mid || l.StartOffset() != mid {
		t.Fatalf("DeleteRecords(%d) = %d, %v; start %d", mid, start, err, l.StartOffset())
	}
	if got := segmentBases(t, mem, "/p"); !slices.Equal(got, bases[2:]) {
		t.Errorf("segments %v after DeleteRecords(%d); want %v (those wholly below deleted)", got, mid, bases[2:])
	}
	// Below the start: out of range, as below retention's start.
	var oor *OutOfRangeError
	for _, from := range []int64{0, bases[2], mid - 1} {
		_, _, err := l.NewReader(from).TryNext()
		if !errors.As(err, &oor) || oor.Start != mid {
			t.Errorf("read at %d: %v; want an OutOfRangeError with start %d", from, err, mid)
		}
	}
	checkRecords(t, l, mid) // the rest of the segment that holds it is served from mid
	if off, _ := l.OffsetForTime(time.UnixMilli(0)); off != mid {
		t.Errorf("OffsetForTime(0) = %d; want the start %d", off, mid)
	}

	for _, tc := range []struct {
		name   string
		offset int64
		start  int64
		err    bool
	}{
		{"below the start changes nothing", 5, mid, false},
		{"at the start changes nothing", mid, mid, false},
		{"past the head", l.Head() + 1, mid, true},
		{"negative", -1, mid, true},
	} {
		start, err := l.DeleteRecords(tc.offset)
		if start != tc.start || (err != nil) != tc.err || tc.err && !errors.Is(err, ErrOutOfRange) {
			t.Errorf("%s: DeleteRecords(%d) = %d, %v; want %d, error %v", tc.name, tc.offset, start, err, tc.start, tc.err)
		}
	}

	// The start survives a reopen; a crash between LOGSTART and the
	// segments' removal is finished by Open.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", o)
	if l.StartOffset() != mid {
		t.Fatalf("start %d after reopen; want %d", l.StartOffset(), mid)
	}
	checkRecords(t, l, mid)

	// Up to the head: nothing left to read, the active segment kept.
	head := l.Head()
	if start, err := l.DeleteRecords(head); err != nil || start != head {
		t.Fatalf("DeleteRecords(head %d) = %d, %v", head, start, err)
	}
	if got := segmentBases(t, mem, "/p"); len(got) != 1 {
		t.Errorf("segments %v after DeleteRecords(head); want the active one alone", got)
	}
	if _, err := l.Append(recs(int(head), 2), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, l, head)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Verify("/p", &VerifyOptions{FS: mem})
	if err != nil || !r.OK() || r.Start != head || len(r.Notes) > 0 {
		t.Errorf("Verify: %+v, %v; want OK from %d, no notes", r, err, head)
	}
}

// TestLog_DeleteRecords_PowerLoss fails the i-th file operation of a
// DeleteRecords and then cuts the power: the log reopens with the old
// start or the new one, never anything else, and with the new one
// whenever DeleteRecords returned it.
func TestLog_DeleteRecords_PowerLoss(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		var armed atomic.Bool // count DeleteRecords' operations only
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, Filter: func(vfs.Op) bool { return armed.Load() }})
		o := &Options{FS: faulty, Durability: Fsync, SegmentBytes: 1 << 10, IndexInterval: 128, SyncInterval: time.Hour}
		l := fiveSegments(t, o)
		armed.Store(true)
		const to = 50
		start, derr := l.DeleteRecords(to)
		done := faulty.Ops() <= i
		if done && derr != nil {
			t.Fatalf("no fault injected, DeleteRecords: %v", derr)
		}
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
		l.Close()
		l2, err := Open("/p", &Options{FS: crashed, SegmentBytes: 1 << 10, IndexInterval: 128, SyncInterval: time.Hour})
		if err != nil {
			t.Fatalf("fault at op %d: reopen: %v", i, err)
		}
		if got := l2.StartOffset(); derr == nil && got != to || got != 0 && got != to {
			t.Fatalf("fault at op %d: DeleteRecords returned %d, %v; start %d after power loss", i, start, derr, got)
		}
		checkRecords(t, l2, l2.StartOffset())
		if l2.Head() != 100 {
			t.Fatalf("fault at op %d: head %d", i, l2.Head())
		}
		l2.Close()
		if done {
			if i < 3 {
				t.Fatalf("DeleteRecords finished after only %d operations", i)
			}
			return
		}
	}
}

func TestLog_DeleteRecords_RetentionKeepsStart(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, SegmentBytes: 1 << 10, IndexInterval: 128, SyncInterval: time.Hour, RetentionBytes: 3 << 10}
	l := fiveSegments(t, o)
	defer l.Close()
	bases := segmentBases(t, mem, "/p")
	if _, err := l.DeleteRecords(bases[0] + 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	segs := segmentBases(t, mem, "/p")
	if l.StartOffset() != max(segs[0], bases[0]+2) {
		t.Errorf("start %d; segments %v", l.StartOffset(), segs)
	}
	// Retention never moves the start back below DeleteRecords'.
	mid := segs[0] + 1
	if _, err := l.DeleteRecords(mid); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Retain(); err != nil || l.StartOffset() < mid {
		t.Errorf("Retain: %v; start %d, want at least %d", err, l.StartOffset(), mid)
	}
}

func TestLog_DeleteRecords_DamagedLogStart(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	if _, err := l.Append(recs(0, 10), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := vfs.ReadFile(mem, "/p/LOGSTART")
	b[8] ^= 1
	if err := vfs.WriteFileAtomic(mem, "/p", "LOGSTART", b); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := Open("/p", &Options{FS: mem}); !errors.As(err, &ce) || !strings.HasSuffix(ce.File, "LOGSTART") {
		t.Fatalf("Open with a damaged LOGSTART: %v; want a CorruptError naming it", err)
	}
	if r, err := Verify("/p", &VerifyOptions{FS: mem}); err != nil || r.OK() || r.Fenced == "" {
		t.Errorf("Verify: %+v, %v; want the partition refused", r, err)
	}
	// Repair moves it aside: the partition opens from its first segment.
	if _, err := Repair("/p", &RepairOptions{FS: mem}); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", &Options{FS: mem})
	defer l.Close()
	if l.StartOffset() != 0 || l.Head() != 10 {
		t.Errorf("after repair: start %d, head %d; want 0, 10", l.StartOffset(), l.Head())
	}
	checkRecords(t, l, 0)
}

func TestLog_MaxTimestamp(t *testing.T) {
	ts := func(ms ...int64) [][]int64 { return [][]int64{ms} }
	for _, tc := range []struct {
		name    string
		batches [][]int64 // each a batch of records with these timestamps
		start   int64     // DeleteRecords to this first
		offset  int64
		ms      int64
		found   bool
	}{
		{"empty", nil, 0, -1, -1, false},
		{"one batch each: 3000, 9000, 5000", [][]int64{{3000}, {9000}, {5000}}, 0, 1, 9000, true},
		{"inside one batch", ts(3000, 9000, 5000), 0, 1, 9000, true},
		{"ties: the first", [][]int64{{1000}, {7000}, {2000}, {7000}}, 0, 1, 7000, true},
		{"the last", [][]int64{{1000}, {2000}, {3000}}, 0, 2, 3000, true},
		{"the largest below the start is not kept", [][]int64{{1000}, {9000}, {5000}, {4000}}, 2, 2, 5000, true},
		{"all deleted", [][]int64{{1000}, {9000}}, 2, -1, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, "/p", &Options{FS: vfs.NewMem(), TimestampAfterMax: NoTimestampLimit, TimestampBeforeMax: NoTimestampLimit})
			defer l.Close()
			n := 0
			for _, b := range tc.batches {
				rs := make([]batch.Record, len(b))
				for i, ms := range b {
					rs[i] = batch.Record{Value: value(n), Timestamp: time.UnixMilli(ms)}
					n++
				}
				if _, err := l.Append(rs, DefaultDurability); err != nil {
					t.Fatal(err)
				}
			}
			if tc.start > 0 {
				if _, err := l.DeleteRecords(tc.start); err != nil {
					t.Fatal(err)
				}
			}
			off, ms, found, err := l.MaxTimestamp()
			if err != nil || off != tc.offset || ms != tc.ms || found != tc.found {
				t.Errorf("MaxTimestamp = %d, %d, %v, %v; want %d, %d, %v", off, ms, found, err, tc.offset, tc.ms, tc.found)
			}
		})
	}
}

// TestLog_MaxTimestamp_Segments: across many segments and sparse time
// index entries, the answer is the first record with the largest
// timestamp, as reading every record says.
func TestLog_MaxTimestamp_Segments(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	l := mustOpen(t, "/p", &Options{FS: vfs.NewMem(), SegmentBytes: 2 << 10, IndexInterval: 256,
		TimestampAfterMax: NoTimestampLimit, TimestampBeforeMax: NoTimestampLimit})
	defer l.Close()
	wantOff, wantMs := int64(-1), int64(-1)
	for n := 0; n < 400; {
		k := 1 + rng.IntN(5)
		rs := make([]batch.Record, k)
		for i := range rs {
			ms := 1_000_000 + rng.Int64N(50_000)
			rs[i] = batch.Record{Value: fmt.Appendf(nil, "v%d", n+i), Timestamp: time.UnixMilli(ms)}
			if ms > wantMs {
				wantOff, wantMs = int64(n+i), ms
			}
		}
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	off, ms, found, err := l.MaxTimestamp()
	if err != nil || !found || off != wantOff || ms != wantMs {
		t.Fatalf("MaxTimestamp = %d, %d, %v, %v; want %d, %d", off, ms, found, err, wantOff, wantMs)
	}
}

// BenchmarkLog_MaxTimestamp: ListOffsets MAX_TIMESTAMP through the time
// index against reading every record, on 200,000 records in 1 MiB
// segments.
func BenchmarkLog_MaxTimestamp(b *testing.B) {
	l := mustOpen(b, b.TempDir(), &Options{SegmentBytes: 1 << 20, TimestampAfterMax: NoTimestampLimit, TimestampBeforeMax: NoTimestampLimit})
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	rs := make([]batch.Record, 100)
	for n := 0; n < 200_000; n += len(rs) {
		for i := range rs {
			rs[i] = batch.Record{Value: value(n + i), Timestamp: time.UnixMilli(1_000_000 + rng.Int64N(1_000_000))}
		}
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d segments", l.SegmentCount())
	want, _, _, _ := l.scanMaxTimestamp(0)
	for _, bc := range []struct {
		name string
		fn   func() (int64, int64, bool, error)
	}{
		{"index", l.MaxTimestamp},
		{"scan", func() (int64, int64, bool, error) { return l.scanMaxTimestamp(l.StartOffset()) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if off, _, _, err := bc.fn(); err != nil || off != want {
					b.Fatalf("offset %d, %v; want %d", off, err, want)
				}
			}
		})
	}
}
