package storage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// tornFixture writes, to /p on a MemFS, a batch of 10 records fsync'd and
// checkpointed (the recovery point), then one 150 KB record and 10 small
// ones that were written but never fsync'd, as a producer with acks=1
// leaves them. It returns the MemFS (the log closed uncleanly: as after
// kill -9) and the byte position where the unsynced bytes start.
func tornFixture(t *testing.T) (*vfs.MemFS, int64) {
	t.Helper()
	mem := vfs.NewMem()
	// write(2): the file is exactly its batches, which the test cuts and
	// damages by byte (the mapped path allocates past them).
	l := mustOpen(t, "/p", &Options{FS: vfs.WithoutMapping(mem)})
	if _, err := l.Append(recs(0, 10), Fsync); err != nil {
		t.Fatal(err)
	}
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	big := bytes.Repeat([]byte{'x'}, 150<<10)
	if _, err := l.Append([]batch.Record{{Value: big}}, InOS); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs(11, 10), InOS); err != nil {
		t.Fatal(err)
	}
	// Power loss while the log is open: what was written is in mem's
	// current contents; Crash gives what a disk kept.
	crashed := mem.Crash(vfs.CrashOptions{})
	full, _ := mem.FileBytes(seg(0, ".log"))
	if err := crashed.SetFileBytes(seg(0, ".log"), full); err != nil {
		t.Fatal(err)
	}
	l.Close()
	return crashed, synced
}

// TestRecover_PageLostInUnsyncedTail is the case: an unsynced 150
// KB batch lost a page in its middle while the pages after it, and a whole
// valid batch, reached the disk. Only unsynced bytes were lost, so it is a
// torn tail, not corruption: Open truncates it and serves the rest, and
// Verify says "torn tail" at the same byte, with the same head.
func TestRecover_PageLostInUnsyncedTail(t *testing.T) {
	mem, synced := tornFixture(t)
	b, _ := mem.FileBytes(seg(0, ".log"))
	hole := synced + 64<<10
	clear(b[hole : hole+4096])
	mem.SetFileBytes(seg(0, ".log"), b)

	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemTornTail, segmentName(0, ".log"), synced)
	if r.Head != 10 || p.From != 10 {
		t.Fatalf("verify: head %d, problem %v; want head 10, a torn tail from offset 10", r.Head, p)
	}
	l, err := Open("/p", &Options{FS: mem})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	if l.Head() != r.Head || l.Recovery().TornBytes != int64(len(b))-synced {
		t.Fatalf("Open: head %d, torn %d bytes; verify said head %d, %d bytes", l.Head(), l.Recovery().TornBytes, r.Head, int64(len(b))-synced)
	}
	checkRecords(t, l, 0)
	if _, err := l.Append(recs(10, 1), Fsync); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, l, 0)
	if r := mustVerifyClosed(t, l, mem); !r.OK() {
		t.Fatalf("verify after recovery: %v", r.Problems)
	}
}

// mustVerifyClosed closes l and verifies its partition.
func mustVerifyClosed(t *testing.T, l *Log, mem *vfs.MemFS) *VerifyReport {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return mustVerify(t, mem)
}

// TestRecover_OpenAndVerifyAgree damages the fixture's segment at many
// places, below and past the recovery point, and checks the one rule:
// damage below it is corruption for both (Open fails with a CorruptError
// at the byte Verify names), damage past it is a torn tail for both, at
// the same byte and with the same head.
func TestRecover_OpenAndVerifyAgree(t *testing.T) {
	base, synced := tornFixture(t)
	full, _ := base.FileBytes(seg(0, ".log"))
	for _, tc := range []struct {
		name string
		at   int64 // byte zeroed (a 4 KiB page from here, cut at the end of the file)
		torn bool
	}{
		{"first batch, fsync'd", 30, false},
		{"start of the unsynced bytes", synced, true},
		{"middle of the big batch", synced + 80<<10, true},
		{"last small batch", int64(len(full)) - 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := base.Crash(vfs.CrashOptions{})
			b := bytes.Clone(full)
			clear(b[tc.at:min(tc.at+4096, int64(len(b)))])
			mem.SetFileBytes(seg(0, ".log"), b)
			r := mustVerify(t, mem)
			if len(r.Problems) != 1 {
				t.Fatalf("verify: %v, want one problem", r.Problems)
			}
			p := r.Problems[0]
			l, err := Open("/p", &Options{FS: mem})
			var ce *CorruptError
			switch {
			case (r.Fenced != "") != (err != nil):
				t.Fatalf("verify says fenced %q; Open: %v", r.Fenced, err)
			case !tc.torn && (p.Kind != ProblemBatch || !errors.As(err, &ce) || ce.Pos != p.Pos):
				t.Fatalf("verify: %v; Open: %v; want corruption at the same byte for both", p, err)
			case tc.torn && (p.Kind != ProblemTornTail || err != nil):
				t.Fatalf("verify: %v; Open: %v; want a torn tail that Open truncates", p, err)
			case tc.torn && (l.Head() != r.Head || l.Size() != p.Pos):
				t.Fatalf("Open: head %d, size %d; verify: head %d, torn at byte %d", l.Head(), l.Size(), r.Head, p.Pos)
			}
			if l != nil {
				l.Close()
			}
		})
	}
}

// TestRecover_PowerLoss_PagesOutOfOrder cuts the power with every unsynced
// page of the fixture's segment reaching the disk or not at random (as a
// page cache's write-back does), many times: Open always succeeds, keeps
// every fsync'd record, serves dense offsets, and agrees with Verify.
func TestRecover_PowerLoss_PagesOutOfOrder(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	if _, err := l.Append(recs(0, 10), Fsync); err != nil {
		t.Fatal(err)
	}
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{'x'}, 150<<10)
	for i := range 3 {
		l.Append([]batch.Record{{Value: big}}, InOS)
		l.Append(recs(11+i*11, 10), InOS)
	}
	defer l.Close()
	for trial := range 50 {
		crashed := mem.Crash(vfs.CrashOptions{Rand: rng, Tear: true, Pages: true})
		r := mustVerify(t, crashed)
		for _, p := range r.Problems {
			if p.Kind != ProblemTornTail {
				t.Fatalf("trial %d: verify: %v, want at most a torn tail", trial, r.Problems)
			}
		}
		l2, err := Open("/p", &Options{FS: crashed})
		if err != nil {
			t.Fatalf("trial %d: Open: %v", trial, err)
		}
		if l2.Head() < 10 || l2.Head() != r.Head {
			t.Fatalf("trial %d: head %d, verify said %d; 10 records were fsync'd", trial, l2.Head(), r.Head)
		}
		next := int64(0)
		for rec, err := range l2.Records(0) {
			if err != nil || rec.Offset != next {
				t.Fatalf("trial %d: read at %d: offset %d, %v", trial, next, rec.Offset, err)
			}
			next++
		}
		if next != l2.Head() {
			t.Fatalf("trial %d: read %d records, head %d", trial, next, l2.Head())
		}
		l2.Close()
	}
}

// diskFS is a disk whose trouble a test turns on and off: while fault is
// ENOSPC a write stores half its bytes and fails (a full disk), while it
// is EROFS every write, truncate and creation fails (a file system
// remounted read-only), and while it is EMFILE every open fails (no file
// descriptors left). Reads, fsyncs of what was written and removals work
// throughout.
type diskFS struct {
	vfs.FS
	fault atomic.Value // syscall.Errno; 0 for none
}

func newDiskFS() (*diskFS, *vfs.MemFS) {
	mem := vfs.NewMem()
	d := &diskFS{FS: mem}
	d.fault.Store(syscall.Errno(0))
	return d, mem
}

func (d *diskFS) now() syscall.Errno { return d.fault.Load().(syscall.Errno) }

func (d *diskFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	switch e := d.now(); {
	case e == syscall.EMFILE,
		e == syscall.EROFS && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: e}
	}
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, d: d}, nil
}

func (d *diskFS) Rename(oldname, newname string) error {
	if d.now() == syscall.EROFS {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EROFS}
	}
	return d.FS.Rename(oldname, newname)
}

type diskFile struct {
	vfs.File
	d *diskFS
}

func (f *diskFile) Write(p []byte) (int, error) {
	switch e := f.d.now(); e {
	case syscall.ENOSPC:
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: e}
	case syscall.EROFS:
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: e}
	}
	return f.File.Write(p)
}

func (f *diskFile) Truncate(size int64) error {
	if e := f.d.now(); e == syscall.EROFS {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: e}
	}
	return f.File.Truncate(size)
}

// logCounter counts log records by level and message.
type logCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Level.String()+" "+r.Message]++
	return nil
}
func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCounter) WithGroup(string) slog.Handler      { return c }
func (c *logCounter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// TestLog_WriteFailure_Recovers fills the disk, makes it read-only, or
// runs out of file descriptors under a log that appends: the failed
// append and the ones after it are refused with ErrUnwritable wrapping
// the cause, Health says why and since when, and once the condition
// clears appends resume by themselves, without a reopen — at the head, no
// byte of the failed write left behind, every acknowledged record in
// place — with one error line for the failure and one for the recovery.
func TestLog_WriteFailure_Recovers(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EMFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			d, mem := newDiskFS()
			logs := &logCounter{n: map[string]int{}}
			o := &Options{FS: d, SegmentBytes: 1 << 10, SyncInterval: 20 * time.Millisecond, Logger: slog.New(logs)}
			l := mustOpen(t, "/p", o)
			defer l.Close()
			appendN(t, l, 0, 20, Fsync)

			d.fault.Store(errno)
			var failed error
			for i := 0; failed == nil; i++ { // EMFILE bites at the next roll
				if i == 1000 {
					t.Fatalf("no append failed under %v", errno)
				}
				_, failed = l.Append(recs(int(l.Head()), 1), InOS)
			}
			if !errors.Is(failed, ErrUnwritable) || !errors.Is(failed, errno) {
				t.Fatalf("append = %v, want ErrUnwritable wrapping %v", failed, errno)
			}
			h := l.Health()
			if h.Writable() || !h.Retrying || h.Failures != 1 || h.Since.IsZero() {
				t.Fatalf("health %+v, want unwritable since now, retrying, one failure", h)
			}
			head := l.Head()
			if _, err := l.Append(recs(int(head), 1), Fsync); !errors.Is(err, ErrUnwritable) {
				t.Fatalf("append while the fault lasts = %v, want ErrUnwritable", err)
			}
			if err := l.Retry(); err == nil {
				t.Fatalf("Retry succeeded while the disk still fails with %v", errno)
			}

			d.fault.Store(syscall.Errno(0))
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := l.Append(recs(int(head), 1), Fsync)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("appends still refused 10 s after the fault cleared: %v (health %+v)", err, l.Health())
				}
				time.Sleep(10 * time.Millisecond)
			}
			appendN(t, l, int(head)+1, 10, InOS)
			if h := l.Health(); !h.Writable() || h.Failures != 1 {
				t.Fatalf("health after recovery %+v", h)
			}
			checkRecords(t, l, 0)
			if n := logs.count("ERROR partition unwritable"); n != 1 {
				t.Errorf("%d error lines for the failure, want 1", n)
			}
			if n := logs.count("WARN partition writable again"); n != 1 {
				t.Errorf("%d lines for the recovery, want 1", n)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if r := mustVerify(t, mem); !r.OK() {
				t.Fatalf("verify after recovery: %v", r.Problems)
			}
			reopened := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 1 << 10})
			defer reopened.Close()
			checkRecords(t, reopened, 0)
		})
	}
}

// TestLog_SyncFailure_Fenced fails an fsync: the kernel may have dropped
// the pages it could not write, so the log does not retry — it stays
// unwritable, says so in Health, and takes appends again once reopened.
func TestLog_SyncFailure_Fenced(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: 0, Kinds: vfs.OpSync, Filter: func(op vfs.Op) bool {
		return armed.Load() && strings.HasSuffix(op.Name, ".log")
	}})
	l := mustOpen(t, "/p", &Options{FS: faulty})
	appendN(t, l, 0, 5, InOS)
	armed.Store(true)
	if _, err := l.Append(recs(5, 1), Fsync); !errors.Is(err, ErrUnwritable) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append with a failing fsync = %v", err)
	}
	if h := l.Health(); h.Writable() || h.Retrying {
		t.Fatalf("health %+v, want unwritable and not retrying", h)
	}
	if err := l.Retry(); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("Retry = %v, want ErrUnwritable (no retry after a failed fsync)", err)
	}
	l.Close()
	l = mustOpen(t, "/p", &Options{FS: mem})
	defer l.Close()
	if _, err := l.Append(recs(int(l.Head()), 1), Fsync); err != nil {
		t.Fatal(err)
	}
}

// TestLog_DiskFull_RealFileSystem fills a real, small file system (a 2
// MiB tmpfs, mounted for the test; skipped where the test may not mount
// one): appends fail with ENOSPC, and once space is freed they resume
// without a reopen, every acknowledged record in place.
func TestLog_DiskFull_RealFileSystem(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the disk-full case is covered through the vfs seam", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	dir := filepath.Join(mnt, "p")
	l := mustOpen(t, dir, &Options{SegmentBytes: 256 << 10, SyncInterval: 20 * time.Millisecond})
	defer l.Close()
	// A file that takes most of the space, as another tenant would.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 1<<20+512<<10))
	f.Close()
	var failed error
	for i := 0; failed == nil; i++ {
		if i == 100_000 {
			t.Fatal("the disk never filled")
		}
		_, failed = l.Append(recs(int(l.Head()), 10), InOS)
	}
	if !errors.Is(failed, ErrUnwritable) || !errors.Is(failed, syscall.ENOSPC) {
		t.Fatalf("append on a full disk = %v, want ErrUnwritable wrapping ENOSPC", failed)
	}
	head := l.Head()
	t.Logf("disk full at offset %d: %v", head, failed)
	if _, err := l.Append(recs(int(head), 1), InOS); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("append while full = %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := l.Append(recs(int(head), 1), Fsync)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("appends still refused 10 s after space came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkRecords(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := mustOpen(t, dir, &Options{SegmentBytes: 256 << 10})
	defer l2.Close() // before the unmount
	checkRecords(t, l2, 0)
	if l2.Head() != head+1 {
		t.Fatalf("reopened at head %d, want %d", l2.Head(), head+1)
	}
}
