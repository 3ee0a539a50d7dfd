package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

func value(i int) []byte { return fmt.Appendf(nil, "record-%08d", i) }

func recs(from, n int) []batch.Record {
	rs := make([]batch.Record, n)
	for i := range rs {
		rs[i] = batch.Record{Value: value(from + i)}
	}
	return rs
}

func mustOpen(t testing.TB, dir string, o *Options) *Log {
	t.Helper()
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkRecords reads the log from 'from' and checks that it holds exactly
// the values value(from)…value(head−1) at dense offsets.
func checkRecords(t testing.TB, l *Log, from int64) {
	t.Helper()
	want := from
	for rec, err := range l.Records(from) {
		if err != nil {
			t.Fatalf("read at %d: %v", want, err)
		}
		if rec.Offset != want || !bytes.Equal(rec.Value, value(int(want))) {
			t.Fatalf("record at %d: offset %d value %q", want, rec.Offset, rec.Value)
		}
		want++
	}
	if want != l.Head() {
		t.Fatalf("read up to %d, head is %d", want, l.Head())
	}
}

func TestLog_AppendRead(t *testing.T) {
	for _, d := range []Durability{InOS, Fsync, Interval} {
		t.Run(d.String(), func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), &Options{Durability: d, SegmentBytes: 64 << 10, IndexInterval: 512})
			defer l.Close()
			for i := 0; i < 5000; {
				n := 1 + i%7
				off, err := l.Append(recs(i, n), DefaultDurability)
				if err != nil {
					t.Fatal(err)
				}
				if off != int64(i) {
					t.Fatalf("append %d got offset %d", i, off)
				}
				i += n
			}
			if l.SegmentCount() < 3 {
				t.Fatalf("segments = %d, want several", l.SegmentCount())
			}
			checkRecords(t, l, 0)
			for _, from := range []int64{1, 511, 2500, 4999, 5000} {
				checkRecords(t, l, from)
			}
		})
	}
}

func TestLog_Reopen(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 32 << 10, IndexInterval: 256}
	l := mustOpen(t, dir, o)
	for i := 0; i < 3000; i += 10 {
		if _, err := l.Append(recs(i, 10), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, o)
	if !l.Recovery().Clean {
		t.Errorf("recovery after Close = %+v, want clean", l.Recovery())
	}
	if l.Head() != 3000 {
		t.Fatalf("head after reopen = %d", l.Head())
	}
	checkRecords(t, l, 0)
	checkRecords(t, l, 1234)
	if _, err := l.Append(recs(3000, 5), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, l, 2990)
	l.Close()
}

func TestLog_SecondOpenerLocked(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, nil)
	defer l.Close()
	_, err := Open(dir, nil)
	if !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestLog_BadInput(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{MaxRecordBytes: 1000})
	defer l.Close()
	if _, err := l.Append(recs(0, 3), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	big := []batch.Record{{Value: value(3)}, {Value: make([]byte, 1001)}}
	valid, _ := batch.Append(nil, recs(3, 2), batch.Options{})
	badCRC := bytes.Clone(valid)
	badCRC[len(badCRC)-1] ^= 1
	for _, tc := range []struct {
		name   string
		append func() error
		want   error
	}{
		{"record too large", func() error { _, err := l.Append(big, DefaultDurability); return err }, ErrRecordTooLarge},
		{"no records", func() error { _, err := l.Append(nil, DefaultDurability); return err }, ErrEmpty},
		{"bad crc", func() error { _, err := l.AppendBatch(badCRC, DefaultDurability); return err }, ErrInvalidBatch},
		{"truncated batch", func() error { _, err := l.AppendBatch(valid[:len(valid)-3], DefaultDurability); return err }, ErrInvalidBatch},
		{"garbage", func() error { _, err := l.AppendBatch([]byte("hello"), DefaultDurability); return err }, ErrInvalidBatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.append(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if l.Head() != 3 || l.Err() != nil {
				t.Fatalf("after a rejected append: head %d, err %v", l.Head(), l.Err())
			}
		})
	}
	for _, off := range []int64{-1, 4} {
		r := l.NewReader(off)
		_, _, err := r.TryNext()
		var oor *OutOfRangeError
		if !errors.As(err, &oor) || oor.Start != 0 || oor.Head != 3 {
			t.Errorf("read at %d: %v, want OutOfRangeError [0, 3]", off, err)
		}
		r.Close()
	}
	// A valid Kafka batch is stored with its base offset rewritten.
	if off, err := l.AppendBatch(bytes.Clone(valid), DefaultDurability); err != nil || off != 3 {
		t.Fatalf("AppendBatch = %d, %v", off, err)
	}
	checkRecords(t, l, 0)
}

func TestOpen_NotAPartition(t *testing.T) {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/d", 0o755)
	f, _ := fsys.OpenFile("/d/notes.txt", 0x41, 0o644) // O_WRONLY|O_CREATE
	f.Close()
	if _, err := Open("/d", &Options{FS: fsys}); !errors.Is(err, ErrNotPartition) {
		t.Fatalf("Open = %v, want ErrNotPartition", err)
	}
	fsys.MkdirAll("/e", 0o755)
	vfs.WriteFileAtomic(fsys, "/e", formatFile, []byte("passbook-partition 9\n"))
	if _, err := Open("/e", &Options{FS: fsys}); !errors.Is(err, ErrFormatVersion) {
		t.Fatalf("Open = %v, want ErrFormatVersion", err)
	}
}

func TestReader_FollowWaits(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan int64)
	go func() {
		for rec, err := range l.Follow(ctx, 0) {
			if err != nil {
				close(got)
				return
			}
			got <- rec.Offset
		}
	}()
	for i := range 3 {
		if _, err := l.Append(recs(i, 1), DefaultDurability); err != nil {
			t.Fatal(err)
		}
		if off := <-got; off != int64(i) {
			t.Fatalf("follow got %d, want %d", off, i)
		}
	}
}

func TestLog_OffsetForTime(t *testing.T) {
	// On the memory file system: 1,000 appends of 8 KiB segments cost
	// 9–12 s of fsyncs on a busy disk, and the index is what is tested.
	l := mustOpen(t, "/p", &Options{FS: vfs.NewMem(), SegmentBytes: 8 << 10, IndexInterval: 128})
	defer l.Close()
	base := time.UnixMilli(1_000_000)
	for i := range 1000 {
		r := batch.Record{Value: value(i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if _, err := l.Append([]batch.Record{r}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{base.Add(-time.Hour), 0},
		{base, 0},
		{base.Add(500 * time.Second), 500},
		{base.Add(500*time.Second + time.Millisecond), 501},
		{base.Add(999 * time.Second), 999},
		{base.Add(time.Hour), 1000},
	} {
		if got, err := l.OffsetForTime(tc.at); err != nil || got != tc.want {
			t.Errorf("OffsetForTime(%v) = %d, %v; want %d", tc.at.Sub(base), got, err, tc.want)
		}
	}
}

func TestLog_Retention(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	clock := func() time.Time { return now }
	l := mustOpen(t, t.TempDir(), &Options{SegmentBytes: 4 << 10, RetentionBytes: 16 << 10, RetentionAge: time.Hour, Now: clock})
	defer l.Close()
	for i := 0; i < 2000; i += 10 {
		if _, err := l.Append(recs(i, 10), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	n, err := l.Retain()
	if err != nil || n == 0 {
		t.Fatalf("Retain = %d, %v", n, err)
	}
	if l.Size() > 16<<10+4<<10 || l.StartOffset() == 0 {
		t.Fatalf("after retention: size %d, start %d", l.Size(), l.StartOffset())
	}
	checkRecords(t, l, l.StartOffset())
	r := l.NewReader(0)
	if _, _, err := r.TryNext(); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	r.Close()
	now = now.Add(2 * time.Hour)
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	if l.SegmentCount() != 1 || l.StartOffset() != l.active().base {
		t.Fatalf("after age retention: %d segments, start %d", l.SegmentCount(), l.StartOffset())
	}
	checkRecords(t, l, l.StartOffset())
}

func TestLog_ReadBatches(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{SegmentBytes: 4 << 10})
	defer l.Close()
	for i := 0; i < 500; i += 10 {
		l.Append(recs(i, 10), DefaultDurability)
	}
	for _, tc := range []struct {
		from     int64
		maxBytes int
	}{{0, 1}, {5, 1}, {0, 1 << 20}, {123, 2000}, {499, 10}} {
		c, err := l.ReadBatches(tc.from, tc.maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		c.Release()
		want := tc.from
		for b := buf.Bytes(); len(b) > 0; {
			h, err := batch.Check(b)
			if err != nil {
				t.Fatal(err)
			}
			for rec, err := range batch.Records(b[:h.Size()]) {
				if err != nil {
					t.Fatal(err)
				}
				if rec.Offset < tc.from {
					continue
				}
				if rec.Offset != want || !bytes.Equal(rec.Value, value(int(want))) {
					t.Fatalf("from %d: record %d = %q", tc.from, rec.Offset, rec.Value)
				}
				want++
			}
			b = b[h.Size():]
		}
		if want != c.Next || want <= tc.from || (tc.maxBytes > 1 && buf.Len() > tc.maxBytes && want-tc.from > 10) {
			t.Fatalf("from %d max %d: read to %d, Next %d, %d bytes", tc.from, tc.maxBytes, want, c.Next, buf.Len())
		}
	}
	if c, err := l.ReadBatches(500, 100); err != nil || c.Size != 0 || c.Next != 500 {
		t.Fatalf("at the head: %+v, %v", c, err)
	}
}

// TestReader_TailsRacingAppends tails a log with Follow and with
// ReadBatches while 20,000 single records are appended to small segments,
// so that readers meet the active segment's end and its rolls at every
// moment: each sees every record once, at dense offsets, and never
// reports corruption. (A Follow reader once read a segment's size before
// its end offset and reported "segment ends before offset N".)
func TestReader_TailsRacingAppends(t *testing.T) {
	const n = 20_000
	l := mustOpen(t, t.TempDir(), &Options{SegmentBytes: 16 << 10, IndexInterval: 512})
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	go func() { // Follow
		want := int64(0)
		for rec, err := range l.Follow(ctx, 0) {
			if err != nil {
				errs <- fmt.Errorf("follow at %d: %w", want, err)
				return
			}
			if rec.Offset != want || string(rec.Value) != string(value(int(want))) {
				errs <- fmt.Errorf("follow: offset %d value %q, want %d", rec.Offset, rec.Value, want)
				return
			}
			if want++; want == n {
				errs <- nil
				return
			}
		}
		errs <- fmt.Errorf("follow ended at %d: %v", want, ctx.Err())
	}()
	go func() { // ReadBatches, as a Kafka Fetch serves them
		from := int64(0)
		var buf []byte
		for from < n {
			c, err := l.ReadBatches(from, 4096)
			if err != nil {
				errs <- fmt.Errorf("ReadBatches(%d): %w", from, err)
				return
			}
			if c.Size == 0 {
				c.Release()
				if err := l.Wait(ctx, from); err != nil {
					errs <- fmt.Errorf("wait at %d: %w", from, err)
					return
				}
				continue
			}
			buf = append(buf[:0], make([]byte, c.Size)...)
			_, err = c.File.ReadAt(buf, c.Pos)
			c.Release()
			if err != nil {
				errs <- err
				return
			}
			for len(buf) > 0 {
				h, err := batch.Check(buf)
				if err != nil {
					errs <- fmt.Errorf("ReadBatches(%d): %w", from, err)
					return
				}
				if h.BaseOffset > from || h.NextOffset() <= from {
					errs <- fmt.Errorf("ReadBatches: batch [%d, %d] does not hold offset %d", h.BaseOffset, h.LastOffset(), from)
					return
				}
				from = h.NextOffset()
				buf = buf[h.Size():]
			}
			if from != c.Next {
				errs <- fmt.Errorf("ReadBatches: chunk ends at %d, says %d", from, c.Next)
				return
			}
		}
		errs <- nil
	}()
	for i := range n {
		if _, err := l.Append(recs(i, 1), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
