package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/passbook-log/passbook/batch"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

var repairTime = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func mustRepair(t *testing.T, fsys vfs.FS, dry bool) *RepairReport {
	t.Helper()
	r, err := Repair("/p", &RepairOptions{FS: fsys, DryRun: dry, Now: repairTime})
	if err != nil {
		t.Fatal(err)
	}
	if !dry && (r.After == nil || !r.After.OK()) {
		t.Fatalf("still wrong after repair: %v", r.After.Problems)
	}
	return r
}

// actions lists the report's actions as "what file-name from-to".
func actions(r *RepairReport) []string {
	var s []string
	for _, a := range r.Actions {
		name := a.File[strings.LastIndexByte(a.File, '/')+1:]
		s = append(s, fmt.Sprintf("%s %s %d-%d", a.What, name, a.From, a.To))
	}
	return s
}

func wantActions(t *testing.T, r *RepairReport, want ...string) {
	t.Helper()
	if got := actions(r); !slices.Equal(got, want) {
		t.Errorf("actions:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// reopenCheck opens the repaired log, checks its extent and every record
// in it, and that it appends at its head.
func reopenCheck(t *testing.T, fsys vfs.FS, start, head int64) {
	t.Helper()
	l := mustOpen(t, "/p", &Options{FS: fsys})
	defer l.Close()
	if l.StartOffset() != start || l.Head() != head {
		t.Fatalf("log is [%d, %d), want [%d, %d)", l.StartOffset(), l.Head(), start, head)
	}
	checkRecords(t, l, start)
	if off, err := l.Append(recs(int(head), 1), DefaultDurability); err != nil || off != head {
		t.Fatalf("append after repair: offset %d, %v", off, err)
	}
}

func TestRepair_Clean(t *testing.T) {
	mem, _ := verifyFixture(t)
	r := mustRepair(t, mem, false)
	wantActions(t, r)
	if r.Lost != 0 || r.Start != 0 || r.Head != 200 {
		t.Errorf("report %+v", r)
	}
}

func TestRepair_TornTail(t *testing.T) {
	mem := vfs.NewMem()
	// write(2): the file is exactly its batches, which the test cuts and
	// damages by byte (the mapped path allocates past them).
	l := mustOpen(t, "/p", &Options{FS: vfs.WithoutMapping(mem)})
	appendN(t, l, 0, 10, Fsync)
	crashed := mem.Crash(vfs.CrashOptions{})
	l.Close()
	b, _ := crashed.FileBytes(seg(0, ".log"))
	extra := mustBatch(t, recs(10, 10))
	crashed.SetFileBytes(seg(0, ".log"), append(b, extra[:len(extra)/2]...))
	r := mustRepair(t, crashed, false)
	wantActions(t, r, "truncate 00000000000000000000.log 0-0")
	saved, err := crashed.FileBytes(seg(0, ".log.torn-20260102T030405Z"))
	if err != nil || !bytes.Equal(saved, extra[:len(extra)/2]) {
		t.Errorf("torn bytes saved: %d bytes, %v", len(saved), err)
	}
	reopenCheck(t, crashed, 0, 10)
}

func TestRepair_Index(t *testing.T) {
	mem, bases := verifyFixture(t)
	flipByte(t, mem, seg(bases[1], ".index"), 2*offsetEntrySize+3)
	flipByte(t, mem, seg(bases[2], ".timeindex"), timeEntrySize+7)
	r := mustRepair(t, mem, false)
	wantActions(t, r,
		fmt.Sprintf("rebuild index %s 0-0", segmentName(bases[1], ".index")),
		fmt.Sprintf("rebuild index %s 0-0", segmentName(bases[2], ".index")))
	reopenCheck(t, mem, 0, 200)
}

func TestRepair_CorruptMiddleSegment(t *testing.T) {
	mem, bases := verifyFixture(t)
	size := batchSize(t, mem, bases[2])
	orig, _ := mem.FileBytes(seg(bases[2], ".log"))
	flipByte(t, mem, seg(bases[2], ".log"), size+size/2) // its second batch
	dry := mustRepair(t, mem, true)
	after, _ := mem.FileBytes(seg(bases[2], ".log"))
	if bytes.Equal(after, orig) || dry.After != nil {
		t.Fatal("dry run changed the segment, or verified after")
	}
	r := mustRepair(t, mem, false)
	if !slices.Equal(actions(dry), actions(r)) {
		t.Errorf("dry run %v, run %v", actions(dry), actions(r))
	}
	salvaged := bases[2] + 4
	wantActions(t, r,
		fmt.Sprintf("move aside %s %d-%d", segmentName(bases[0], ".log"), bases[0], bases[1]),
		fmt.Sprintf("move aside %s %d-%d", segmentName(bases[1], ".log"), bases[1], bases[2]),
		fmt.Sprintf("move aside %s %d-%d", segmentName(bases[2], ".log"), bases[2], salvaged),
		fmt.Sprintf("salvage %s 0-0", segmentName(salvaged, ".log")))
	if r.Lost != salvaged || r.Start != salvaged || r.Head != 200 {
		t.Errorf("lost %d, log [%d, %d)", r.Lost, r.Start, r.Head)
	}
	// Nothing is deleted: the damaged segment is there, byte for byte.
	aside, err := mem.FileBytes(seg(bases[2], ".log.corrupt-20260102T030405Z"))
	if err != nil || !bytes.Equal(aside, after) {
		t.Errorf("moved-aside segment: %v", err)
	}
	if _, err := mem.Stat(seg(bases[0], ".index.aside-20260102T030405Z")); err != nil {
		t.Errorf("intact segment's index not moved aside: %v", err)
	}
	reopenCheck(t, mem, salvaged, 200)
	wantActions(t, mustRepair(t, mem, false)) // a second repair finds nothing
}

func TestRepair_CorruptActiveSegment(t *testing.T) {
	mem, bases := verifyFixture(t)
	last := seg(bases[len(bases)-1], ".log")
	b, _ := mem.FileBytes(last)
	flipByte(t, mem, last, int64(len(b))-3) // the last batch, fsync'd and checkpointed
	r := mustRepair(t, mem, false)
	n := len(bases)
	if len(r.Actions) != n+1 || r.Actions[n].What != "create" || r.Start != 200 || r.Head != 200 || r.Lost != 200 {
		t.Fatalf("actions %v, log [%d, %d), lost %d", actions(r), r.Start, r.Head, r.Lost)
	}
	reopenCheck(t, mem, 200, 200) // the head stays: no offset is reused
}

func TestRepair_MissingSegmentAndCheckpoint(t *testing.T) {
	mem, bases := verifyFixture(t)
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		mem.Remove(seg(bases[1], ext))
	}
	flipByte(t, mem, "/p/CHECKPOINT", 3)
	r := mustRepair(t, mem, false)
	wantActions(t, r,
		"move aside CHECKPOINT 0-0",
		fmt.Sprintf("move aside %s %d-%d", segmentName(bases[0], ".log"), bases[0], bases[2]))
	reopenCheck(t, mem, bases[2], 200)
}

// TestRepair_RandomFlips flips one random byte of a random segment or
// index file of a closed partition, plain or compacted, many times:
// Verify reports it (every byte of a batch is checked, the fields outside
// the CRC too: see frame.go), readers never return a
// record that differs from what was appended, and after Repair the log
// opens, verifies clean and holds only the records appended, at their
// offsets, and its head never goes back.
func TestRepair_RandomFlips(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	plain := map[int64]string{}
	for i := range 200 {
		plain[int64(i)] = string(value(i))
	}
	for round := range 120 {
		var mem *vfs.MemFS
		want, head := plain, int64(200)
		if round%2 == 0 {
			mem, _ = verifyFixture(t)
		} else {
			mem, want = compactedFixture(t)
			head = 300
		}
		var bases []int64
		names, _ := mem.ReadDir("/p")
		for _, n := range names {
			if b, ok := SegmentBase(n); ok && strings.HasSuffix(n, ".log") {
				bases = append(bases, b)
			}
		}
		base := bases[rng.IntN(len(bases))]
		ext := []string{".log", ".index", ".timeindex"}[rng.IntN(3)]
		name := seg(base, ext)
		b, _ := mem.FileBytes(name)
		if len(b) == 0 {
			continue
		}
		pos := rng.Int64N(int64(len(b)))
		b[pos] ^= byte(1 + rng.IntN(255))
		mem.SetFileBytes(name, b)
		what := fmt.Sprintf("round %d: %s byte %d", round, name, pos)
		if r := mustVerify(t, mem); r.OK() {
			t.Fatalf("%s: verify found nothing", what)
		}
		// Readers return the right records or ErrCorrupt.
		if l, err := Open("/p", &Options{FS: mem}); err == nil {
			for off := int64(0); off < head; off += 37 {
				for rec, err := range l.Records(off) {
					if err != nil {
						if !errors.Is(err, ErrCorrupt) {
							t.Fatalf("%s: read error %v", what, err)
						}
						break
					}
					if v, ok := want[rec.Offset]; !ok || string(rec.Value) != v {
						t.Fatalf("%s: offset %d read as %q", what, rec.Offset, rec.Value)
					}
				}
			}
			l.Close()
		}
		r := mustRepair(t, mem, false)
		l := mustOpen(t, "/p", &Options{FS: mem})
		n := 0
		for rec, err := range l.Records(l.StartOffset()) {
			if v, ok := want[rec.Offset]; err != nil || !ok || string(rec.Value) != v {
				t.Fatalf("%s: after repair %v: offset %d %q, %v", what, actions(r), rec.Offset, rec.Value, err)
			}
			n++
		}
		kept := 0
		for off := range want {
			if off >= r.Start {
				kept++
			}
		}
		// The head never goes back (no offset is reused); it may move on
		// past offsets a damaged header's counts claimed.
		if n != kept || l.Head() < head || r.Lost != r.Start {
			t.Fatalf("%s: after repair %v: %d records (want %d), head %d, lost %d", what, actions(r), n, kept, l.Head(), r.Lost)
		}
		l.Close()
	}
}

// compactedFixture writes a compacted partition: 300 keyed records over
// 10 keys in small segments, cleaned once, so that its closed segments'
// batches skip offsets.
func compactedFixture(t *testing.T) (*vfs.MemFS, map[int64]string) {
	t.Helper()
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 2 << 10, IndexInterval: 200, Compact: true, CleanerInterval: time.Hour})
	for i := range 300 {
		if _, err := l.Append([]batch.Record{{Key: fmt.Appendf(nil, "k%d", i%10), Value: value(i)}}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	kept := map[int64]string{}
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		kept[rec.Offset] = string(rec.Value)
	}
	if len(kept) >= 300 {
		t.Fatalf("compaction kept %d records", len(kept))
	}
	l.Close()
	return mem, kept
}

func TestVerify_Compacted(t *testing.T) {
	mem, kept := compactedFixture(t)
	r := mustVerify(t, mem)
	if !r.OK() || r.Head != 300 || r.Records != int64(len(kept)) {
		t.Fatalf("problems %v, head %d, %d records (want %d)", r.Problems, r.Head, r.Records, len(kept))
	}
	// The gap rule holds for cleaned segments only: the same partition
	// at format 1 has its gaps reported.
	mem.SetFileBytes("/p/FORMAT", []byte(formatLine))
	if r := mustVerify(t, mem); r.OK() {
		t.Error("gaps in a format 1 partition not reported")
	}
}

func TestRepair_Compacted(t *testing.T) {
	mem, kept := compactedFixture(t)
	flipByte(t, mem, "/p/CLEANER", 9)
	if r := mustVerify(t, mem); len(r.Problems) != 1 || !strings.HasSuffix(r.Problems[0].File, "CLEANER") {
		t.Fatalf("problems %v", r.Problems)
	}
	r := mustRepair(t, mem, false)
	wantActions(t, r, "rewrite CLEANER 0-0")
	l := mustOpen(t, "/p", &Options{FS: mem, Compact: true, CleanerInterval: time.Hour})
	defer l.Close()
	n := 0
	for rec, err := range l.Records(0) {
		if err != nil || kept[rec.Offset] != string(rec.Value) {
			t.Fatalf("offset %d %q, %v", rec.Offset, rec.Value, err)
		}
		n++
	}
	if n != len(kept) || l.Head() != 300 {
		t.Errorf("%d records, head %d", n, l.Head())
	}
	if _, err := l.Compact(context.Background()); err != nil {
		t.Errorf("compaction after repair: %v", err)
	}
}

func TestRepair_PendingSwap(t *testing.T) {
	mem := vfs.NewMem()
	// The first rename of a cleaned file fails: CLEANER has committed
	// the swap, the files are still under their .cleaned names.
	faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{Kinds: vfs.OpRename, Filter: func(op vfs.Op) bool { return strings.HasSuffix(op.Name, ".cleaned") }})
	l := mustOpen(t, "/p", &Options{FS: faulty, SegmentBytes: 2 << 10, Compact: true, CleanerInterval: time.Hour})
	for i := range 300 {
		if _, err := l.Append([]batch.Record{{Key: fmt.Appendf(nil, "k%d", i%10), Value: value(i)}}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Compact(context.Background()); err == nil {
		t.Fatal("compaction did not fail")
	}
	l.Close()
	r := mustVerify(t, mem)
	if !r.OK() || r.Head != 300 {
		t.Fatalf("problems %v, head %d", r.Problems, r.Head)
	}
	rep := mustRepair(t, mem, false)
	if len(rep.Actions) != 1 || rep.Actions[0].What != "complete swap" {
		t.Fatalf("actions %v", actions(rep))
	}
	names, _ := mem.ReadDir("/p")
	for _, n := range names {
		if strings.HasSuffix(n, ".cleaned") {
			t.Errorf("%s left", n)
		}
	}
	reopen := mustOpen(t, "/p", &Options{FS: mem, Compact: true, CleanerInterval: time.Hour})
	defer reopen.Close()
	for _, err := range reopen.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
	}
}
