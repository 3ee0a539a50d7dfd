package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// The mapped write path (mapwrite.go): what a killed process and a power
// loss leave behind, and that Open finds the end of the data in it.

// killed returns what a SIGKILL of the process writing mem leaves: every
// byte written, mapped or not, stays in the page cache, so each file has
// its current contents (a directory keeps its synced entries, which for
// a log's files is all of them: each roll syncs the directory).
func killed(t *testing.T, mem *vfs.MemFS) *vfs.MemFS {
	t.Helper()
	after := mem.Crash(vfs.CrashOptions{})
	names, err := after.ReadDir("/p")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := mem.FileBytes(filepath.Join("/p", n))
		if err != nil {
			continue // removed since
		}
		if err := after.SetFileBytes(filepath.Join("/p", n), b); err != nil {
			t.Fatal(err)
		}
	}
	return after
}

func fileLen(t *testing.T, fsys vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fsys.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestMapped_FileLengthIsNotTheData: the active segment of a mapped log
// is longer than its data while it is written (allocated ahead), a roll
// and a clean Close cut each segment to its data, and a clean reopen
// trusts it. On vfs.WithoutMapping the file is its data at every
// instant.
func TestMapped_FileLengthIsNotTheData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mapped bool
	}{{"mapped", true}, {"write(2)", false}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fsys := vfs.FS(mem)
			if !tc.mapped {
				fsys = vfs.WithoutMapping(mem)
			}
			o := &Options{FS: fsys, SegmentBytes: 64 << 10, IndexInterval: 512}
			l := mustOpen(t, "/p", o)
			appendN(t, l, 0, 3000, InOS) // several segments
			if l.SegmentCount() < 2 {
				t.Fatalf("%d segments, want a roll", l.SegmentCount())
			}
			segs := l.segments()
			for _, s := range segs[:len(segs)-1] {
				if n := fileLen(t, mem, s.path); n != s.size.Load() {
					t.Errorf("closed segment %s: file %d bytes, data %d", s.path, n, s.size.Load())
				}
			}
			a := l.active()
			if n := fileLen(t, mem, a.path); tc.mapped != (n > a.size.Load()) {
				t.Errorf("active segment: file %d bytes, data %d (mapped %v)", n, a.size.Load(), tc.mapped)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if n := fileLen(t, mem, a.path); n != a.size.Load() {
				t.Errorf("after Close: file %d bytes, data %d", n, a.size.Load())
			}
			l = mustOpen(t, "/p", o)
			defer l.Close()
			if r := l.Recovery(); !r.Clean || r.Validated != 0 || r.TornBytes != 0 {
				t.Errorf("reopen after a clean Close: %+v", r)
			}
			checkRecords(t, l, 0)
		})
	}
}

// TestMapped_ReopenAfterKill: a killed process leaves the active segment
// with its batches, then allocated zeros. Open ends the segment at the
// last whole batch — every acknowledged record, never a zero byte as
// data — truncates the zeros, and the log goes on appending through a
// new mapping.
func TestMapped_ReopenAfterKill(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, SegmentBytes: 1 << 20}
	l := mustOpen(t, "/p", o)
	appendN(t, l, 0, 500, InOS)
	data := l.Size()
	after := killed(t, mem)
	l.Close()
	name := seg(0, ".log")
	if n := fileLen(t, after, name); n <= data {
		t.Fatalf("killed: file %d bytes, data %d: nothing was allocated ahead", n, data)
	}
	// Verify: no problem, a note on the allocated space.
	r := mustVerify(t, after)
	if !r.OK() || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "allocated past its last batch") }) {
		t.Fatalf("verify after a kill: problems %v, notes %q; want none, and a note on the allocated space", r.Problems, r.Notes)
	}
	o.FS = after
	l = mustOpen(t, "/p", o)
	if l.Head() != 500 || l.Size() != data || fileLen(t, after, name) != data {
		t.Fatalf("reopened: head %d, %d bytes, file %d; want 500, %d", l.Head(), l.Size(), fileLen(t, after, name), data)
	}
	if torn := l.Recovery().TornBytes; torn != 0 {
		t.Errorf("reopened: %d torn bytes; allocated space is none", torn)
	}
	checkRecords(t, l, 0)
	appendN(t, l, 500, 500, InOS)
	checkRecords(t, l, 0)
	if r := mustVerifyClosed(t, l, after); !r.OK() {
		t.Fatalf("verify: %v", r.Problems)
	}
}

// TestMapped_KillAtEveryWrite kills the process (keeps the page cache)
// after each write a workload makes, mapped copies and allocations
// included, failing that write first (half of it copied: a kill between
// the copy and the publication of the size). Open keeps every
// acknowledged record and nothing that is not a record.
func TestMapped_KillAtEveryWrite(t *testing.T) {
	for at := 0; ; at++ {
		mem := vfs.NewMem()
		if err := mustOpen(t, "/p", &Options{FS: mem}).Close(); err != nil {
			t.Fatal(err)
		}
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: at, Kinds: vfs.OpWrite | vfs.OpTruncate, ShortWrite: true,
			Filter: func(op vfs.Op) bool { _, _, ok := segmentFile(filepath.Base(op.Name)); return ok }})
		l := mustOpen(t, "/p", &Options{FS: faulty, SegmentBytes: 64 << 10, IndexInterval: 256})
		acked := 0
		for acked < 1000 {
			n := 1 + acked%4
			if _, err := l.Append(recs(acked, n), InOS); err != nil {
				if !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("at %d: %v", at, err)
				}
				break
			}
			acked += n
		}
		after := killed(t, mem)
		l.Close()
		if faulty.Ops() <= at {
			if at < 10 {
				t.Fatalf("only %d writes", faulty.Ops())
			}
			return
		}
		r, err := Open("/p", &Options{FS: after, SegmentBytes: 64 << 10, IndexInterval: 256})
		if err != nil {
			t.Fatalf("kill after write %d: Open: %v", at, err)
		}
		if r.Head() < int64(acked) {
			t.Fatalf("kill after write %d: head %d, %d records acknowledged", at, r.Head(), acked)
		}
		checkRecords(t, r, 0)
		if rep := mustVerifyClosed(t, r, after); !rep.OK() {
			t.Fatalf("kill after write %d: verify: %v", at, rep.Problems)
		}
	}
}

// TestMapped_PowerLoss cuts the power with mapped pages unsynced: any of
// them reaches the disk or not, in any order, each whole or as the zeros
// allocated there. Every record acknowledged with Fsync survives, and
// Open never takes a zero or a stray page for data.
func TestMapped_PowerLoss(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 21))
			mem := vfs.NewMem()
			o := &Options{FS: mem, SegmentBytes: 128 << 10, IndexInterval: 512}
			l := mustOpen(t, "/p", o)
			synced, next := int64(0), 0
			for range 60 {
				n := 1 + rng.IntN(40)
				d := InOS
				if rng.IntN(4) == 0 {
					d = Fsync
				}
				if _, err := l.Append(recs(next, n), d); err != nil {
					t.Fatal(err)
				}
				next += n
				if d == Fsync {
					synced = int64(next)
				}
				if rng.IntN(8) == 0 {
					if err := l.checkpointNow(); err != nil {
						t.Fatal(err)
					}
				}
			}
			crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: true, Rand: rng})
			l.Close()
			o.FS = crashed
			l, err := Open("/p", o)
			if err != nil {
				t.Fatalf("Open after power loss: %v", err)
			}
			if l.Head() < synced || l.Head() > int64(next) {
				t.Fatalf("head %d; fsync'd %d, appended %d", l.Head(), synced, next)
			}
			checkRecords(t, l, 0)
			if _, err := l.Append(recs(int(l.Head()), 3), Fsync); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, l, 0)
			if rep := mustVerifyClosed(t, l, crashed); !rep.OK() {
				t.Fatalf("verify: %v", rep.Problems)
			}
		})
	}
}

// TestMapped_StaleBytesPastTheData: the bytes past the data of an active
// segment may be anything a file held before (a recycled segment file, a
// page the disk kept from an earlier write): whole, valid batches of
// lower offsets, copies of the segment's own batches, garbage. Open ends
// the segment where its own batches end — the offset chain and the CRC
// refuse every one of them — and Verify calls them a torn tail.
func TestMapped_StaleBytesPastTheData(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, SegmentBytes: 8 << 10}
	l := mustOpen(t, "/p", o)
	appendN(t, l, 0, 400, InOS)
	segs := l.segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	a := segs[len(segs)-1]
	head, data := l.Head(), a.size.Load()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	active, _ := mem.FileBytes(a.path)
	older, _ := mem.FileBytes(segs[0].path)
	garbage := make([]byte, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name  string
		stale []byte
	}{
		{"an older segment's batches", older},
		{"the segment's own batches again", active},
		{"its own batches from the second on", active[batchLen(t, active):]},
		{"garbage", garbage},
		{"zeros", make([]byte, 64<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := mem.Crash(vfs.CrashOptions{})
			fsys.SetFileBytes(a.path, append(bytes.Clone(active), tc.stale...))
			// Not closed cleanly: the checkpoint says the data ends earlier.
			if err := writeCheckpoint(fsys, "/p", checkpoint{base: a.base, pos: 0}); err != nil {
				t.Fatal(err)
			}
			if rep := mustVerify(t, fsys); len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemTornTail || rep.Problems[0].Pos != data {
				t.Fatalf("verify: %v, want a torn tail at byte %d", rep.Problems, data)
			}
			o := *o
			o.FS = fsys
			l := mustOpen(t, "/p", &o)
			defer l.Close()
			if l.Head() != head || l.Size() < data || l.active().size.Load() != data {
				t.Fatalf("head %d, active %d bytes; want %d, %d", l.Head(), l.active().size.Load(), head, data)
			}
			checkRecords(t, l, 0)
		})
	}
}

func batchLen(t *testing.T, b []byte) int {
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h.Size()
}

// TestMapped_FullDisk: allocating ahead fails on a full disk (ENOSPC), so
// a mapped store never meets one; the append fails, the log retries once
// space is back, and nothing acknowledged is lost.
func TestMapped_FullDisk(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewFull(mem)
	l := mustOpen(t, "/p", &Options{FS: full, SegmentBytes: 1 << 20})
	defer l.Close()
	next := 0
	full.SetFull(true)
	var failed error
	for next < 100000 && failed == nil {
		if _, err := l.Append(recs(next, 10), InOS); err != nil {
			failed = err
			break
		}
		next += 10
	}
	if !errors.Is(failed, ErrUnwritable) || !errors.Is(failed, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrUnwritable and ENOSPC", failed)
	}
	full.SetFull(false)
	if err := l.Retry(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, next, 100, Fsync)
	checkRecords(t, l, 0)
}

// TestMapped_ReadersRaceTheWriter: readers follow the log while one
// appender writes it through the mapping on the real file system, across
// rolls (run under -race). A reader sees whole records up to the head and
// never a byte past a segment's published size.
func TestMapped_ReadersRaceTheWriter(t *testing.T) {
	dir := t.TempDir()
	if !vfs.CanMap(vfs.OS()) {
		t.Skip("the OS cannot map here")
	}
	l := mustOpen(t, dir, &Options{SegmentBytes: 64 << 10, IndexInterval: 512})
	defer l.Close()
	const total = 6000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := int64(0)
			for want < total {
				for rec, err := range l.Records(want) {
					if err != nil {
						errs <- fmt.Errorf("read at %d: %w", want, err)
						return
					}
					if rec.Offset != want || !bytes.Equal(rec.Value, value(int(want))) {
						errs <- fmt.Errorf("record at %d: offset %d value %q", want, rec.Offset, rec.Value)
						return
					}
					want++
				}
				if want < total {
					if err := l.Wait(t.Context(), want); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for i := 0; i < total; {
		n := 1 + i%9
		n = min(n, total-i)
		if _, err := l.Append(recs(i, n), InOS); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l.SegmentCount() < 3 {
		t.Errorf("%d segments: the test wants rolls", l.SegmentCount())
	}
}

// TestAppend_FailedIndexWriteLeavesNoEntry: a write that fails while its
// batch is being indexed (here the time index's first write) leaves no
// index entry behind for the batch it never published, so the batch
// written again in its place after the retry is indexed once (found by
// cmd/torture: verify saw the offset index's first entry twice).
func TestAppend_FailedIndexWriteLeavesNoEntry(t *testing.T) {
	for _, tc := range []struct{ name, ext string }{{"time index", ".timeindex"}, {"offset index", ".index"}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: 0, Kinds: vfs.OpWrite,
				Filter: func(op vfs.Op) bool { return filepath.Ext(op.Name) == tc.ext }})
			l := mustOpen(t, "/p", &Options{FS: faulty, IndexInterval: 64})
			if _, err := l.Append(recs(0, 10), InOS); !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("first append: %v, want the injected fault", err)
			}
			if err := l.Retry(); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 0, 50, InOS)
			checkRecords(t, l, 0)
			if r := mustVerifyClosed(t, l, mem); !r.OK() {
				t.Fatalf("verify: %v", r.Problems)
			}
		})
	}
}
