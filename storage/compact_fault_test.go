package storage

import (
	"context"
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

// compactTemplate is a cleanly closed compacted partition whose next
// compaction has everything to do: dirty segments superseding records of
// cleaned ones, cleaned segments to merge, tombstones past
// DeleteRetention, and new tombstones to keep. Everything in it is
// durable, so Crash copies it.
type compactTemplate struct {
	mem  *vfs.MemFS
	opts func(fsys vfs.FS) *Options
	recs []batch.Record
	want []int64      // the offsets a fault-free compaction keeps
	st   CompactStats // what it did
}

// makeCompactTemplate makes the template with keys keys, cleaned with a
// key map of buffer bytes (0: the default).
func makeCompactTemplate(t *testing.T, keys, buffer int) compactTemplate {
	k := newKVLog(t, func(o *Options) { o.SegmentBytes = 1200; o.IndexInterval = 64; o.CleanerBufferBytes = buffer })
	k.put("t1=1", "t2=1", "t3=1")
	k.putN(100, keys, 6)
	k.put("t1=", "t2=")
	k.putN(160, keys, 6)
	k.compact() // first sees the tombstones of t1 and t2
	k.clock.Add(2 * time.Hour.Milliseconds())
	k.put("t3=")
	k.putN(250, keys, 5)
	if err := k.l.Close(); err != nil {
		t.Fatal(err)
	}
	k.l = nil
	now := k.clock.Load()
	c := compactTemplate{
		mem:  k.mem,
		recs: k.recs,
		opts: func(fsys vfs.FS) *Options {
			o := *k.o
			o.FS, o.Now = fsys, func() time.Time { return time.UnixMilli(now) }
			return &o
		},
	}
	ref := mustOpen(t, "/p", c.opts(c.mem.Crash(vfs.CrashOptions{})))
	defer ref.Close()
	var err error
	if c.st, err = ref.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.want = readChecked(t, ref, 0, c.recs)
	return c
}

// checkAfterFault opens the partition on fsys and checks what a fault
// during a compaction may leave: the records as appended at their
// offsets, every one the fault-free compaction keeps (every key's newest
// among them), every one at or after the cleaned point; and a compaction
// then ends where the fault-free one did.
func (c compactTemplate) checkAfterFault(t *testing.T, what string, fsys vfs.FS) {
	t.Helper()
	l, err := Open("/p", c.opts(fsys))
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer l.Close()
	if l.Head() != int64(len(c.recs)) {
		t.Fatalf("%s: head %d, want %d", what, l.Head(), len(c.recs))
	}
	got := readChecked(t, l, 0, c.recs)
	for _, o := range c.want {
		if _, ok := slices.BinarySearch(got, o); !ok {
			t.Fatalf("%s: offset %d, kept by a fault-free compaction, is gone", what, o)
		}
	}
	cleaned := l.CleanerStats().CleanedTo
	for o := cleaned; o < l.Head(); o++ {
		if _, ok := slices.BinarySearch(got, o); !ok {
			t.Fatalf("%s: offset %d, after the cleaned point %d, is gone", what, o, cleaned)
		}
	}
	if names, _ := fsys.ReadDir("/p"); slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, cleanedSuffix) }) {
		t.Fatalf("%s: cleaned files left after Open: %v", what, names)
	}
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatalf("%s: compact after recovery: %v", what, err)
	}
	if again := readChecked(t, l, 0, c.recs); !slices.Equal(again, c.want) {
		t.Fatalf("%s: a compaction after recovery keeps %v\nthe fault-free one %v", what, again, c.want)
	}
}

// TestCompact_FaultAtEveryOperation fails each file-system operation of a
// compaction in turn (every kind counted, once or for good, writes whole
// or half-written) and, at that moment, also cuts the power. Reopening
// the disk as the failed process left it, and as the power loss left
// it, must find no record the fault-free compaction keeps lost, none at
// or after the cleaned point lost, nothing invented, and a compaction
// must then end where the fault-free one did. While the log stays open
// after a failure that is not sticky, it reads the same.
func TestCompact_FaultAtEveryOperation(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	c := makeCompactTemplate(t, 8, 0)
	if st := c.st; st.Passes != 1 || st.SegmentsAfter >= st.Segments || st.TombstonesRemoved == 0 || st.RecordsRemoved <= st.TombstonesRemoved {
		t.Fatalf("the template's compaction does not merge, remove tombstones and records: %+v", c.st)
	}
	multi := makeCompactTemplate(t, 16, minCleanerBuffer)
	if multi.st.Passes < 2 {
		t.Fatalf("the multi-pass template takes %d passes", multi.st.Passes)
	}
	modes := append(slices.Clone(faultModes), struct {
		name       string
		sticky     bool
		shortWrite bool
	}{"sticky-multipass", true, false})
	for _, mode := range modes {
		c := c
		if mode.name == "sticky-multipass" {
			c = multi
		}
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			injected := 0
			for i := 0; ; i++ {
				if i > maxFaultOps {
					t.Fatalf("the compaction did not finish within %d operations", maxFaultOps)
				}
				mem := c.mem.Crash(vfs.CrashOptions{}) // a copy
				var armed atomic.Bool
				kinds := vfs.AllOps
				switch {
				case mode.shortWrite:
					kinds = vfs.OpWrite // the other operations fail as in the modes without
				case mode.name == "sticky-multipass":
					kinds = vfs.DefaultOps // reads fail as in the one-pass modes
				}
				faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{
					FailAt: i, Sticky: mode.sticky, ShortWrite: mode.shortWrite,
					Kinds: kinds, Filter: func(vfs.Op) bool { return armed.Load() },
				})
				l := mustOpen(t, "/p", c.opts(faulty))
				armed.Store(true)
				_, cerr := l.Compact(context.Background())
				done := faulty.Ops() <= i
				switch {
				case done && cerr != nil:
					t.Fatalf("fault %d: no fault injected, yet Compact failed: %v", i, cerr)
				case cerr != nil && !errors.Is(cerr, vfs.ErrInjected):
					t.Fatalf("fault %d: Compact failed with %v, which does not wrap the injected fault", i, cerr)
				case cerr != nil && errors.Is(cerr, ErrCorrupt):
					t.Fatalf("fault %d: Compact reports an I/O error as corruption: %v", i, cerr)
				}
				if !done {
					injected++
				}
				if !mode.sticky && l.Err() == nil && cerr != nil {
					// The log goes on, and so does its compaction.
					armed.Store(false)
					readChecked(t, l, 0, c.recs)
					if _, err := l.Compact(context.Background()); err != nil {
						t.Fatalf("fault %d (Compact: %v): compact again: %v", i, cerr, err)
					}
					if got := readChecked(t, l, 0, c.recs); !slices.Equal(got, c.want) {
						t.Fatalf("fault %d (Compact: %v): compacting again keeps %v\nthe fault-free one %v", i, cerr, got, c.want)
					}
				}
				crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
				l.Close()
				what := fmt.Sprintf("fault at op %d (Compact: %v)", i, cerr)
				if mode.name != "sticky-multipass" { // the one-pass modes cover it
					c.checkAfterFault(t, what+": reopen", mem)
				}
				c.checkAfterFault(t, what+": power loss", crashed)
				if done {
					t.Logf("%d runs with a fault injected", injected)
					if injected < 20 {
						t.Fatalf("only %d operations in the compaction", injected)
					}
					return
				}
			}
		})
	}
}

// TestOpen_CleanerStates builds, by failing one operation of a
// compaction, each state of the swap that a crash can leave, and checks
// what Open does with it: roll back before the commit, complete after.
func TestOpen_CleanerStates(t *testing.T) {
	c := makeCompactTemplate(t, 8, 0)
	for _, tc := range []struct {
		name     string
		fail     func(op vfs.Op) bool
		complete bool // the first swap is done after Open
	}{
		{"cleaned files written, not committed", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRename && strings.HasSuffix(op.NewName, cleanerFile)
		}, false},
		{"committed, nothing renamed", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRename && strings.HasSuffix(op.Name, ".index"+cleanedSuffix)
		}, true},
		{"committed, indexes renamed, not the log", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRename && strings.HasSuffix(op.Name, ".log"+cleanedSuffix)
		}, true},
		{"committed, renamed, merged segments not removed", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRemove && strings.HasSuffix(op.Name, ".log")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := c.mem.Crash(vfs.CrashOptions{})
			faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{Sticky: true, Kinds: vfs.AllOps, Filter: tc.fail})
			l := mustOpen(t, "/p", c.opts(faulty))
			segments := l.SegmentCount()
			_, err := l.Compact(context.Background())
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("Compact = %v, want the injected fault", err)
			}
			names, _ := mem.ReadDir("/p")
			l.Close()
			st, _ := readCleaner(mem, "/p")
			t.Logf("left: %v; CLEANER swap [%d, %d)", slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, cleanedSuffix) }), st.swapBase, st.swapEnd)
			if committed := st.swapEnd > st.swapBase; committed != tc.complete {
				t.Fatalf("CLEANER names a swap: %t, want %t", committed, tc.complete)
			}
			l2 := mustOpen(t, "/p", c.opts(mem))
			if merged := l2.SegmentCount() < segments; merged != tc.complete {
				t.Fatalf("first group swapped: %t, want %t (%d segments, %d before)", merged, tc.complete, l2.SegmentCount(), segments)
			}
			if st, _ := readCleaner(mem, "/p"); st.swapEnd > st.swapBase {
				t.Fatalf("Open left the swap record [%d, %d)", st.swapBase, st.swapEnd)
			}
			l2.Close()
			c.checkAfterFault(t, tc.name, mem)
		})
	}
}
