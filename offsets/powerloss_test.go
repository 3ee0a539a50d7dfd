package offsets_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/vfs"
)

const powerDir = "/data"

func openOn(t *testing.T, fsys vfs.FS, sync offsets.Sync) *offsets.SQLite {
	t.Helper()
	if err := fsys.MkdirAll(powerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	s, err := offsets.Open(powerDir+"/offsets.db", &offsets.Options{FS: fsys, Synchronous: sync})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSQLite_PowerLoss cuts the power under the store (vfs.MemFS.Crash:
// every write not fsync'd is lost, pages of the unsynced tail reach the
// disk or not in any order) while four committers commit, each to its own
// key, and reopens what survived: in the durable modes, no key's
// committed offset is below one a Commit had returned before the cut,
// and none is above what was written. Trials cross WAL checkpoints (a
// commit is a WAL page; SQLite checkpoints every 1,000) and cut at every
// phase of a commit.
func TestSQLite_PowerLoss(t *testing.T) {
	const committers = 4
	// MemFS copies a file on its first write after a Sync, so each
	// commit here costs a copy of the WAL: few trials, SyncFull's fewest.
	for _, tt := range []struct {
		mode          offsets.Sync
		trials, short int
	}{{offsets.SyncGroup, 20, 3}, {offsets.SyncFull, 3, 1}} {
		mode, trials := tt.mode, tt.trials
		if testing.Short() {
			trials = tt.short
		}
		t.Run(mode.String(), func(t *testing.T) {
			for trial := range trials {
				rng := rand.New(rand.NewPCG(uint64(trial), uint64(mode)))
				mem := vfs.NewMem()
				s := openOn(t, mem, mode)
				keys := make([]offsets.Key, committers)
				var acked, written [committers]atomic.Int64
				var stop atomic.Bool
				var wg sync.WaitGroup
				for i := range keys {
					keys[i] = offsets.Key{Consumer: fmt.Sprint("group-", i), Topic: "orders", Partition: int32(i)}
					wg.Go(func() {
						for off := int64(1); !stop.Load(); off++ {
							written[i].Store(off)
							if err := s.Commit(ctx, keys[i], off); err != nil {
								t.Errorf("commit: %v", err)
								return
							}
							acked[i].Store(off)
						}
					})
				}
				// Cut after a random number of acknowledged commits: up
				// to 1,500 in all, past the first checkpoint.
				cutAt := int64(rng.IntN(1500))
				for ; ; runtime.Gosched() {
					var n int64
					for i := range acked {
						n += acked[i].Load()
					}
					if n >= cutAt {
						break
					}
				}
				var before [committers]int64
				for i := range acked {
					before[i] = acked[i].Load()
				}
				crashed := mem.Crash(vfs.CrashOptions{Rand: rng, Tear: true, Pages: true})
				stop.Store(true)
				wg.Wait()
				var max [committers]int64
				for i := range written {
					max[i] = written[i].Load()
				}
				s.Close()

				r := openOn(t, crashed, mode)
				for i, k := range keys {
					got, err := r.Committed(ctx, k)
					if errors.Is(err, offsets.ErrNotFound) {
						got, err = 0, nil
					}
					if err != nil || got < before[i] || got > max[i] {
						t.Fatalf("trial %d, after the power cut: %v = %d, %v; acknowledged before the cut: %d, written at most %d",
							trial, k, got, err, before[i], max[i])
					}
				}
				r.Close()
			}
		})
	}
}

// TestSQLite_PowerLoss_Normal is the contrast: in SyncNormal a returned
// commit is in the OS only, and a power cut before the next checkpoint
// loses it.
func TestSQLite_PowerLoss_Normal(t *testing.T) {
	mem := vfs.NewMem()
	s := openOn(t, mem, offsets.SyncNormal)
	k := offsets.Key{Consumer: "billing", Topic: "orders"}
	for off := range int64(10) {
		if err := s.Commit(ctx, k, off+1); err != nil {
			t.Fatal(err)
		}
	}
	crashed := mem.Crash(vfs.CrashOptions{})
	s.Close()
	r := openOn(t, crashed, offsets.SyncNormal)
	defer r.Close()
	if got, err := r.Committed(ctx, k); !errors.Is(err, offsets.ErrNotFound) {
		t.Fatalf("after a power cut, SyncNormal's 10 unsynced commits read %d, %v; want them lost (ErrNotFound)", got, err)
	}
}
