package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// The tests in this file fail the i-th file-system operation (i = 0, 1,
// 2, … until a run injects no fault) under a workload, with every kind of
// operation counted (vfs.AllOps), a fault that is sticky (the disk went
// away) or not (one EIO), and writes that fail whole or half-written.

// faultModes are the ways an operation fails.
var faultModes = []struct {
	name       string
	sticky     bool
	shortWrite bool
}{
	{"once", false, false},
	{"once-short-write", false, true},
	{"sticky", true, false},
	{"sticky-short-write", true, true},
}

// maxFaultOps bounds the enumeration, in case a workload never ends.
const maxFaultOps = 5000

// faultOptions are the options of the fault workloads: small segments
// and indexes so that rolls, index entries and retention all happen.
func faultOptions(fsys vfs.FS) *Options {
	return &Options{
		FS:             fsys,
		SegmentBytes:   1 << 10,
		IndexInterval:  128,
		RetentionBytes: 2 << 10,
		SyncInterval:   time.Hour, // no background work: the workload drives everything
	}
}

// faultRun is what a workload was told.
type faultRun struct {
	acked   int64 // offsets below were acknowledged: they survive a reopen
	durable int64 // offsets below were acknowledged durable: they survive a power loss
	failed  error // the first failed append since the log last recovered
	// recovered counts the appends that succeeded after a failure (the
	// log recovered from it).
	recovered int
}

// runFaultWorkload appends 40 times (1–4 records each, every third with
// Fsync), syncs and runs retention now and then, and checks as it goes
// that a failed append leaves the log refusing appends with a sticky
// error until it recovers: after a failure it asks the log to Retry now
// and then (a fault that is gone, and a write rather than an fsync that
// failed, lets it recover), and goes on appending at the head once it
// does.
func runFaultWorkload(t *testing.T, l *Log) faultRun {
	t.Helper()
	var run faultRun
	next := int64(0)
	for step := range 40 {
		k := 1 + step%4
		d := InOS
		if step%3 == 0 {
			d = Fsync
		}
		if run.failed != nil {
			next = l.Head() // a failed call may have written some of its batches
		}
		off, err := l.Append(recs(int(next), k), d)
		switch {
		case err != nil && !errors.Is(err, vfs.ErrInjected) && (run.failed == nil || !errors.Is(err, ErrUnwritable)):
			t.Fatalf("step %d: append failed with %v, which does not wrap the injected fault", step, err)
		case err != nil:
			if l.Err() == nil {
				t.Fatalf("step %d: append failed with %v but Err() is nil", step, err)
			}
			if run.failed == nil {
				run.failed = err
			}
			if step%2 == 1 {
				l.Retry() // may fail: the fault may still be there, or be an fsync's
			}
			continue
		case run.failed != nil && l.Health().Failures == 0:
			t.Fatalf("step %d: append succeeded after one failed with %v, but Health says no failure", step, run.failed)
		case off != next:
			t.Fatalf("step %d: append returned offset %d, want %d", step, off, next)
		}
		if run.failed != nil {
			run.recovered++
			run.failed = nil
		}
		next += int64(k)
		run.acked = next
		if d == Fsync {
			run.durable = next
		}
		// Closed segments were fsync'd before the next one was created.
		run.durable = max(run.durable, l.active().base)
		if step%12 == 11 {
			if err := l.Sync(); err == nil {
				run.durable = run.acked
			} else if run.failed == nil && l.Err() == nil {
				t.Fatalf("step %d: Sync failed with %v but Err() is nil", step, err)
			}
		}
		if step%8 == 7 {
			l.Retain() // may fail; it must not lose what it keeps
		}
	}
	if run.failed == nil && l.Err() != nil && l.Health().Failures == 0 {
		t.Fatalf("no append failed, but Err() = %v", l.Err())
	}
	if run.failed != nil && l.Err() != nil {
		head := l.Head()
		if _, err := l.AppendBatch(mustBatch(t, recs(int(head), 1)), InOS); err == nil {
			if l.Health().Failures == 0 {
				t.Fatalf("AppendBatch succeeded after an append failed with %v", run.failed)
			}
			run.acked = head + 1 // the log recovered
		}
	}
	return run
}

// checkSurvivors opens the partition on fsys without faults and checks
// that it holds at least the offsets below want, and that what it holds
// from its start offset is value(offset) for every offset, densely.
func checkSurvivors(t *testing.T, what string, fsys vfs.FS, want int64) *Log {
	t.Helper()
	l, err := Open("/p", faultOptions(fsys))
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	if l.Head() < want {
		l.Close()
		t.Fatalf("%s: head %d, but offsets below %d were acknowledged", what, l.Head(), want)
	}
	checkRecords(t, l, l.StartOffset())
	return l
}

// TestLog_Faults_EveryOperation fails each operation of a workload that
// appends, rolls segments, syncs, runs retention and closes. A failed
// write is recovered from once the fault is gone (a failed fsync only by
// reopening); no acknowledged record is missing after reopening the disk as it is, and
// no fsync'd one after a power loss at the moment of the failure; the
// records present are exactly the ones appended, at their offsets.
func TestLog_Faults_EveryOperation(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for _, mode := range faultModes {
		t.Run(mode.name, func(t *testing.T) {
			injected, recovered := 0, 0
			for i := 0; ; i++ {
				if i > maxFaultOps {
					t.Fatalf("the workload did not finish within %d operations", maxFaultOps)
				}
				mem := vfs.NewMem()
				var armed atomic.Bool // count operations after Open only
				faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{
					FailAt: i, Sticky: mode.sticky, ShortWrite: mode.shortWrite,
					Kinds: vfs.AllOps, Filter: func(vfs.Op) bool { return armed.Load() },
				})
				l := mustOpen(t, "/p", faultOptions(faulty))
				armed.Store(true)
				run := runFaultWorkload(t, l)
				crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
				closeErr := l.Close()
				done := faulty.Ops() <= i
				if done && (run.failed != nil || closeErr != nil) {
					t.Fatalf("fault %d: no fault injected, yet append: %v, close: %v", i, run.failed, closeErr)
				}
				if !done {
					injected++
				}
				recovered += run.recovered

				what := fmt.Sprintf("fault at op %d (append error %v, close error %v): reopen", i, run.failed, closeErr)
				l2 := checkSurvivors(t, what, mem, run.acked)
				if _, err := l2.Append(recs(int(l2.Head()), 1), Fsync); err != nil {
					t.Fatalf("%s: append after reopen: %v", what, err)
				}
				checkRecords(t, l2, l2.StartOffset())
				l2.Close()
				checkSurvivors(t, fmt.Sprintf("fault at op %d (append error %v): power loss", i, run.failed), crashed, run.durable).Close()
				if done {
					t.Logf("%d runs with a fault injected", injected)
					if injected < 100 {
						t.Fatalf("only %d operations in the workload", injected)
					}
					if !mode.sticky && recovered == 0 {
						t.Fatalf("the log never recovered from a fault that went away")
					}
					t.Logf("%d appends succeeded after the log recovered from a fault", recovered)
					return
				}
			}
		})
	}
}

// openStates are partitions for TestOpen_FaultAtEveryOperation to open,
// each made on a MemFS whose contents are all durable, so that Crash
// copies it.
var openStates = []struct {
	name string
	make func(t *testing.T) *vfs.MemFS
}{
	{"new directory", func(t *testing.T) *vfs.MemFS {
		mem := vfs.NewMem()
		if err := mem.MkdirAll("/", 0o755); err != nil {
			t.Fatal(err)
		}
		return mem
	}},
	{"closed cleanly", func(t *testing.T) *vfs.MemFS {
		mem := vfs.NewMem()
		l := mustOpen(t, "/p", faultOptions(mem))
		appendN(t, l, 0, 60, InOS)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return mem
	}},
	{"after a power loss", func(t *testing.T) *vfs.MemFS {
		for seed := uint64(0); ; seed++ {
			mem := vfs.NewMem()
			l := mustOpen(t, "/p", faultOptions(mem))
			appendN(t, l, 0, 44, Fsync)
			appendN(t, l, 44, 3, InOS)
			crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(seed, 1))})
			l.Close()
			// Keep a state whose active segment has whole batches
			// followed by a torn tail.
			probe := mustOpen(t, "/p", faultOptions(crashed.Crash(vfs.CrashOptions{})))
			torn, kept := probe.Recovery().TornBytes, probe.active().size.Load()
			probe.Close()
			if torn > 0 && kept > 0 {
				return crashed
			}
		}
	}},
	{"damaged index of a closed segment", func(t *testing.T) *vfs.MemFS {
		mem := vfs.NewMem()
		l := mustOpen(t, "/p", faultOptions(mem))
		appendN(t, l, 0, 60, InOS)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		name := "/p/" + segmentName(0, ".index")
		b, err := mem.FileBytes(name)
		if err != nil || len(b) < offsetEntrySize {
			t.Fatalf("index %s: %d bytes, %v", name, len(b), err)
		}
		mem.SetFileBytes(name, b[:len(b)-3])
		return mem
	}},
	{"a compaction's swap committed, not done", func(t *testing.T) *vfs.MemFS {
		// Small segments, then a compaction that merges them (every
		// key is new: no record goes), its swap failing after the
		// commit; the power goes.
		mem := vfs.NewMem()
		o := faultOptions(mem)
		o.SegmentBytes, o.Compact = 300, true
		l := mustOpen(t, "/p", o)
		for i := range 40 {
			if _, err := l.Append([]batch.Record{{Key: fmt.Appendf(nil, "k%d", i), Value: value(i)}}, InOS); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		o.SegmentBytes = 1 << 10
		o.FS = vfs.NewFaulty(mem, vfs.FaultyOptions{Kinds: vfs.OpRename, Filter: func(op vfs.Op) bool {
			return strings.HasSuffix(op.Name, ".log"+cleanedSuffix)
		}})
		l = mustOpen(t, "/p", o)
		if _, err := l.Compact(context.Background()); !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("Compact = %v, want the injected fault", err)
		}
		l.Close()
		crashed := mem.Crash(vfs.CrashOptions{})
		if st, err := readCleaner(crashed, "/p"); err != nil || st.swapEnd <= st.swapBase {
			t.Fatalf("CLEANER %+v, %v: no swap committed", st, err)
		}
		return crashed
	}},
}

// mustBatch encodes rs as one batch.
func mustBatch(t testing.TB, rs []batch.Record) []byte {
	t.Helper()
	b, err := batch.Append(nil, rs, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendN appends n records value(from)… one by one.
func appendN(t *testing.T, l *Log, from, n int, d Durability) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := l.Append(recs(i, 1), d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpen_FaultAtEveryOperation fails each operation of Open, on a new
// directory, a cleanly closed partition, one that lost power with a torn
// tail, and one with a damaged index. Open either fails with an error
// that wraps the injected fault, releasing the directory, or opens the
// same log a fault-free Open opens; either way a later fault-free Open
// finds every record.
func TestOpen_FaultAtEveryOperation(t *testing.T) {
	for _, state := range openStates {
		for _, mode := range faultModes {
			t.Run(state.name+"/"+mode.name, func(t *testing.T) {
				template := state.make(t)
				ref, err := Open("/p", faultOptions(template.Crash(vfs.CrashOptions{})))
				if err != nil {
					t.Fatalf("fault-free open: %v", err)
				}
				wantHead, wantStart := ref.Head(), ref.StartOffset()
				ref.Close()
				for i := 0; ; i++ {
					if i > maxFaultOps {
						t.Fatalf("Open did not finish within %d operations", maxFaultOps)
					}
					mem := template.Crash(vfs.CrashOptions{}) // a copy
					faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: mode.sticky, ShortWrite: mode.shortWrite, Kinds: vfs.AllOps})
					l, err := Open("/p", faultOptions(faulty))
					done := faulty.Ops() <= i
					switch {
					case err != nil && done:
						t.Fatalf("no fault injected, yet Open failed: %v", err)
					case err != nil && !errors.Is(err, vfs.ErrInjected):
						t.Fatalf("fault at op %d: Open failed with %v, which does not wrap the injected fault", i, err)
					case err != nil && errors.Is(err, ErrCorrupt):
						t.Fatalf("fault at op %d: Open reports an I/O error as corruption: %v", i, err)
					case err == nil:
						if l.Head() != wantHead || l.StartOffset() != wantStart {
							t.Fatalf("fault at op %d: opened [%d, %d), want [%d, %d)", i, l.StartOffset(), l.Head(), wantStart, wantHead)
						}
						l.Close()
					}
					what := fmt.Sprintf("fault at op %d (Open error %v): reopen", i, err)
					l2 := checkSurvivors(t, what, mem, wantHead)
					if l2.Head() != wantHead || l2.StartOffset() != wantStart {
						t.Fatalf("%s: [%d, %d), want [%d, %d)", what, l2.StartOffset(), l2.Head(), wantStart, wantHead)
					}
					l2.Close()
					if done {
						return
					}
				}
			})
		}
	}
}
