package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// TestLog_WriteFailure_AroundRoll fails each operation (once, whole or
// half-written) of a workload whose appends alternate between batches
// that roll the 1 KiB segments and batches small enough to fit in the
// segment a failed roll left active. After every failure the log is
// asked to Retry at once and the workload goes on appending at the head.
// Then the log is closed and reopened, and a power loss at the end of the
// workload is reopened too: Open must succeed (no segment may start below
// the end of the one before it) and every acknowledged record (every
// fsync'd one, after the power loss) must read back at its offset.
func TestLog_WriteFailure_AroundRoll(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short-write=%v", short), func(t *testing.T) {
			injected, recovered := 0, 0
			for i := 0; ; i++ {
				if i > maxFaultOps {
					t.Fatalf("the workload did not finish within %d operations", maxFaultOps)
				}
				mem := vfs.NewMem()
				var armed atomic.Bool
				faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{
					FailAt: i, ShortWrite: short,
					Kinds: vfs.AllOps, Filter: func(vfs.Op) bool { return armed.Load() },
				})
				o := faultOptions(faulty)
				o.RetentionBytes = 0 // keep every segment
				l := mustOpen(t, "/p", o)
				armed.Store(true)
				var acked, durable int64
				failures := 0
				for step := range 60 {
					k := 6 // about 170 bytes: with the segment nearly full, a roll
					if step%2 == 1 {
						k = 1 // about 70 bytes: fits where the roll was due
					}
					d := InOS
					if step%5 == 4 {
						d = Fsync
					}
					next := l.Head()
					off, err := l.Append(recs(int(next), k), d)
					if err != nil {
						if !errors.Is(err, vfs.ErrInjected) && !errors.Is(err, ErrUnwritable) {
							t.Fatalf("fault %d, step %d: append: %v", i, step, err)
						}
						failures++
						l.Retry() // may fail: an fsync's failure is not retried
						continue
					}
					if off != next {
						t.Fatalf("fault %d, step %d: append returned offset %d, want %d", i, step, off, next)
					}
					if failures > 0 {
						recovered++
					}
					acked = next + int64(k)
					if d == Fsync {
						durable = acked
					}
					durable = max(durable, l.active().base) // closed segments were fsync'd
				}
				crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
				closeErr := l.Close()
				done := faulty.Ops() <= i
				if !done {
					injected++
				}
				what := fmt.Sprintf("fault at op %d (%d failed appends, close error %v)", i, failures, closeErr)
				o2 := faultOptions(mem)
				o2.RetentionBytes = 0
				l2, err := Open("/p", o2)
				if err != nil {
					t.Fatalf("%s: reopen: %v", what, err)
				}
				if l2.Head() < acked {
					t.Fatalf("%s: reopen: head %d, but offsets below %d were acknowledged", what, l2.Head(), acked)
				}
				checkRecords(t, l2, 0)
				if _, err := l2.Append(recs(int(l2.Head()), 1), Fsync); err != nil {
					t.Fatalf("%s: append after reopen: %v", what, err)
				}
				l2.Close()
				o3 := faultOptions(crashed)
				o3.RetentionBytes = 0
				l3, err := Open("/p", o3)
				if err != nil {
					t.Fatalf("%s: open after a power loss: %v", what, err)
				}
				if l3.Head() < durable {
					t.Fatalf("%s: power loss: head %d, but offsets below %d were fsync'd", what, l3.Head(), durable)
				}
				checkRecords(t, l3, 0)
				l3.Close()
				if done {
					t.Logf("%d runs with a fault injected, %d appends succeeded after the log recovered", injected, recovered)
					if recovered == 0 {
						t.Fatalf("the log never recovered from a fault")
					}
					return
				}
			}
		})
	}
}

// TestLog_SealSyncFailure_NotRetried: a roll's fsync of the segment it
// seals fails. That log must stay unwritable until it is reopened — after
// a failed fsync the kernel may have dropped the pages it could not write,
// and a retried fsync could succeed over them — and a reopen brings back
// every record acknowledged before.
func TestLog_SealSyncFailure_NotRetried(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{
		Kinds:  vfs.OpSync,
		Filter: func(op vfs.Op) bool { return armed.Load() && op.Name == "/p/00000000000000000000.log" },
	})
	o := faultOptions(faulty)
	o.RetentionBytes = 0
	l := mustOpen(t, "/p", o)
	var acked int64
	for l.active().base == 0 {
		armed.Store(true)
		off, err := l.Append(recs(int(l.Head()), 4), InOS)
		if err != nil {
			if !errors.Is(err, ErrUnwritable) || !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("append: %v, want ErrUnwritable from the injected fsync failure", err)
			}
			break
		}
		acked = off + 4
	}
	if h := l.Health(); h.Err == nil || h.Retrying {
		t.Fatalf("after a failed fsync in a roll: health %+v, want unwritable and not retrying", h)
	}
	if err := l.Retry(); err == nil {
		t.Fatal("Retry after a failed fsync made the log writable again")
	}
	if _, err := l.Append(recs(int(l.Head()), 1), InOS); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("append after a failed fsync: %v, want ErrUnwritable", err)
	}
	l.Close()
	o2 := faultOptions(mem)
	o2.RetentionBytes = 0
	l2 := mustOpen(t, "/p", o2)
	defer l2.Close()
	if l2.Head() < acked {
		t.Fatalf("reopened: head %d, but offsets below %d were acknowledged", l2.Head(), acked)
	}
	checkRecords(t, l2, 0)
	if _, err := l2.Append(recs(int(l2.Head()), 1), InOS); err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
}
