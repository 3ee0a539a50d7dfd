package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// flipFileByte flips one bit of the segment file at pos, behind the log's
// back: bit rot, or a stray write.
func flipFileByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
}

// appendBatches appends n batches of one record each and returns the
// file position where each starts in the active segment, and where the
// last ends.
func appendBatches(t *testing.T, l *Log, from, n int) []int64 {
	t.Helper()
	pos := []int64{l.active().size.Load()}
	for i := range n {
		if _, err := l.Append(recs(from+i, 1), InOS); err != nil {
			t.Fatal(err)
		}
		pos = append(pos, l.active().size.Load())
	}
	return pos
}

// What ReadBatches checks (the package doc's Reading section): a batch
// this process wrote is sent as it is, even if the file changed under it
// since, while a batch found on disk at open (in a closed segment, which
// a clean Open does not read) is CRC-checked by the first read — and the
// Reader checks every batch, every time.
func TestReadBatches_ChecksWhatIsNotKnownGood(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 4 << 10}
	l := mustOpen(t, dir, o)
	pos := appendBatches(t, l, 0, 3)
	appendBatches(t, l, 3, 200) // rolls: segment 0 is closed
	if len(l.segments()) < 2 {
		t.Fatal("no roll")
	}
	first := l.segments()[0]
	path := filepath.Join(dir, SegmentFile(0))
	damaged := pos[1] + int64(batch.HeaderSize) // inside the second batch's records
	flipFileByte(t, path, damaged)

	// Written by this process: known good, sent without a CRC check.
	c, err := l.ReadBatches(0, int(pos[3]-pos[0]))
	if err != nil {
		t.Fatal(err)
	}
	if c.Size != pos[3]-pos[0] || c.Next != 3 {
		t.Errorf("written by this process: chunk of %d bytes up to %d, want all %d bytes up to 3", c.Size, c.Next, pos[3]-pos[0])
	}
	c.Release()
	if got, want := first.checked.Load(), first.size.Load(); got != want {
		t.Errorf("written by this process: checked prefix %d, want the size %d", got, want)
	}
	// ReadBatchesVerified checks every batch, as every read did before.
	if c, err := l.ReadBatchesVerified(0, int(pos[3]-pos[0])); err != nil || c.Size != pos[1]-pos[0] {
		t.Errorf("ReadBatchesVerified: chunk of %d bytes, %v; want the first batch only, %d bytes", c.Size, err, pos[1]-pos[0])
	} else {
		c.Release()
	}
	// The Reader still checks.
	var rerr error
	for _, err := range l.Records(0) {
		if err != nil {
			rerr = err
		}
	}
	if !errors.Is(rerr, ErrCorrupt) {
		t.Errorf("Records over the damaged batch: %v, want ErrCorrupt", rerr)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened: what is on disk is checked once, by the first read.
	l = mustOpen(t, dir, o)
	defer l.Close()
	first = l.segments()[0]
	c, err = l.ReadBatches(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c.Size != pos[1]-pos[0] || c.Next != 1 {
		t.Errorf("after reopen: chunk of %d bytes up to %d, want the first batch only (%d bytes, up to 1)", c.Size, c.Next, pos[1]-pos[0])
	}
	c.Release()
	var ce *CorruptError
	if _, err := l.ReadBatches(1, 1<<20); !errors.As(err, &ce) || ce.Pos != pos[1] {
		t.Errorf("after reopen, the damaged batch: %v, want a *CorruptError at %d", err, pos[1])
	}
	if got := first.checked.Load(); got != pos[1] {
		t.Errorf("checked prefix %d, want %d: up to the damage", got, pos[1])
	}

	// Mended (flipped back), it is checked, and known good from then on.
	flipFileByte(t, path, damaged)
	if c, err = l.ReadBatches(1, 1<<20); err != nil || c.Next != first.next.Load() {
		t.Fatalf("after the mend: chunk up to %d, %v; want up to %d", c.Next, err, first.next.Load())
	}
	c.Release()
	if got, want := first.checked.Load(), first.size.Load(); got != want {
		t.Errorf("checked prefix %d, want %d: the whole file", got, want)
	}
}

// ReadBatches over many small batches skips through the sparse index
// (headerWalk.skip) and answers what walking every header answers: the
// longest run of whole batches up to maxBytes, on known-good bytes, on
// reopened bytes, and with a damaged index entry.
func TestReadBatches_SkipMatchesWalk(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{IndexInterval: 512})
	pos := appendBatches(t, l, 0, 3000)
	want := func(from int64, maxBytes int) (int64, int64) { // size, next
		end := from + 1
		for end < int64(len(pos)-1) && pos[end+1]-pos[from] <= int64(maxBytes) {
			end++
		}
		return pos[end] - pos[from], end
	}
	type fetch struct {
		from     int64
		maxBytes int
	}
	fetches := []fetch{{0, 100 << 10}, {17, 70 << 10}, {1000, 200 << 10}, {2990, 1 << 20}, {5, 1}}
	check := func(what string, fetches []fetch) {
		t.Helper()
		for _, tc := range fetches {
			c, err := l.ReadBatches(tc.from, tc.maxBytes)
			if err != nil {
				t.Fatalf("%s: ReadBatches(%d, %d): %v", what, tc.from, tc.maxBytes, err)
			}
			size, next := want(tc.from, tc.maxBytes)
			if c.Pos != pos[tc.from] || c.Size != size || c.Next != next {
				t.Errorf("%s: ReadBatches(%d, %d) = [%d, +%d) up to %d, want [%d, +%d) up to %d",
					what, tc.from, tc.maxBytes, c.Pos, c.Size, c.Next, pos[tc.from], size, next)
			}
			c.Release()
		}
	}
	check("written", fetches)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, &Options{IndexInterval: 512})
	check("reopened, first read", fetches)
	check("reopened, known good", fetches)
	// Index entries past 40 KiB pointing inside a batch: skip refuses
	// them and walks header by header (the fetches start before them).
	x := &l.active().idx
	x.mu.Lock()
	damaged := 0
	for i := range x.offLen() {
		e, err := x.offsetAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if e.pos < 40<<10 {
			continue
		}
		damaged++
		if x.inMemory {
			x.offs[i].pos++
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, segmentName(0, ".index")), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, e.rel), e.pos+1)
		_, err = f.WriteAt(b, int64(i)*offsetEntrySize)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	x.mu.Unlock()
	if damaged == 0 {
		t.Fatal("no index entry past 40 KiB")
	}
	check("damaged index entries", fetches[:2])
	l.Close()
}

// A chunk's file stays readable through its OSFile after retention
// deletes its segment; file systems without descriptors give none.
func TestChunk_OSFile_RetentionDeletesTheSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentBytes: 4 << 10})
	appendBatches(t, l, 0, 200)
	if n := len(l.segments()); n < 3 {
		t.Fatalf("%d segments", n)
	}
	c, err := l.ReadBatches(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	want := make([]byte, c.Size)
	if _, err := c.File.ReadAt(want, c.Pos); err != nil {
		t.Fatal(err)
	}
	f := c.OSFile()
	if f == nil {
		t.Fatal("no *os.File on the real file system")
	}
	if _, err := l.DeleteRecords(l.Head()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SegmentFile(0))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 0 after DeleteRecords: %v, want it deleted", err)
	}
	got := make([]byte, c.Size)
	if _, err := f.ReadAt(got, c.Pos); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the deleted segment's bytes through OSFile: %v, equal %v", err, bytes.Equal(got, want))
	}
	l.Close()

	for name, fsys := range map[string]vfs.FS{"mem": vfs.NewMem(), "faulty": vfs.NewFaulty(vfs.OS(), vfs.FaultyOptions{FailAt: -1})} {
		l := mustOpen(t, t.TempDir(), &Options{FS: fsys})
		appendBatches(t, l, 0, 3)
		c, err := l.ReadBatches(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if f := c.OSFile(); f != nil {
			t.Errorf("%s: OSFile = %v, want nil: faults and simulations are not bypassed", name, f.Name())
		}
		c.Release()
		l.Close()
	}
}

// After a reopen, a fetch from the middle of a segment first checks the
// batches before it (catchUp), so that the checked prefix reaches the
// fetches — and the writer extends it again from there.
func TestReadBatches_CatchesUpAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, nil)
	pos := appendBatches(t, l, 0, 500)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, nil)
	defer l.Close()
	s := l.active()
	if got := s.checked.Load(); got != 0 {
		t.Fatalf("checked prefix %d after reopen, want 0", got)
	}
	c, err := l.ReadBatches(400, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pos != pos[400] || c.Next != 500 {
		t.Errorf("chunk at %d up to %d, want at %d up to 500", c.Pos, c.Next, pos[400])
	}
	c.Release()
	if got := s.checked.Load(); got != pos[500] {
		t.Errorf("checked prefix %d after a fetch from the middle, want the whole %d", got, pos[500])
	}
	appendBatches(t, l, 500, 3)
	if got, want := s.checked.Load(), s.size.Load(); got != want {
		t.Errorf("after appends, checked prefix %d, want the size %d", got, want)
	}
}
