package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// kvLog is a compacted log under test and what was appended to it.
type kvLog struct {
	t     testing.TB
	mem   *vfs.MemFS
	o     *Options
	clock atomic.Int64 // ms
	l     *Log
	recs  []batch.Record // by offset
}

func newKVLog(t testing.TB, tweak func(o *Options)) *kvLog {
	k := &kvLog{t: t, mem: vfs.NewMem()}
	k.clock.Store(1_700_000_000_000)
	k.o = &Options{
		FS: k.mem, Compact: true, SegmentBytes: 1 << 10, IndexInterval: 100,
		DeleteRetention: time.Hour, SyncInterval: time.Hour, CleanerInterval: time.Hour,
		Now: func() time.Time { return time.UnixMilli(k.clock.Load()) },
	}
	if tweak != nil {
		tweak(k.o)
	}
	k.l = mustOpen(t, "/p", k.o)
	t.Cleanup(func() {
		if k.l != nil {
			k.l.Close()
		}
	})
	return k
}

// put appends key=value (value "" is a tombstone) as one batch each.
func (k *kvLog) put(pairs ...string) {
	k.t.Helper()
	for _, p := range pairs {
		key, val, _ := strings.Cut(p, "=")
		r := batch.Record{Key: []byte(key)}
		if val != "" {
			r.Value = []byte(val)
		}
		off, err := k.l.Append([]batch.Record{r}, InOS)
		if err != nil {
			k.t.Fatal(err)
		}
		if off != int64(len(k.recs)) {
			k.t.Fatalf("append at %d, want %d", off, len(k.recs))
		}
		r.Offset, r.Timestamp = off, time.UnixMilli(k.clock.Load())
		k.recs = append(k.recs, r)
	}
}

// putN appends n records over the given number of keys, round robin, in
// batches of per, values naming their offset.
func (k *kvLog) putN(n, keys, per int) {
	k.t.Helper()
	for len(k.recs) < n {
		var rs []batch.Record
		for range min(per, n-len(k.recs)) {
			off := len(k.recs) + len(rs)
			rs = append(rs, batch.Record{Key: fmt.Appendf(nil, "key-%04d", off%keys), Value: fmt.Appendf(nil, "value-%08d", off)})
		}
		first, err := k.l.Append(rs, InOS)
		if err != nil {
			k.t.Fatal(err)
		}
		for i := range rs {
			rs[i].Offset, rs[i].Timestamp = first+int64(i), time.UnixMilli(k.clock.Load())
		}
		k.recs = append(k.recs, rs...)
	}
}

func (k *kvLog) compact() CompactStats {
	k.t.Helper()
	st, err := k.l.Compact(context.Background())
	if err != nil {
		k.t.Fatalf("compact: %v", err)
	}
	return st
}

func (k *kvLog) reopen() {
	k.t.Helper()
	if err := k.l.Close(); err != nil {
		k.t.Fatal(err)
	}
	k.l = mustOpen(k.t, "/p", k.o)
}

// read reads from offset from to the head and checks each record against
// what was appended at its offset, and that offsets increase strictly.
func (k *kvLog) read(from int64) []int64 {
	k.t.Helper()
	return readChecked(k.t, k.l, from, k.recs)
}

// tb is what readChecked and checkChunks need of a *testing.T or a
// *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func readChecked(t tb, l *Log, from int64, recs []batch.Record) []int64 {
	t.Helper()
	var offs []int64
	prev := from - 1
	for rec, err := range l.Records(from) {
		if err != nil {
			t.Fatalf("read from %d after %d: %v", from, prev, err)
		}
		if rec.Offset <= prev || rec.Offset >= int64(len(recs)) {
			t.Fatalf("read from %d: offset %d after %d (head %d)", from, rec.Offset, prev, len(recs))
		}
		w := recs[rec.Offset]
		if err := sameRecord(rec, modelRecord{key: w.Key, value: w.Value, headers: w.Headers, ms: w.Timestamp.UnixMilli()}); err != nil {
			t.Fatalf("read from %d: offset %d: %v", from, rec.Offset, err)
		}
		offs = append(offs, rec.Offset)
		prev = rec.Offset
	}
	return offs
}

// newest returns, per key, the offset of its newest record.
func newest(recs []batch.Record) map[string]int64 {
	m := map[string]int64{}
	for i, r := range recs {
		if r.Key != nil {
			m[string(r.Key)] = int64(i)
		}
	}
	return m
}

// checkCompacted checks a log just compacted: every key's newest record
// is there (tombstones unless expired says so), every record at or after
// the cleaned point is there, and below it no key appears twice.
func (k *kvLog) checkCompacted(expired func(off int64) bool) []int64 {
	k.t.Helper()
	offs := k.read(0)
	have := map[int64]bool{}
	for _, o := range offs {
		have[o] = true
	}
	for key, off := range newest(k.recs) {
		gone := k.recs[off].Tombstone() && expired != nil && expired(off)
		if have[off] == gone {
			k.t.Fatalf("key %s: newest record at %d present %t, want %t", key, off, have[off], !gone)
		}
	}
	cleaned := k.l.CleanerStats().CleanedTo
	seen := map[string]bool{}
	for _, o := range offs {
		if o >= cleaned {
			break
		}
		key := string(k.recs[o].Key)
		if seen[key] {
			k.t.Fatalf("key %s twice below the cleaned point %d", key, cleaned)
		}
		seen[key] = true
	}
	for o := max(cleaned, k.l.StartOffset()); o < k.l.Head(); o++ {
		if !have[o] {
			k.t.Fatalf("offset %d at or after the cleaned point %d is gone", o, cleaned)
		}
	}
	return offs
}

func TestLog_Compact_NewestPerKey(t *testing.T) {
	k := newKVLog(t, nil)
	k.putN(3000, 50, 7)
	before := k.l.Size()
	st := k.compact()
	offs := k.checkCompacted(nil)
	activeBase := k.l.active().base
	if st.CleanedTo != activeBase || st.Passes != 1 || st.Keys != 50 || st.RecordsRemoved == 0 {
		t.Fatalf("stats %+v, active segment at %d", st, activeBase)
	}
	if st.BytesBefore != before-k.l.active().size.Load() || st.BytesAfter >= st.BytesBefore/4 || k.l.Size() != before-(st.BytesBefore-st.BytesAfter) {
		t.Fatalf("stats %+v: size %d before, %d after", st, before, k.l.Size())
	}
	if got := int64(len(offs)); got != int64(len(k.recs))-st.RecordsRemoved {
		t.Fatalf("%d records read, %d appended, %d removed", got, len(k.recs), st.RecordsRemoved)
	}
	if k.l.Head() != 3000 || k.l.StartOffset() != 0 {
		t.Fatalf("log [%d, %d)", k.l.StartOffset(), k.l.Head())
	}
	// Appends go on, and a second compaction merges what the first left.
	k.putN(3200, 50, 7)
	segs := k.l.SegmentCount()
	k.compact()
	k.checkCompacted(nil)
	if k.l.SegmentCount() >= segs {
		t.Fatalf("%d segments after the second compaction, %d before: no merge", k.l.SegmentCount(), segs)
	}
	k.reopen()
	if r := k.l.Recovery(); !r.Clean {
		t.Fatalf("recovery after a clean close: %+v", r)
	}
	k.checkCompacted(nil)
	if b, _ := k.mem.FileBytes("/p/FORMAT"); string(b) != formatLine2 {
		t.Fatalf("FORMAT %q after compaction, want %q", b, formatLine2)
	}
}

// TestLog_Compact_ActiveSegmentNeverCleaned: superseded records in the
// active segment stay, however many.
func TestLog_Compact_ActiveSegmentNeverCleaned(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.SegmentBytes = 1 << 20 })
	k.putN(500, 3, 10)
	st := k.compact()
	if st.Segments != 0 || st.RecordsRemoved != 0 || len(k.read(0)) != 500 {
		t.Fatalf("compaction of a log with one segment: %+v", st)
	}
}

func TestLog_Compact_NoKey(t *testing.T) {
	k := newKVLog(t, nil)
	k.put("a=1")
	if _, err := k.l.Append([]batch.Record{{Key: []byte("b"), Value: []byte("2")}, {Value: []byte("keyless")}}, InOS); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Append of a keyless record = %v, want ErrNoKey", err)
	}
	b := mustBatch(t, []batch.Record{{Key: []byte("c"), Value: []byte("3")}, {Value: []byte("keyless")}})
	if _, err := k.l.AppendBatch(b, InOS); !errors.Is(err, ErrNoKey) || !errors.Is(err, batch.ErrNoKey) {
		t.Fatalf("AppendBatch of a keyless record = %v, want ErrNoKey", err)
	}
	t.Logf("error: %v", func() error { _, err := k.l.AppendBatch(b, InOS); return err }())
	if k.l.Head() != 1 || k.l.Err() != nil {
		t.Fatalf("after refused appends: head %d, err %v", k.l.Head(), k.l.Err())
	}
	// A log that is not compacted takes them, and refuses Compact.
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	if _, err := l.Append([]batch.Record{{Value: []byte("keyless")}}, InOS); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, ErrNotCompacted) {
		t.Fatalf("Compact of a log without Options.Compact = %v", err)
	}
}

// TestLog_Compact_Tombstones: a tombstone removes the key's older records
// at once, stays while DeleteRetention has not passed since the cleaner
// first saw it, and then goes, leaving nothing of its key.
func TestLog_Compact_Tombstones(t *testing.T) {
	k := newKVLog(t, nil)
	k.put("a=1", "b=1", "a=2", "b=", "c=1")
	k.putN(200, 7, 20) // more keys, and rolls: the tombstone's segment closes
	k.put("c=2")
	k.compact()
	firstSeen := k.clock.Load()
	offs := k.checkCompacted(nil)
	if !slices.Contains(offs, 3) || slices.Contains(offs, 1) {
		t.Fatalf("after the first compaction: %v; want the tombstone at 3 and not b=1 at 1", offs)
	}
	k.clock.Add(time.Hour.Milliseconds() - 1)
	k.compact()
	if offs := k.read(0); !slices.Contains(offs, 3) {
		t.Fatalf("tombstone gone before DeleteRetention: %v", offs)
	}
	k.clock.Add(1)
	st := k.compact()
	offs = k.checkCompacted(func(off int64) bool { return k.clock.Load()-firstSeen >= time.Hour.Milliseconds() })
	if slices.Contains(offs, 3) || st.TombstonesRemoved != 1 {
		t.Fatalf("tombstone still there after DeleteRetention, or %d removed: %v", st.TombstonesRemoved, offs)
	}
	for _, o := range offs {
		if string(k.recs[o].Key) == "b" {
			t.Fatalf("key b, deleted, has a record at %d", o)
		}
	}
	k.reopen()
	k.checkCompacted(func(int64) bool { return true })
}

// TestLog_Compact_MultiPass: keys that do not fit in the key map take
// several passes, which end where a fault-free single pass ends.
func TestLog_Compact_MultiPass(t *testing.T) {
	var got [][]int64
	for _, buf := range []int{minCleanerBuffer, 1 << 20} {
		k := newKVLog(t, func(o *Options) { o.CleanerBufferBytes = buf })
		k.putN(2000, 100, 9)
		k.put("key-0003=", "key-0004=") // tombstones too
		k.putN(2100, 100, 9)
		st := k.compact()
		if buf == minCleanerBuffer && st.Passes < 5 || buf != minCleanerBuffer && st.Passes != 1 {
			t.Fatalf("buffer %d: %d passes", buf, st.Passes)
		}
		if st.MapBytes > buf {
			t.Fatalf("map of %d bytes over the budget %d", st.MapBytes, buf)
		}
		got = append(got, k.checkCompacted(nil))
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("small buffer kept %v\nlarge buffer kept %v", got[0], got[1])
	}
}

// TestReader_InAGap: a reader from any offset, gaps included, starts at
// the first record kept at or after it, and ReadBatches serves the
// batches holding it, empty batches included, whose records decode at
// their offsets.
func TestReader_InAGap(t *testing.T) {
	k := newKVLog(t, nil)
	k.putN(700, 20, 6)
	k.compact()
	kept := k.read(0)
	for from := int64(0); from <= k.l.Head(); from++ {
		i, _ := slices.BinarySearch(kept, from)
		got := k.read(from)
		if !slices.Equal(got, kept[i:]) {
			t.Fatalf("read from %d: %v, want %v", from, got, kept[i:])
		}
		r := k.l.NewReader(from)
		rec, ok, err := r.TryNext()
		if i < len(kept) && (!ok || err != nil || rec.Offset != kept[i] || r.Offset() != kept[i]+1) {
			t.Fatalf("reader from %d: %d, %t, %v; offset %d", from, rec.Offset, ok, err, r.Offset())
		}
		r.Close()
		for _, maxBytes := range []int{1, 300, 1 << 20} {
			checkChunks(t, k.l, from, maxBytes, kept[i:], k.recs)
		}
	}
}

// checkChunks follows ReadBatches from offset from, chunk after chunk, as
// a Kafka consumer does, and checks that the records at or after from are
// exactly want.
func checkChunks(t tb, l *Log, from int64, maxBytes int, want []int64, recs []batch.Record) {
	t.Helper()
	var got []int64
	for next := from; next < l.Head(); {
		c, err := l.ReadBatches(next, maxBytes)
		if err != nil {
			t.Fatalf("ReadBatches(%d, %d): %v", next, maxBytes, err)
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			t.Fatalf("%v", err)
		}
		c.Release()
		if c.Size == 0 || c.Next <= next {
			t.Fatalf("ReadBatches(%d, %d): %d bytes, next %d", next, maxBytes, c.Size, c.Next)
		}
		for b := buf.Bytes(); len(b) > 0; {
			h, err := batch.Check(b)
			if err != nil {
				t.Fatalf("%v", err)
			}
			for rec, err := range batch.Records(b[:h.Size()]) {
				if err != nil {
					t.Fatalf("%v", err)
				}
				if rec.Offset < next {
					continue
				}
				if rec.Offset > h.LastOffset() || !bytes.Equal(rec.Value, recs[rec.Offset].Value) {
					t.Fatalf("chunk from %d: record at %d of batch [%d, %d]", next, rec.Offset, h.BaseOffset, h.LastOffset())
				}
				got = append(got, rec.Offset)
			}
			b = b[h.Size():]
		}
		next = c.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chunks from %d (max %d bytes): %v, want %v", from, maxBytes, got, want)
	}
}

// TestLog_Compact_Background: the cleaner runs by itself once the dirty
// ratio reaches MinDirtyRatio.
func TestLog_Compact_Background(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.CleanerInterval = 5 * time.Millisecond; o.MinDirtyRatio = 0.5 })
	k.putN(3000, 10, 10)
	deadline := time.Now().Add(10 * time.Second)
	for k.l.CleanerStats().Runs == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no background compaction: %+v", k.l.CleanerStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cs := k.l.CleanerStats()
	if cs.Last.RecordsRemoved == 0 || cs.BytesCleaned == 0 || cs.CleanedTo == 0 || cs.Last.DirtyRatio < 0.5 {
		t.Fatalf("cleaner stats %+v", cs)
	}
	k.l.Close()
	k.l = mustOpen(t, "/p", k.o)
	k.checkCompacted(nil)
}

// TestLog_Compact_Throttle: CleanerIORate holds the cleaner's reads and
// writes to about that many bytes a second.
func TestLog_Compact_Throttle(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.SegmentBytes = 64 << 10; o.CleanerIORate = 8 << 20 })
	k.putN(40_000, 100, 100)
	st := k.compact()
	io := st.BytesRead + st.BytesWritten
	if min := time.Duration(float64(io-throttleCheck) / float64(k.o.CleanerIORate) * float64(time.Second)); st.Duration < min {
		t.Fatalf("%d bytes of I/O in %v, at most %d bytes/s should take %v", io, st.Duration, k.o.CleanerIORate, min)
	}
	t.Logf("%d bytes of I/O in %v", io, st.Duration)
}

// TestLog_Compact_Cancel: a cancelled context stops a compaction, leaving
// the log as it was, or part cleaned; it goes on next time.
func TestLog_Compact_Cancel(t *testing.T) {
	k := newKVLog(t, nil)
	k.putN(3000, 30, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.l.Compact(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Compact(cancelled) = %v", err)
	}
	if names, _ := k.mem.ReadDir("/p"); slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, cleanedSuffix) }) {
		t.Fatalf("cleaned files left: %v", names)
	}
	k.read(0)
	k.compact()
	k.checkCompacted(nil)
}

// TestLog_Compact_Retention: compact,delete — retention deletes cleaned
// segments like any other, and compaction goes on after it.
func TestLog_Compact_Retention(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.RetentionBytes = 4 << 10 })
	k.putN(2000, 40, 5)
	k.compact()
	if _, err := k.l.Retain(); err != nil {
		t.Fatal(err)
	}
	k.putN(4000, 40, 5)
	if _, err := k.l.Retain(); err != nil {
		t.Fatal(err)
	}
	if k.l.StartOffset() == 0 {
		t.Fatal("retention deleted nothing")
	}
	k.compact()
	k.read(k.l.StartOffset())
}

func TestCleanerState_Encode(t *testing.T) {
	c := cleanerState{cleaned: 10, rewritten: 20, horizon: 5, swapBase: 7, swapEnd: 20, marks: []tombMark{{end: 10, ms: 99, tombstones: 3}}}
	got, err := decodeCleaner(c.encode())
	if err != nil || got.cleaned != 10 || got.rewritten != 20 || got.horizon != 5 || got.swapBase != 7 || got.swapEnd != 20 || !slices.Equal(got.marks, c.marks) {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", c, got, err)
	}
	b := c.encode()
	b[10] ^= 1
	if _, err := decodeCleaner(b); err == nil {
		t.Fatal("a flipped byte decodes")
	}
}

func TestKeyMap(t *testing.T) {
	m := newKeyMap(1<<20, 1000)
	for i := range 50_000 {
		if !m.put(fmt.Appendf(nil, "k%d", i%20_000), 1000+int64(i)) {
			t.Fatalf("full at %d", i)
		}
	}
	if m.n != 20_000 {
		t.Fatalf("%d keys, want 20000", m.n)
	}
	for i := range 20_000 {
		want := 1000 + int64(40_000+i) // the last put of key i
		if i >= 10_000 {
			want = 1000 + int64(20_000+i)
		}
		if off, ok := m.get(fmt.Appendf(nil, "k%d", i)); !ok || off != want {
			t.Fatalf("k%d: %d, %t; want %d", i, off, ok, want)
		}
	}
	if _, ok := m.get([]byte("nope")); ok {
		t.Fatal("a key never put is found")
	}
	small := newKeyMap(minCleanerBuffer, 0)
	n := 0
	for small.put(fmt.Appendf(nil, "k%d", n), int64(n)) {
		n++
	}
	if n != minCleanerBuffer/keySlotBytes*3/4 || small.bytes() != minCleanerBuffer {
		t.Fatalf("a map of %d bytes took %d keys", small.bytes(), n)
	}
}

// TestLog_Compact_Concurrent compacts over and over while a writer
// appends, readers follow the log and fetch chunks, and retention and
// time lookups run: no reader sees an offset go backwards or a record
// that differs from what was appended there, whatever segment it read
// it from (run it with -race).
func TestLog_Compact_Concurrent(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.RetentionBytes = 32 << 10; o.SegmentBytes = 2 << 10 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	value := func(off int64) []byte { return fmt.Appendf(nil, "value-%08d", off) }
	n := int64(0)
	run(func() error { // the writer
		rs := make([]batch.Record, 1+n%5)
		for i := range rs {
			rs[i] = batch.Record{Key: fmt.Appendf(nil, "k%d", (n+int64(i))%40), Value: value(n + int64(i))}
		}
		off, err := k.l.Append(rs, InOS)
		n += int64(len(rs))
		if err == nil && off != n-int64(len(rs)) {
			err = fmt.Errorf("append at %d, want %d", off, n-int64(len(rs)))
		}
		return err
	})
	run(func() error { // a reader from the start
		prev := int64(-1)
		for rec, err := range k.l.Records(k.l.StartOffset()) {
			if errors.Is(err, ErrOutOfRange) {
				return nil // retention overtook it
			}
			if err != nil {
				return err
			}
			if rec.Offset <= prev || !bytes.Equal(rec.Value, value(rec.Offset)) {
				return fmt.Errorf("read %q at %d after %d", rec.Value, rec.Offset, prev)
			}
			prev = rec.Offset
		}
		return nil
	})
	run(func() error { // a fetcher
		for next := k.l.StartOffset(); next < k.l.Head(); {
			c, err := k.l.ReadBatches(next, 1500)
			if errors.Is(err, ErrOutOfRange) {
				return nil
			}
			if err != nil {
				return err
			}
			buf := make([]byte, c.Size)
			_, err = c.File.ReadAt(buf, c.Pos)
			c.Release()
			if err != nil {
				return err
			}
			if _, err := batch.Check(buf); err != nil {
				return fmt.Errorf("chunk from %d: %w", next, err)
			}
			next = c.Next
		}
		return nil
	})
	run(func() error { // retention and time lookups
		if _, err := k.l.Retain(); err != nil {
			return err
		}
		_, err := k.l.OffsetForTime(time.UnixMilli(k.clock.Load()))
		return err
	})
	began := time.Now()
	runs := 0
	for ; time.Since(began) < 400*time.Millisecond || runs < 5 || k.l.StartOffset() == 0; runs++ {
		if time.Since(began) > 20*time.Second {
			t.Fatalf("%d compactions, start %d after 20 s", runs, k.l.StartOffset())
		}
		if _, err := k.l.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d compactions, %d records appended, log [%d, %d) in %d segments", runs, n, k.l.StartOffset(), k.l.Head(), k.l.SegmentCount())
}
