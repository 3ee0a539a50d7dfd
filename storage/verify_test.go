package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// verifyFixture writes a partition of 200 records in 2-record batches
// over several segments, with dense indexes, and closes it cleanly. It
// returns the file system and each segment's batches: base offset →
// byte position.
func verifyFixture(t *testing.T) (*vfs.MemFS, []int64) {
	t.Helper()
	mem := vfs.NewMem()
	ms := int64(1_700_000_000_000)
	clock := func() time.Time { ms += 10; return time.UnixMilli(ms) }
	l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 2 << 10, IndexInterval: 200, Now: clock})
	for i := 0; i < 200; i += 2 {
		if _, err := l.Append(recs(i, 2), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var bases []int64
	names, _ := mem.ReadDir("/p")
	for _, n := range names {
		if b, ok := SegmentBase(n); ok && strings.HasSuffix(n, ".log") {
			bases = append(bases, b)
		}
	}
	if len(bases) < 4 {
		t.Fatalf("%d segments, want at least 4", len(bases))
	}
	return mem, bases
}

func mustVerify(t *testing.T, fsys vfs.FS) *VerifyReport {
	t.Helper()
	r, err := Verify("/p", &VerifyOptions{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// onlyProblem checks that r reports exactly one problem, of kind, in a
// file whose name ends with file, at pos.
func onlyProblem(t *testing.T, r *VerifyReport, kind ProblemKind, file string, pos int64) Problem {
	t.Helper()
	if len(r.Problems) != 1 {
		t.Fatalf("%d problems, want 1 %s: %v", len(r.Problems), kind, r.Problems)
	}
	p := r.Problems[0]
	if p.Kind != kind || !strings.HasSuffix(p.File, file) || p.Pos != pos {
		t.Fatalf("problem %v, want %s in %s at byte %d", p, kind, file, pos)
	}
	return p
}

func flipByte(t *testing.T, mem *vfs.MemFS, name string, pos int64) {
	t.Helper()
	b, err := mem.FileBytes(name)
	if err != nil {
		t.Fatal(err)
	}
	b[pos] ^= 0x40
	if err := mem.SetFileBytes(name, b); err != nil {
		t.Fatal(err)
	}
}

func seg(base int64, ext string) string { return filepath.Join("/p", segmentName(base, ext)) }

func TestVerify_Clean(t *testing.T) {
	mem, bases := verifyFixture(t)
	r := mustVerify(t, mem)
	if !r.OK() || r.Records != 200 || r.Batches != 100 || r.Start != 0 || r.Head != 200 || r.Segments != len(bases) {
		t.Fatalf("report %+v", r)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes on a clean partition: %v", r.Notes)
	}
}

func TestVerify_BadCRC(t *testing.T) {
	mem, bases := verifyFixture(t)
	// The third batch of the second segment: its value bytes.
	size := batchSize(t, mem, bases[1])
	flipByte(t, mem, seg(bases[1], ".log"), 2*size+size-3)
	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemBatch, segmentName(bases[1], ".log"), 2*size)
	if p.From != bases[1]+4 || p.To != bases[1]+6 || !errors.Is(errorOf(t, mem, bases[1]), batch.ErrCorrupt) {
		t.Errorf("problem %v: want offsets %d to %d", p, bases[1]+4, bases[1]+5)
	}
	if r.Records != 198 {
		t.Errorf("%d valid records, want 198", r.Records)
	}
}

// errorOf is the error of the first damaged stretch ScanSegment finds.
func errorOf(t *testing.T, fsys vfs.FS, base int64) error {
	for sb, err := range ScanSegment(fsys, seg(base, ".log"), base) {
		if err != nil {
			t.Fatal(err)
		}
		if sb.Damaged() {
			return sb.Err
		}
	}
	return nil
}

func batchSize(t *testing.T, fsys vfs.FS, base int64) int64 {
	for sb, err := range ScanSegment(fsys, seg(base, ".log"), base) {
		if err != nil {
			t.Fatal(err)
		}
		return sb.Size
	}
	t.Fatal("empty segment")
	return 0
}

func TestVerify_BaseOffset(t *testing.T) {
	mem, bases := verifyFixture(t)
	size := batchSize(t, mem, bases[2])
	flipByte(t, mem, seg(bases[2], ".log"), size+7) // the second batch's base offset: not under the CRC
	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemBatch, segmentName(bases[2], ".log"), size)
	if !strings.Contains(p.Detail, "base offset") || p.From != bases[2]+2 || p.To != bases[2]+4 {
		t.Errorf("problem %v", p)
	}
}

func TestVerify_DamagedLastBatchOfClosedSegment(t *testing.T) {
	mem, bases := verifyFixture(t)
	b, _ := mem.FileBytes(seg(bases[0], ".log"))
	size := batchSize(t, mem, bases[0])
	flipByte(t, mem, seg(bases[0], ".log"), int64(len(b))-size+9) // the last batch's length
	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemBatch, segmentName(bases[0], ".log"), int64(len(b))-size)
	if p.From != bases[1]-2 || p.To != bases[1] {
		t.Errorf("problem %v: want offsets %d to %d", p, bases[1]-2, bases[1]-1)
	}
}

func TestVerify_TornTail(t *testing.T) {
	mem := vfs.NewMem()
	// write(2): the file is exactly its batches, which the test cuts and
	// damages by byte (the mapped path allocates past them).
	l := mustOpen(t, "/p", &Options{FS: vfs.WithoutMapping(mem)})
	appendN(t, l, 0, 10, Fsync)
	appendN(t, l, 10, 10, InOS)
	crashed := mem.Crash(vfs.CrashOptions{})
	l.Close()
	// A torn write: half of one more batch after what was fsync'd.
	b, _ := crashed.FileBytes(seg(0, ".log"))
	whole := len(b)
	extra := mustBatch(t, recs(10, 10))
	crashed.SetFileBytes(seg(0, ".log"), append(b, extra[:len(extra)/2]...))
	// Only written bytes count as fsync'd: the checkpoint is Open's.
	r := mustVerify(t, crashed)
	p := onlyProblem(t, r, ProblemTornTail, segmentName(0, ".log"), int64(whole))
	if p.From != 10 || r.Head != 10 {
		t.Errorf("problem %v, head %d", p, r.Head)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "not closed cleanly") {
		t.Errorf("notes %q", r.Notes)
	}
}

func TestVerify_CorruptInSyncedRange(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	appendN(t, l, 0, 10, Fsync)
	appendN(t, l, 10, 1, Fsync)
	l.Close()
	b, _ := mem.FileBytes(seg(0, ".log"))
	flipByte(t, mem, seg(0, ".log"), int64(len(b))-2) // the last batch: fsync'd, checkpointed
	r := mustVerify(t, mem)
	onlyProblem(t, r, ProblemBatch, segmentName(0, ".log"), int64(len(b))-int64(len(mustBatch(t, recs(10, 1)))))
}

func TestVerify_Index(t *testing.T) {
	mem, bases := verifyFixture(t)
	idx := seg(bases[1], ".index")
	flipByte(t, mem, idx, 2*offsetEntrySize+3) // the third entry's relative offset
	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemIndex, segmentName(bases[1], ".index"), 2*offsetEntrySize)
	if !strings.Contains(p.Detail, "leads to the batch at offset") {
		t.Errorf("problem %v", p)
	}
	mem, bases = verifyFixture(t)
	idx = seg(bases[1], ".index")
	b, _ := mem.FileBytes(idx)
	last := int64(len(b) - offsetEntrySize)
	binary.BigEndian.PutUint32(b[last+4:], binary.BigEndian.Uint32(b[last+4:])+1) // one byte into its batch
	mem.SetFileBytes(idx, b)
	onlyProblem(t, mustVerify(t, mem), ProblemIndex, segmentName(bases[1], ".index"), last)

	mem, bases = verifyFixture(t)
	b, _ = mem.FileBytes(idx)
	mem.SetFileBytes(idx, b[:len(b)-3])
	onlyProblem(t, mustVerify(t, mem), ProblemIndex, segmentName(bases[1], ".index"), int64(len(b)-offsetEntrySize))
}

func TestVerify_TimeIndex(t *testing.T) {
	mem, bases := verifyFixture(t)
	ti := seg(bases[2], ".timeindex")
	b, _ := mem.FileBytes(ti)
	if len(b) < 2*timeEntrySize {
		t.Fatalf("time index of %d bytes", len(b))
	}
	flipByte(t, mem, ti, timeEntrySize+7) // the second entry's timestamp, low byte
	r := mustVerify(t, mem)
	onlyProblem(t, r, ProblemTimeIndex, segmentName(bases[2], ".timeindex"), timeEntrySize)

	// Without its last entry, a closed segment looks older than it is.
	mem, bases = verifyFixture(t)
	b, _ = mem.FileBytes(ti)
	mem.SetFileBytes(ti, b[:len(b)-timeEntrySize])
	p := onlyProblem(t, mustVerify(t, mem), ProblemTimeIndex, segmentName(bases[2], ".timeindex"), -1)
	if !strings.Contains(p.Detail, "newest timestamp") {
		t.Errorf("problem %v", p)
	}
}

func TestVerify_MissingSegment(t *testing.T) {
	mem, bases := verifyFixture(t)
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		mem.Remove(seg(bases[2], ext))
	}
	p := onlyProblem(t, mustVerify(t, mem), ProblemOffsets, segmentName(bases[3], ".log"), 0)
	if p.From != bases[2] || p.To != bases[3] {
		t.Errorf("problem %v", p)
	}
}

func TestVerify_Checkpoint(t *testing.T) {
	mem, _ := verifyFixture(t)
	flipByte(t, mem, "/p/CHECKPOINT", 10)
	onlyProblem(t, mustVerify(t, mem), ProblemCheckpoint, "CHECKPOINT", 0)

	mem, bases := verifyFixture(t)
	active := seg(bases[len(bases)-1], ".log")
	b, _ := mem.FileBytes(active)
	mem.SetFileBytes(active, b[:len(b)-1])
	r := mustVerify(t, mem)
	var kinds []ProblemKind
	for _, p := range r.Problems {
		kinds = append(kinds, p.Kind)
	}
	if fmt.Sprint(kinds) != "[corrupt batch checkpoint]" { // damage in the fsync'd range is corruption
		t.Errorf("problems %v", r.Problems)
	}
}

func TestVerify_Format(t *testing.T) {
	mem, _ := verifyFixture(t)
	mem.Remove("/p/FORMAT")
	onlyProblem(t, mustVerify(t, mem), ProblemFile, "FORMAT", -1)

	mem.MkdirAll("/q", 0o755)
	if _, err := Verify("/q", &VerifyOptions{FS: mem}); !errors.Is(err, ErrNotPartition) {
		t.Errorf("verify of an empty directory: %v", err)
	}
}

func TestVerify_Locked(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	defer l.Close()
	if _, err := Verify("/p", &VerifyOptions{FS: mem}); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("verify of an open log: %v", err)
	}
}

func TestVerify_Notes(t *testing.T) {
	mem, bases := verifyFixture(t)
	for _, n := range []string{"CHECKPOINT.tmp", "00000000000000000000.log.corrupt-20250101T000000", "notes.txt"} {
		f, _ := mem.OpenFile("/p/"+n, 0o101, 0o644) // O_WRONLY|O_CREATE
		f.Close()
	}
	mem.Remove(seg(bases[0], ".log")) // leaves its index files, and moves the log start
	r := mustVerify(t, mem)
	if !r.OK() || len(r.Notes) != 5 || r.Start != bases[1] {
		t.Errorf("problems %v, notes %q, start %d", r.Problems, r.Notes, r.Start)
	}
}

func TestScanSegment_Resync(t *testing.T) {
	mem, bases := verifyFixture(t)
	size := batchSize(t, mem, bases[1])
	name := seg(bases[1], ".log")
	b, _ := mem.FileBytes(name)
	// Garbage over the second batch's length field and into the third:
	// the scan must find the fourth by itself.
	for i := size + 8; i < 2*size+20; i++ {
		b[i] = 0xff
	}
	mem.SetFileBytes(name, b)
	var got []string
	for sb, err := range ScanSegment(mem, name, bases[1]) {
		if err != nil {
			t.Fatal(err)
		}
		if sb.Damaged() {
			got = append(got, fmt.Sprintf("damage %d+%d", sb.Pos, sb.Size))
		} else if sb.Pos < 5*size {
			got = append(got, fmt.Sprintf("batch %d at %d", sb.Header.BaseOffset-bases[1], sb.Pos))
		}
	}
	want := fmt.Sprintf("[batch 0 at 0 damage %d+%d batch 6 at %d batch 8 at %d]", size, 2*size, 3*size, 4*size)
	if fmt.Sprint(got) != want {
		t.Errorf("scan %v\nwant %s", got, want)
	}
}

// A log closed cleanly with its active segment, then reopened and
// appended to, has a time index entry at the last offset of the segment
// as it was at the close, mid-file: it is right.
func TestVerify_TimeIndexAfterCleanClose(t *testing.T) {
	mem := vfs.NewMem()
	ms := int64(1_700_000_000_000)
	clock := func() time.Time { ms += 10; return time.UnixMilli(ms) }
	o := &Options{FS: mem, IndexInterval: 1000, Now: clock}
	l := mustOpen(t, "/p", o)
	for i := 0; i < 12; i += 3 {
		if _, err := l.Append(recs(i, 3), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l = mustOpen(t, "/p", o)
	for i := 12; i < 24; i += 3 {
		if _, err := l.Append(recs(i, 3), DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if r := mustVerify(t, mem); !r.OK() {
		t.Fatalf("problems %v", r.Problems)
	}
}

// TestVerify_FencedIsWhatOpenRefuses: Verify's Fenced is set exactly when
// Open refuses the partition (a data directory then fences it), for every
// file Open reads before it serves: FORMAT, CHECKPOINT, the segments.
func TestVerify_FencedIsWhatOpenRefuses(t *testing.T) {
	put := func(name, data string) func(*vfs.MemFS, []int64) {
		return func(mem *vfs.MemFS, _ []int64) { mem.SetFileBytes(name, []byte(data)) }
	}
	tests := []struct {
		name   string
		damage func(*vfs.MemFS, []int64)
		fenced bool
	}{
		{"clean", func(*vfs.MemFS, []int64) {}, false},
		{"FORMAT missing", func(mem *vfs.MemFS, _ []int64) { mem.Remove("/p/FORMAT") }, true},
		{"FORMAT of a later version", put("/p/FORMAT", "passbook-partition 9\n"), true},
		{"FORMAT not passbook's", put("/p/FORMAT", "something else\n"), true},
		{"CHECKPOINT torn (fails its CRC)", func(mem *vfs.MemFS, _ []int64) { flipByte(t, mem, "/p/CHECKPOINT", 10) }, false},
		{"CHECKPOINT with a damaged magic", func(mem *vfs.MemFS, _ []int64) { flipByte(t, mem, "/p/CHECKPOINT", 1) }, true},
		{"CHECKPOINT of the wrong size", func(mem *vfs.MemFS, _ []int64) {
			b, _ := mem.FileBytes("/p/CHECKPOINT")
			mem.SetFileBytes("/p/CHECKPOINT", b[:20])
		}, true},
		{"fsync'd bytes of the active segment gone", func(mem *vfs.MemFS, bases []int64) {
			active := seg(bases[len(bases)-1], ".log")
			b, _ := mem.FileBytes(active)
			mem.SetFileBytes(active, b[:len(b)-1])
		}, true},
		{"a torn tail past the last fsync", func(mem *vfs.MemFS, bases []int64) {
			active := seg(bases[len(bases)-1], ".log")
			b, _ := mem.FileBytes(active)
			mem.SetFileBytes(active, append(b, "half a batch"...))
		}, false},
		{"a damaged offset index", func(mem *vfs.MemFS, bases []int64) { flipByte(t, mem, seg(bases[0], ".index"), 3) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem, bases := verifyFixture(t)
			tt.damage(mem, bases)
			r := mustVerify(t, mem)
			l, err := Open("/p", &Options{FS: mem})
			if err == nil {
				l.Close()
			}
			if (err != nil) != tt.fenced || (r.Fenced != "") != tt.fenced {
				t.Errorf("Open: %v; Verify's Fenced: %q; want fenced %v (problems %v)", err, r.Fenced, tt.fenced, r.Problems)
			}
		})
	}
}
