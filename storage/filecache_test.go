package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestFileCache_ManyLogs_StayWithinBound: 40 logs of 25 segments each
// (3,000 segment files) share a cache of 60 files. The process never
// holds more than the bound (plus what is in use at once), every record
// reads back, appends after a reopen of every segment's files still land,
// and Close leaves no descriptor behind.
func TestFileCache_ManyLogs_StayWithinBound(t *testing.T) {
	const logs, perLog, bound = 40, 250, 60
	dir := t.TempDir()
	before := openFDs(t)
	cache := NewFileCache(bound)
	o := &Options{SegmentBytes: 512, Files: cache, CallerLocked: true, SyncInterval: time.Hour}
	var ls []*Log
	for i := range logs {
		l := mustOpen(t, filepath.Join(dir, fmt.Sprint(i)), o)
		ls = append(ls, l)
		for j := range perLog {
			if _, err := l.Append(recs(j, 1), InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := ls[0].SegmentCount(); n < 20 {
		t.Fatalf("a log has %d segments, want at least 20 for the test to mean something", n)
	}
	if got := openFDs(t) - before; got > bound+5 {
		t.Fatalf("%d descriptors open for %d logs of %d segments, want at most the bound %d (+5)", got, logs, ls[0].SegmentCount(), bound)
	}
	st := cache.Stats()
	if st.Open > bound || st.Evictions == 0 || st.Misses == 0 {
		t.Fatalf("stats %+v: want at most %d open, and evictions", st, bound)
	}
	// Read everything back, from several goroutines at once.
	var wg sync.WaitGroup
	errs := make(chan error, logs)
	for i, l := range ls {
		wg.Go(func() {
			j := 0
			for rec, err := range l.Records(0) {
				if err != nil {
					errs <- fmt.Errorf("log %d offset %d: %w", i, j, err)
					return
				}
				if !bytes.Equal(rec.Value, value(j)) {
					errs <- fmt.Errorf("log %d offset %d: %q, want %q", i, j, rec.Value, value(j))
					return
				}
				j++
				if j == perLog {
					return
				}
			}
			errs <- fmt.Errorf("log %d: read %d records, want %d", i, j, perLog)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := cache.Stats().Open; got > bound {
		t.Fatalf("%d files open after the readers let go, want at most %d", got, bound)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := cache.Stats(); st.Open != 0 {
		t.Fatalf("%d files still open after every log closed", st.Open)
	}
	if got := openFDs(t); got > before {
		t.Fatalf("%d descriptors open after Close, %d before", got, before)
	}
	// The closed logs reopen whole (their active segments were written
	// through reopened descriptors).
	for i := range logs {
		l := mustOpen(t, filepath.Join(dir, fmt.Sprint(i)), o)
		if l.Head() != perLog || !l.Recovery().Clean {
			t.Fatalf("log %d reopened at head %d (clean %v), want %d", i, l.Head(), l.Recovery().Clean, perLog)
		}
		l.Close()
	}
}

// TestFileCache_ReaderKeepsDeletedSegment: a reader positioned in a
// segment keeps reading it after retention deletes it, though the cache
// (of one file) closes every file it can: the reader's pin holds them.
func TestFileCache_ReaderKeepsDeletedSegment(t *testing.T) {
	cache := NewFileCache(1)
	o := &Options{SegmentBytes: 4 << 20, RetentionBytes: 1, Files: cache, SyncInterval: time.Hour}
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	// Records of 64 KiB: a segment is more than the reader's 1 MiB
	// read-ahead, so reading on needs its file.
	for j := range 200 {
		if _, err := l.Append([]batch.Record{{Value: bigValue(j)}}, InOS); err != nil {
			t.Fatal(err)
		}
	}
	r := l.NewReader(0)
	defer r.Close()
	if _, ok, err := r.TryNext(); err != nil || !ok {
		t.Fatalf("first record: %v, %v", ok, err)
	}
	// An append uses the active segment's files: the cache (of one)
	// would close the reader's.
	if _, err := l.Append(recs(0, 1), InOS); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Retain(); err != nil || n == 0 {
		t.Fatalf("Retain = %d, %v; want segments deleted", n, err)
	}
	for j := 1; ; j++ {
		rec, ok, err := r.TryNext()
		if errors.Is(err, ErrOutOfRange) {
			if j < 2 {
				t.Fatalf("out of range at %d: the held segment was not readable", j)
			}
			break // past the deleted segment, the next is gone too
		}
		if err != nil {
			t.Fatalf("offset %d after retention: %v", j, err)
		}
		if !ok {
			break
		}
		if !bytes.Equal(rec.Value, bigValue(j)) {
			t.Fatalf("offset %d: %.20q…, want %.20q…", j, rec.Value, bigValue(j))
		}
		if j >= 40 {
			return // well past the read-ahead
		}
	}
	t.Fatal("the reader did not get past the read-ahead")
}

// bigValue is a 64 KiB value for offset i.
func bigValue(i int) []byte { return bytes.Repeat(value(i), 64<<10/len(value(i))) }

// TestFileCache_ConcurrentUse: appends, tailing readers, retention and
// compaction on logs sharing a tiny cache, under the race detector.
func TestFileCache_ConcurrentUse(t *testing.T) {
	cache := NewFileCache(4)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		o := &Options{SegmentBytes: 400, RetentionBytes: 4000, Files: cache, SyncInterval: 5 * time.Millisecond, Durability: Interval}
		l := mustOpen(t, filepath.Join(dir, fmt.Sprint(i)), o)
		defer l.Close()
		const n = 400
		wg.Go(func() {
			for j := range n {
				if _, err := l.Append(recs(j, 1), DefaultDurability); err != nil {
					t.Errorf("append %d: %v", j, err)
					return
				}
				if j%50 == 0 {
					l.Retain()
				}
			}
		})
		wg.Go(func() {
			next := int64(0)
			for next < n {
				if err := l.Wait(ctx, next); err != nil {
					t.Errorf("wait: %v", err)
					return
				}
				r := l.NewReader(next)
				for {
					rec, ok, err := r.TryNext()
					if errors.Is(err, ErrOutOfRange) {
						next = l.StartOffset()
						break
					}
					if err != nil {
						t.Errorf("read at %d: %v", r.Offset(), err)
						r.Close()
						return
					}
					if !ok {
						break
					}
					if want := value(int(r.Offset() - 1)); !bytes.Equal(rec.Value, want) {
						t.Errorf("offset %d: %q, want %q", r.Offset()-1, rec.Value, want)
					}
					next = r.Offset()
				}
				r.Close()
			}
		})
	}
	wg.Wait()
}

// TestFileCache_MemFS_CloseAndReopen: on the in-memory file system too,
// a log whose files were evicted again and again closes cleanly, closes
// all its files, and reopens whole.
func TestFileCache_MemFS_CloseAndReopen(t *testing.T) {
	mem := vfs.NewMem()
	cache := NewFileCache(3)
	l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 512, Files: cache, SyncInterval: time.Hour})
	for j := range 40 {
		if _, err := l.Append(recs(j, 1), InOS); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := cache.Stats(); st.Open != 0 || st.Evictions == 0 {
		t.Fatalf("stats after Close: %+v, want nothing open and evictions", st)
	}
	l = mustOpen(t, "/p", &Options{FS: mem, Files: cache})
	defer l.Close()
	if l.Head() != 40 {
		t.Fatalf("head %d after reopen, want 40", l.Head())
	}
}

// TestFileCache_ReaderAcrossCompaction: on a compacted log whose cache
// keeps 3 files, a reader positioned in the first segment reads on
// through a compaction that replaces it: every record it returns is the
// one appended at its offset (the old segment's, from the files it
// pinned, then the cleaned ones'), and the log checks out compacted.
func TestFileCache_ReaderAcrossCompaction(t *testing.T) {
	cache := NewFileCache(3)
	k := newKVLog(t, func(o *Options) { o.Files, o.SegmentBytes = cache, 3<<20 })
	// Records of 64 KiB: a segment is more than the reader's 1 MiB
	// read-ahead, so reading on needs its file.
	for len(k.recs) < 200 {
		off := len(k.recs)
		r := batch.Record{Key: fmt.Appendf(nil, "key-%04d", off%10), Value: bigValue(off)}
		first, err := k.l.Append([]batch.Record{r}, InOS)
		if err != nil {
			t.Fatal(err)
		}
		r.Offset, r.Timestamp = first, time.UnixMilli(k.clock.Load())
		k.recs = append(k.recs, r)
	}
	r := k.l.NewReader(0)
	defer r.Close()
	rec, ok, err := r.TryNext()
	if err != nil || !ok || !bytes.Equal(rec.Value, k.recs[0].Value) {
		t.Fatalf("first record: %q, %v, %v", rec.Value, ok, err)
	}
	if st := k.compact(); st.Segments == 0 {
		t.Fatalf("compaction cleaned nothing: %+v", st)
	}
	prev := int64(0)
	for {
		rec, ok, err := r.TryNext()
		if err != nil {
			t.Fatalf("after offset %d: %v", prev, err)
		}
		if !ok {
			break
		}
		if rec.Offset <= prev || !bytes.Equal(rec.Value, k.recs[rec.Offset].Value) {
			t.Fatalf("offset %d after %d: %.20q…, want %.20q…", rec.Offset, prev, rec.Value, k.recs[rec.Offset].Value)
		}
		prev = rec.Offset
	}
	if prev != int64(len(k.recs))-1 {
		t.Fatalf("the reader stopped at %d, want %d", prev, len(k.recs)-1)
	}
	k.checkCompacted(nil)
	if st := cache.Stats(); st.Evictions == 0 {
		t.Fatalf("no evictions (%+v): the cache did not bite", st)
	}
}

// limitedFS fails OpenFile with EMFILE while max files it opened are
// open, like a process at its RLIMIT_NOFILE.
type limitedFS struct {
	vfs.FS
	mu   sync.Mutex
	open int
	max  int
}

type limitedFile struct {
	vfs.File
	fs   *limitedFS
	once sync.Once
}

func (f *limitedFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open >= f.max {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.open++
	return &limitedFile{File: h, fs: f}, nil
}

func (f *limitedFile) Close() error {
	f.once.Do(func() { f.fs.mu.Lock(); f.fs.open--; f.fs.mu.Unlock() })
	return f.File.Close()
}

// TestFileCache_EMFILE_ClosesIdleFiles: without a bound, a log whose
// process runs out of descriptors (EMFILE at 40 open files) keeps
// appending and rolling — the cache closes idle segment files and opens
// again — and reads every record back.
func TestFileCache_EMFILE_ClosesIdleFiles(t *testing.T) {
	lfs := &limitedFS{FS: vfs.NewMem(), max: 40}
	cache := NewFileCache(0)
	l := mustOpen(t, "/p", &Options{FS: lfs, SegmentBytes: 512, Files: cache, SyncInterval: time.Hour})
	defer l.Close()
	const n = 400
	for j := range n {
		if _, err := l.Append(recs(j, 1), InOS); err != nil {
			t.Fatalf("append %d with %d files open: %v", j, cache.Stats().Open, err)
		}
	}
	if segs := l.SegmentCount(); segs*3 <= lfs.max {
		t.Fatalf("%d segments: not more files than the limit", segs)
	}
	j := 0
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatalf("offset %d: %v", j, err)
		}
		if !bytes.Equal(rec.Value, value(j)) {
			t.Fatalf("offset %d: %q, want %q", j, rec.Value, value(j))
		}
		if j++; j == n {
			break
		}
	}
	if j != n {
		t.Fatalf("read %d records, want %d", j, n)
	}
	if st := cache.Stats(); st.Evictions == 0 {
		t.Fatalf("no evictions (%+v)", st)
	}
}
