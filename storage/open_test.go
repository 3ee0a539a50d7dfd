package storage

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// syncLog records the fsyncs (of files and directories) made through it.
type syncLog struct {
	mu    sync.Mutex
	files []string // base names of the files and directories synced
}

func (s *syncLog) fs(under vfs.FS) vfs.FS {
	return vfs.NewFaulty(under, vfs.FaultyOptions{FailAt: -1, Kinds: vfs.OpSync | vfs.OpSyncDir, Filter: func(op vfs.Op) bool {
		s.mu.Lock()
		s.files = append(s.files, filepath.Base(op.Name))
		s.mu.Unlock()
		return false
	}})
}

// segmentSyncs returns the synced names that are segment files.
func (s *syncLog) segmentSyncs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.files {
		if _, ok := SegmentBase(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func (s *syncLog) reset() {
	s.mu.Lock()
	s.files = nil
	s.mu.Unlock()
}

// TestLog_Open_CleanSkipsSyncs: after a clean Close, a reopen and a close
// with nothing appended between fsync no segment file (the clean Close
// made them durable, and nothing changed them since); after an unclean
// stop, Open syncs the active segment and its indexes, and so does Close
// after an append.
func TestLog_Open_CleanSkipsSyncs(t *testing.T) {
	mem := vfs.NewMem()
	var sl syncLog
	o := &Options{FS: sl.fs(mem), Durability: InOS, SegmentBytes: 2 << 10, IndexInterval: 256}
	l := mustOpen(t, "/p", o)
	for n := 0; n < 100; n += 5 {
		if _, err := l.Append(recs(n, 5), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	sl.reset()
	l = mustOpen(t, "/p", o)
	if r := l.Recovery(); !r.Clean || r.Validated != 0 {
		t.Fatalf("recovery %+v, want clean", r)
	}
	if got := sl.segmentSyncs(); len(got) != 0 {
		t.Errorf("clean open fsync'd segment files %v, want none", got)
	}
	checkRecords(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sl.segmentSyncs(); len(got) != 0 {
		t.Errorf("clean open and close with nothing appended fsync'd segment files %v, want none", got)
	}

	// An append after a clean open: Close syncs the active segment.
	l = mustOpen(t, "/p", o)
	sl.reset()
	if _, err := l.Append(recs(100, 1), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	active := SegmentFile(l.segments()[len(l.segments())-1].base)
	if got := sl.segmentSyncs(); !contains(got, active) {
		t.Errorf("close after an append fsync'd %v, want %s among them", got, active)
	}

	// An unclean stop (no Close): Open syncs the active segment.
	l = mustOpen(t, "/p", o)
	if _, err := l.Append(recs(101, 1), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	crashed := mem.Crash(vfs.CrashOptions{}) // unsynced bytes lost: 101 was InOS
	l.Close()
	sl.reset()
	o.FS = sl.fs(crashed)
	l = mustOpen(t, "/p", o)
	defer l.Close()
	if r := l.Recovery(); r.Clean {
		t.Fatalf("recovery %+v after a power loss, want unclean", r)
	}
	if got := sl.segmentSyncs(); !contains(got, active) {
		t.Errorf("open after a power loss fsync'd %v, want %s among them", got, active)
	}
	checkRecords(t, l, 0)
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// TestLog_Open_CleanThenPowerLoss: a partition opened after a clean
// shutdown (so Open skipped its syncs) keeps every acknowledged record
// through a power loss at each step after: right after Open, after fsync'd
// appends, after appends that rolled segments, and after a clean Close with
// nothing appended. The power loss tears unsynced tails page by page, a
// lost page reading as zeros.
func TestLog_Open_CleanThenPowerLoss(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for _, tc := range []struct {
		name    string
		appends int  // fsync'd appends of 3 records after the clean reopen
		inOS    int  // then InOS appends, not acknowledged as durable
		close   bool // then a clean Close
	}{
		{"right after open", 0, 0, false},
		{"after fsync'd appends", 4, 0, false},
		{"after appends that rolled", 40, 0, false},
		{"after unsynced appends", 0, 5, false},
		{"after fsync'd and unsynced appends", 3, 5, false},
		{"after a clean close of an untouched log", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 8 {
				mem := vfs.NewMem()
				o := &Options{FS: mem, Durability: Fsync, SegmentBytes: 2 << 10, IndexInterval: 256}
				l := mustOpen(t, "/p", o)
				n := 0
				for ; n < 30; n += 3 {
					if _, err := l.Append(recs(n, 3), DefaultDurability); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, "/p", o)
				if !l.Recovery().Clean {
					t.Fatalf("reopen %+v, want clean", l.Recovery())
				}
				for range tc.appends {
					if _, err := l.Append(recs(n, 3), DefaultDurability); err != nil {
						t.Fatal(err)
					}
					n += 3
				}
				acked := n
				for range tc.inOS {
					if _, err := l.Append(recs(n, 1), InOS); err != nil {
						t.Fatal(err)
					}
					n++
				}
				if tc.close {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(round)))
				crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: round%2 == 1, Rand: rng})
				l.Close()
				l2 := mustOpen(t, "/p", &Options{FS: crashed, SegmentBytes: 2 << 10, IndexInterval: 256})
				if l2.Head() < int64(acked) {
					t.Fatalf("round %d: head %d after power loss, %d acknowledged", round, l2.Head(), acked)
				}
				checkRecords(t, l2, 0)
				if tc.close && !l2.Recovery().Clean {
					t.Errorf("round %d: recovery %+v after a clean close, want clean", round, l2.Recovery())
				}
				if err := l2.Close(); err != nil {
					t.Fatal(err)
				}
				// And once more: the recovered log reopens clean.
				l3 := mustOpen(t, "/p", &Options{FS: crashed, SegmentBytes: 2 << 10, IndexInterval: 256})
				if !l3.Recovery().Clean || l3.Head() != l2.Head() {
					t.Fatalf("round %d: second reopen %+v head %d, want clean at %d", round, l3.Recovery(), l3.Head(), l2.Head())
				}
				checkRecords(t, l3, 0)
				l3.Close()
			}
		})
	}
}

// TestLog_Open_ManySegments_Clean: a partition of many small segments
// reopens cleanly, its index lookups and records as before.
func TestLog_Open_ManySegments_Clean(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, Durability: InOS, SegmentBytes: 1 << 10, IndexInterval: 128}
	l := mustOpen(t, "/p", o)
	n := 0
	for l.SegmentCount() < 200 {
		if _, err := l.Append(recs(n, 2), DefaultDurability); err != nil {
			t.Fatal(err)
		}
		n += 2
	}
	segs, head := l.SegmentCount(), l.Head()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", o)
	defer l.Close()
	if r := l.Recovery(); !r.Clean || r.Segments != segs || r.RebuiltIndex != 0 || r.Validated != 0 {
		t.Fatalf("recovery %+v, want a clean open of %d segments", r, segs)
	}
	if l.Head() != head {
		t.Fatalf("head %d, want %d", l.Head(), head)
	}
	checkRecords(t, l, 0)
	for _, from := range []int64{0, 1, head / 3, head / 2, head - 1} {
		checkRecords(t, l, from)
	}
	if !strings.HasSuffix(l.segments()[0].path, SegmentFile(0)) {
		t.Fatalf("first segment %s", l.segments()[0].path)
	}
}
