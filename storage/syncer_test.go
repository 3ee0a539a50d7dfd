package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// dataDir returns a MemFS holding a durable empty directory /d, as a
// data directory holding partitions is.
func dataDir(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mem.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return mem
}

// opCountFS counts the renames and directory fsyncs made through it.
type opCountFS struct {
	vfs.FS
	renames, syncDirs, opens atomic.Int64
}

func (c *opCountFS) Rename(a, b string) error { c.renames.Add(1); return c.FS.Rename(a, b) }
func (c *opCountFS) SyncDir(d string) error   { c.syncDirs.Add(1); return c.FS.SyncDir(d) }
func (c *opCountFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	c.opens.Add(1)
	return c.FS.OpenFile(name, flag, perm)
}

// TestCheckpoint_InPlace: once CHECKPOINT exists, recording a new
// recovery point writes it in place, with no rename and no directory
// fsync, and nothing at all when the point did not move.
func TestCheckpoint_InPlace(t *testing.T) {
	c := &opCountFS{FS: vfs.NewMem()}
	l := mustOpen(t, "/p", &Options{FS: c, Durability: Fsync})
	defer l.Close()
	appendN(t, l, 0, 10, DefaultDurability)
	renames, syncDirs := c.renames.Load(), c.syncDirs.Load()
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	if c.renames.Load() != renames || c.syncDirs.Load() != syncDirs {
		t.Errorf("checkpoint update: %d renames, %d directory fsyncs; want none", c.renames.Load()-renames, c.syncDirs.Load()-syncDirs)
	}
	cp, err := readCheckpoint(c, "/p")
	if err != nil || cp.pos != l.active().size.Load() || cp.clean {
		t.Errorf("CHECKPOINT = %+v, %v; want the active segment's %d bytes, not clean", cp, err, l.active().size.Load())
	}
	opens := c.opens.Load()
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	if c.opens.Load() != opens {
		t.Errorf("a checkpoint that did not move opened %d files", c.opens.Load()-opens)
	}
}

// TestCheckpoint_Torn tears CHECKPOINT's in-place update at every byte,
// both ways (new bytes before the cut and old after, and the reverse, as
// sectors written out of order would), after a power loss with fsync'd
// records and an unsynced tail: the partition always opens, every fsync'd
// record is there, and Verify reports the torn checkpoint without
// fencing the partition. The updates torn are the recovery point moving
// and a clean Close.
func TestCheckpoint_Torn(t *testing.T) {
	for _, clean := range []bool{false, true} {
		mem := vfs.NewMem()
		l := mustOpen(t, "/p", &Options{FS: mem, Durability: Fsync, SegmentBytes: 4 << 10})
		appendN(t, l, 0, 40, DefaultDurability) // several segments
		if err := l.checkpointNow(); err != nil {
			t.Fatal(err)
		}
		old, _ := mem.FileBytes("/p/" + checkpointFile)
		appendN(t, l, 40, 10, DefaultDurability)
		acked := l.Head()
		var upd []byte
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			upd, _ = mem.FileBytes("/p/" + checkpointFile)
		} else {
			appendN(t, l, 50, 5, InOS) // not fsync'd: may go
			l.sync.mu.Lock()
			upd = l.sync.point.encode()
			l.sync.mu.Unlock()
			defer l.Close()
		}
		if bytes.Equal(old, upd) {
			t.Fatal("the update changes nothing")
		}
		for cut := 0; cut <= checkpointSize; cut++ {
			for _, mix := range [][]byte{
				append(bytes.Clone(upd[:cut]), old[cut:]...),
				append(bytes.Clone(old[:cut]), upd[cut:]...),
			} {
				crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: cut%2 == 0, Rand: rand.New(rand.NewPCG(uint64(cut), 1))})
				if err := crashed.SetFileBytes("/p/"+checkpointFile, mix); err != nil {
					t.Fatal(err)
				}
				torn := !bytes.Equal(mix, old) && !bytes.Equal(mix, upd)
				r, err := Verify("/p", &VerifyOptions{FS: crashed})
				if err != nil {
					t.Fatal(err)
				}
				if r.Fenced != "" {
					t.Fatalf("clean %v, cut %d: Verify fences the partition: %s", clean, cut, r.Fenced)
				}
				l2, err := Open("/p", &Options{FS: crashed})
				if err != nil {
					t.Fatalf("clean %v, cut %d (torn %v): Open: %v", clean, cut, torn, err)
				}
				if l2.Head() < acked {
					t.Fatalf("clean %v, cut %d: head %d, but %d records were fsync'd", clean, cut, l2.Head(), acked)
				}
				if torn && l2.Recovery().Clean {
					t.Fatalf("clean %v, cut %d: a torn checkpoint was taken for a clean shutdown", clean, cut)
				}
				checkRecords(t, l2, 0)
				l2.Close()
			}
		}
	}
}

// TestCheckpoint_DamagedNotTorn: damage an in-place update cannot leave
// (a bad magic, a wrong size, a reserved byte set) is still corruption:
// Open refuses the partition with a *CorruptError naming CHECKPOINT.
func TestCheckpoint_DamagedNotTorn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"magic", func(b []byte) []byte { b[0] ^= 1; return b }},
		{"version", func(b []byte) []byte { b[4] = 2; return b }},
		{"reserved byte", func(b []byte) []byte { b[25] = 7; return b }},
		{"clean flag", func(b []byte) []byte { b[21] = 9; return b }},
		{"size", func(b []byte) []byte { return b[:30] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := mustOpen(t, "/p", &Options{FS: mem})
			appendN(t, l, 0, 10, Fsync)
			l.Close()
			b, _ := mem.FileBytes("/p/" + checkpointFile)
			mem.SetFileBytes("/p/"+checkpointFile, tc.damage(b))
			_, err := Open("/p", &Options{FS: mem})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != "/p/"+checkpointFile {
				t.Fatalf("Open = %v, want a CorruptError naming CHECKPOINT", err)
			}
		})
	}
}

// TestSyncer_PowerLoss_Shared: 8 logs share one Syncer, 4 goroutines
// append to each with Fsync durability while each log's CHECKPOINT is
// updated in place over and over, and the power goes out at a random
// moment, tearing unsynced tails and unsynced in-place updates. Every
// append that returned is there with its bytes, offsets are dense, and no
// log had reported as fsync'd (its group commit's synced point) more than
// survived.
func TestSyncer_PowerLoss_Shared(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const logs, per = 8, 4
	for round := range 4 {
		mem := dataDir(t)
		y := NewSyncer(4)
		ls := make([]*Log, logs)
		for i := range ls {
			ls[i] = mustOpen(t, fmt.Sprintf("/d/p%d", i), &Options{FS: mem, Syncer: y, Durability: Fsync, SegmentBytes: 8 << 10, IndexInterval: 512})
		}
		var mu sync.Mutex
		acked := make([]map[int64][]byte, logs)
		for i := range acked {
			acked[i] = map[int64][]byte{}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, l := range ls {
			for g := range per {
				wg.Go(func() {
					for seq := 0; ; seq++ {
						select {
						case <-stop:
							return
						default:
						}
						v := fmt.Appendf(nil, "p%d-g%d-%06d", i, g, seq)
						off, err := l.Append([]batch.Record{{Value: v}}, DefaultDurability)
						if err != nil {
							return
						}
						mu.Lock()
						acked[i][off] = v
						mu.Unlock()
					}
				})
			}
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := l.checkpointNow(); err != nil {
						return
					}
					time.Sleep(50 * time.Microsecond)
				}
			})
		}
		for {
			// Until every appender had some appends acknowledged.
			time.Sleep(time.Millisecond)
			mu.Lock()
			n := len(acked[0])
			for i := range acked {
				n = min(n, len(acked[i]))
			}
			mu.Unlock()
			if n >= per {
				break
			}
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		mu.Lock()
		claimed := make([]int64, logs)
		for i, l := range ls {
			l.sync.mu.Lock()
			claimed[i] = l.sync.synced
			l.sync.mu.Unlock()
		}
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: round%2 == 1, Rand: rng})
		want := make([]map[int64][]byte, logs)
		for i := range acked {
			want[i] = make(map[int64][]byte, len(acked[i]))
			for k, v := range acked[i] {
				want[i][k] = v
			}
		}
		mu.Unlock()
		close(stop)
		wg.Wait()
		for _, l := range ls {
			l.Close()
		}
		total := 0
		for i := range ls {
			l2 := mustOpen(t, fmt.Sprintf("/d/p%d", i), &Options{FS: crashed})
			if l2.Head() < claimed[i] {
				t.Fatalf("round %d, log %d: head %d after the power loss, but its group commit had reported %d fsync'd", round, i, l2.Head(), claimed[i])
			}
			got := map[int64][]byte{}
			next := int64(0)
			for rec, err := range l2.Records(0) {
				if err != nil {
					t.Fatal(err)
				}
				if rec.Offset != next {
					t.Fatalf("round %d, log %d: offset %d after %d: not dense", round, i, rec.Offset, next-1)
				}
				next++
				got[rec.Offset] = bytes.Clone(rec.Value)
			}
			for off, v := range want[i] {
				if !bytes.Equal(got[off], v) {
					t.Fatalf("round %d, log %d: acknowledged offset %d: got %q, want %q", round, i, off, got[off], v)
				}
			}
			total += len(want[i])
			l2.Close()
		}
		if total < logs*per {
			t.Fatalf("round %d: only %d appends acknowledged before the crash", round, total)
		}
		t.Logf("round %d: %d acknowledged over %d logs; syncer %+v", round, total, logs, y.Stats())
	}
}

// syncFailFS fails every fsync of the segment files of one partition
// directory once armed.
type syncFailFS struct {
	vfs.FS
	dir   string
	armed atomic.Bool
}

func (f *syncFailFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !bytes.HasPrefix([]byte(name), []byte(f.dir+"/")) || !bytes.HasSuffix([]byte(name), []byte(".log")) {
		return file, err
	}
	return syncFailFile{File: file, fs: f}, nil
}

type syncFailFile struct {
	vfs.File
	fs *syncFailFS
}

func (f syncFailFile) Sync() error {
	if f.fs.armed.Load() {
		return fmt.Errorf("sync %s: %w", f.Name(), vfs.ErrInjected)
	}
	return f.File.Sync()
}

// TestSyncer_FailedFsync: with a Syncer shared by three logs, an fsync
// that fails on one of them fails that log's Fsync appends (the log
// becomes unwritable and says why) and only its: the others' appends
// still return fsync'd, in the same rounds.
func TestSyncer_FailedFsync(t *testing.T) {
	mem := dataDir(t)
	bad := &syncFailFS{FS: mem, dir: "/d/p1"}
	y := NewSyncer(0)
	ls := make([]*Log, 3)
	for i := range ls {
		ls[i] = mustOpen(t, fmt.Sprintf("/d/p%d", i), &Options{FS: bad, Syncer: y, Durability: Fsync})
		defer ls[i].Close()
		appendN(t, ls[i], 0, 5, DefaultDurability)
	}
	bad.armed.Store(true)
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			for n := 5; n < 25; n++ {
				if _, err := l.Append(recs(n, 1), DefaultDurability); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if !errors.Is(errs[1], vfs.ErrInjected) || !errors.Is(errs[1], ErrUnwritable) {
		t.Errorf("append to the log whose fsync fails: %v, want ErrUnwritable wrapping the injected fault", errs[1])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil {
			t.Errorf("log %d: %v", i, errs[i])
		}
		if err := ls[i].Sync(); err != nil || !ls[i].IsDurable(25, Fsync) {
			t.Errorf("log %d: Sync %v, durable to 25: %v", i, err, ls[i].IsDurable(25, Fsync))
		}
	}
	crashed := mem.Crash(vfs.CrashOptions{Tear: true})
	for _, i := range []int{0, 2} {
		l := mustOpen(t, fmt.Sprintf("/d/p%d", i), &Options{FS: crashed})
		if l.Head() != 25 {
			t.Errorf("log %d after a power loss: head %d, want 25", i, l.Head())
		}
		checkRecords(t, l, 0)
		l.Close()
	}
}

// TestSyncer_Waits: WaitDurable and IsDurable through a shared Syncer.
// Records appended InOS are not durable until a WaitDurable (from any
// goroutine) or Sync; one wait covers every log's appends made before
// it, and a log closed while its waiters wait releases them.
func TestSyncer_Waits(t *testing.T) {
	mem := dataDir(t)
	y := NewSyncer(2)
	a := mustOpen(t, "/d/a", &Options{FS: mem, Syncer: y})
	b := mustOpen(t, "/d/b", &Options{FS: mem, Syncer: y})
	defer b.Close()
	appendN(t, a, 0, 10, InOS)
	appendN(t, b, 0, 10, InOS)
	for _, l := range []*Log{a, b} {
		if l.IsDurable(10, Fsync) {
			t.Fatalf("%s: durable before any fsync", l.Dir())
		}
		if !l.IsDurable(10, InOS) {
			t.Fatalf("%s: InOS records not durable InOS", l.Dir())
		}
		if l.IsDurable(10, Interval) {
			t.Fatalf("%s: IsDurable with Interval has nothing to ask", l.Dir())
		}
	}
	var wg sync.WaitGroup
	for _, l := range []*Log{a, b} {
		wg.Go(func() {
			if err := l.WaitDurable(10, Fsync); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	crashed := mem.Crash(vfs.CrashOptions{Tear: true})
	for _, name := range []string{"/d/a", "/d/b"} {
		if h := headOf(t, crashed, name); h != 10 {
			t.Errorf("%s after WaitDurable and a power loss: head %d, want 10", name, h)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitDurable(10, Fsync); err != nil {
		t.Errorf("WaitDurable of fsync'd records after Close: %v", err)
	}
	if err := a.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v, want ErrClosed", err)
	}
	if s := y.Stats(); s.Files < 2 {
		t.Errorf("syncer stats %+v: want fsyncs of both logs", s)
	}
}

// headOf opens dir on a crashed copy of mem and returns its head.
func headOf(t *testing.T, mem *vfs.MemFS, dir string) int64 {
	t.Helper()
	l := mustOpen(t, dir, &Options{FS: mem.Crash(vfs.CrashOptions{})})
	defer l.Close()
	checkRecords(t, l, 0)
	return l.Head()
}
