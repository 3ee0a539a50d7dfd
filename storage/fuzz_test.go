package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// FuzzRecover writes arbitrary bytes into a partition on a MemFS — as its
// active segment (with no checkpoint, one that claims half of it was
// fsync'd, or a clean one), as a closed segment followed by an empty
// active one (one the cleaner rewrote, or not), or as an index or time
// index of a valid segment — and opens it. Open must fail with an error
// matching ErrCorrupt, or open a log that reads back, from its start and
// from offsets inside, only records of CRC-valid batches chained densely
// from the segment base, each at its offset and with its bytes, until
// either the head or an error matching ErrCorrupt. Records run densely
// inside each batch too, but in a segment the cleaner rewrote, where they
// only increase inside the batch's span (the gap rule of the package
// doc). The log must then take an append and reopen cleanly to the same
// head.
//
// With fixCRC the CRC of every batch the length fields delimit is
// recomputed first, so that the fuzzer explores batches whose checksums
// hold but whose contents lie.
//
// The seed corpus is in testdata/fuzz/FuzzRecover;
// PASSBOOK_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzRecover_Seeds rewrites it.
func FuzzRecover(f *testing.F) {
	f.Fuzz(func(t *testing.T, variant uint8, fixCRC bool, data []byte) {
		checkRecover(t, variant, fixCRC, data)
	})
}

// fuzzBase is the base offset of the fuzzed segment: not 0, so that
// offsets are checked relative to it.
const fuzzBase = 100

// Variants of FuzzRecover: where the fuzzed bytes go.
const (
	fuzzActive          = iota // the only segment, no CHECKPOINT: a crash before any checkpoint
	fuzzActiveHalfSync         // the only segment; CHECKPOINT says its first half was fsync'd
	fuzzActiveClean            // the only segment; CHECKPOINT says it was closed cleanly at its size
	fuzzClosed                 // a closed segment, followed by an empty active one
	fuzzIndexActive            // the .index of a valid, cleanly closed active segment
	fuzzIndexClosed            // the .index of a valid closed segment
	fuzzTimeIndexClosed        // the .timeindex of a valid closed segment
	fuzzClosedCleaned          // a closed segment the cleaner rewrote, followed by an empty active one
	fuzzVariants
)

func fuzzOptions(fsys vfs.FS) *Options {
	return &Options{FS: fsys, IndexInterval: 64, SyncInterval: time.Hour}
}

// validSegment is a segment of batches starting at fuzzBase, with every
// codec, keys, nil values and headers, and its index files as the log
// writes them with fuzzOptions.
func validSegment() (seg, index, timeIndex []byte) {
	v := validSegmentOnce()
	return v[0], v[1], v[2]
}

var validSegmentOnce = sync.OnceValue(func() [3][]byte {
	var seg []byte
	next := int64(fuzzBase)
	ms := time.UnixMilli(1_700_000_000_000)
	for i, codec := range []batch.Codec{batch.None, batch.Gzip, batch.None, batch.Snappy, batch.LZ4, batch.None, batch.Zstd, batch.None, batch.None, batch.None} {
		rs := make([]batch.Record, 1+i%4)
		for j := range rs {
			rs[j] = batch.Record{Value: fmt.Appendf(nil, "value-%d", next+int64(j)), Timestamp: ms.Add(time.Duration(i) * time.Second)}
			if j%2 == 1 {
				rs[j].Key = fmt.Appendf(nil, "key-%d", j)
				rs[j].Headers = []batch.RecordHeader{{Key: "h", Value: []byte("v")}}
			}
			if i == 5 {
				rs[j].Value = nil // tombstones
			}
		}
		var err error
		seg, err = batch.Append(seg, rs, batch.Options{BaseOffset: next, Codec: codec})
		if err != nil {
			panic(err)
		}
		next += int64(len(rs))
	}
	// Let the log write the indexes: open it as an unclean active
	// segment (it rebuilds them) and close it.
	mem := vfs.NewMem()
	writePartition(mem, seg, nil, nil, nil, false)
	l, err := Open("/p", fuzzOptions(mem))
	if err != nil {
		panic(err)
	}
	if l.Head() != next {
		panic(fmt.Sprintf("valid segment: head %d, want %d", l.Head(), next))
	}
	if err := l.Close(); err != nil {
		panic(err)
	}
	index, _ := mem.FileBytes("/p/" + segmentName(fuzzBase, ".index"))
	timeIndex, _ := mem.FileBytes("/p/" + segmentName(fuzzBase, ".timeindex"))
	return [3][]byte{seg, index, timeIndex}
})

// writePartition lays out a partition in /p whose first segment, at
// fuzzBase, holds seg (with index files when given), optionally followed
// by an empty active segment, with the CHECKPOINT cp if not nil.
func writePartition(mem *vfs.MemFS, seg, index, timeIndex []byte, cp *checkpoint, closed bool) {
	writePartitionCleaned(mem, seg, index, timeIndex, cp, closed, false)
}

// writePartitionCleaned is writePartition; with cleaned, the partition is
// of format 2 and its CLEANER says the cleaner rewrote the first segment.
func writePartitionCleaned(mem *vfs.MemFS, seg, index, timeIndex []byte, cp *checkpoint, closed, cleaned bool) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	put := func(name string, data []byte) {
		f, err := mem.OpenFile("/p/"+name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		must(err)
		_, err = f.Write(data)
		must(err)
		must(f.Sync())
		must(f.Close())
	}
	must(mem.MkdirAll("/p", 0o755))
	put(formatFile, []byte(formatLine))
	if cleaned {
		put(formatFile, []byte(formatLine2))
	}
	put(segmentName(fuzzBase, ".log"), seg)
	if index != nil {
		put(segmentName(fuzzBase, ".index"), index)
	}
	if timeIndex != nil {
		put(segmentName(fuzzBase, ".timeindex"), timeIndex)
	}
	if closed {
		_, next, _, _ := validPrefix(seg, cleaned)
		for _, ext := range []string{".log", ".index", ".timeindex"} {
			put(segmentName(next, ext), nil)
		}
		if cleaned {
			put(cleanerFile, cleanerState{cleaned: next, rewritten: next}.encode())
		}
	}
	if cp != nil {
		put(checkpointFile, cp.encode())
	}
	must(mem.SyncDir("/p"))
}

// fixCRCs recomputes the CRC of every batch that the length fields
// delimit, from the start of b.
func fixCRCs(b []byte) {
	for pos := 0; pos+batch.HeaderSize <= len(b); {
		size := int(int32(binary.BigEndian.Uint32(b[pos+8:]))) + batch.LengthOverhead
		if size < batch.HeaderSize || size > len(b)-pos {
			return
		}
		binary.BigEndian.PutUint32(b[pos+17:], crc32.Checksum(b[pos+21:pos+size], castagnoli))
		pos += size
	}
}

// validPrefix decodes seg independently of the log. It follows the chain
// of batches from the start of seg while each has a valid CRC, the base
// offset that continues the chain from fuzzBase, and as many records as
// its offset range — or, in a segment the cleaner rewrote, at most as
// many; it stops at the first batch that does not. want holds the
// records of those batches that decode at their offsets base, base+1, …
// — or, cleaned, at offsets increasing inside the batch's span — up to
// the first that does not. whole is the base offset of the first batch
// whose records do not all decode (next when every one does): an Open
// that re-validates the segment truncates it there, a torn tail, while a
// reader of a segment Open trusts reads records up to the bad one and
// then fails with ErrCorrupt. timesTrue reports whether every batch
// decoded whole and its header says its newest timestamp truly: the log
// indexes time by headers, so only then can OffsetForTime be exact.
func validPrefix(seg []byte, cleaned bool) (want map[int64]batch.Record, next, whole int64, timesTrue bool) {
	want = make(map[int64]batch.Record)
	next, whole, timesTrue = fuzzBase, -1, true
	for pos := 0; pos < len(seg); {
		h, err := batch.Check(seg[pos:])
		if err != nil || h.BaseOffset != next || h.PartitionLeaderEpoch != LeaderEpoch {
			break
		}
		if !cleaned && (h.RecordCount < 1 || h.RecordCount != h.LastOffsetDelta+1) ||
			cleaned && h.RecordCount > h.LastOffsetDelta+1 {
			break
		}
		off, maxMs, n, clean := next, int64(-1), int32(0), true
		for rec, err := range batch.Records(seg[pos : pos+h.Size()]) {
			if err != nil || rec.Offset < off || rec.Offset > h.LastOffset() || !cleaned && rec.Offset != off {
				clean = false // an error after the last record, too: bytes left over
				break
			}
			if !h.IsControl() { // readers skip control batches (transaction markers)
				want[rec.Offset] = rec.Clone()
			}
			off = rec.Offset + 1
			n++
			maxMs = max(maxMs, rec.Timestamp.UnixMilli())
		}
		if whole < 0 && !(clean && n == h.RecordCount && (off == h.NextOffset() || cleaned)) {
			whole = h.BaseOffset
		}
		timesTrue = timesTrue && n == h.RecordCount && maxMs == h.MaxTimestamp && (off == h.NextOffset() || cleaned && n > 0)
		next, pos = h.NextOffset(), pos+h.Size()
	}
	if whole < 0 {
		whole = next
	}
	return want, next, whole, timesTrue
}

func checkRecover(t *testing.T, variant uint8, fixCRC bool, data []byte) {
	data = bytes.Clone(data)
	if fixCRC {
		fixCRCs(data)
	}
	mem := vfs.NewMem()
	seg := layoutFuzzPartition(mem, variant%fuzzVariants, data)
	want, _, whole, timesTrue := validPrefix(seg, variant%fuzzVariants == fuzzClosedCleaned)
	if v := variant % fuzzVariants; v == fuzzActive || v == fuzzActiveHalfSync {
		// Open re-validates the active segment: a batch that does not
		// decode whole ends it (or, below the recovery point, fails Open).
		maps.DeleteFunc(want, func(o int64, _ batch.Record) bool { return o >= whole })
	}

	l, err := Open("/p", fuzzOptions(mem))
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open failed with %v, which is not ErrCorrupt", err)
		}
		return
	}
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	start, head := l.StartOffset(), l.Head()
	if start != fuzzBase || head < start {
		t.Fatalf("opened [%d, %d), want a start of %d", start, head, fuzzBase)
	}
	readable := checkFuzzRead(t, l, start, want)
	for _, from := range []int64{start + 1, (start + head) / 2, head - 1, head} {
		if from >= start && from <= head {
			checkFuzzRead(t, l, from, want)
		}
	}
	if readable && timesTrue {
		// The time index has no checksum: Open checks its ends, but a
		// damaged entry in the middle can make a lookup start late.
		checkFuzzOffsetForTime(t, l, want, variant%fuzzVariants != fuzzTimeIndexClosed)
	}

	// The recovered log takes an append and reopens to the same head.
	off, err := l.Append([]batch.Record{{Value: []byte("after")}}, Fsync)
	if err != nil || off != head {
		t.Fatalf("append after recovery = %d, %v; want offset %d", off, err, head)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l = nil
	l2, err := Open("/p", fuzzOptions(mem))
	if err != nil {
		t.Fatalf("reopen after recovery and an append: %v", err)
	}
	if l2.Head() != head+1 || l2.StartOffset() != start {
		t.Fatalf("reopened [%d, %d), want [%d, %d)", l2.StartOffset(), l2.Head(), start, head+1)
	}
	var last batch.Record
	for rec, err := range l2.Records(head) {
		if err != nil {
			t.Fatalf("read the appended record: %v", err)
		}
		last = rec
	}
	if last.Offset != head || string(last.Value) != "after" {
		t.Fatalf("appended record reads back as offset %d, %q", last.Offset, last.Value)
	}
	l2.Close()
}

// checkFuzzRead reads from 'from' and checks that every record is the
// next offset validPrefix found a record at, and that record, until the
// head or an ErrCorrupt. It reports whether it reached the head.
func checkFuzzRead(t *testing.T, l *Log, from int64, want map[int64]batch.Record) bool {
	var offs []int64
	for o := range want {
		if o >= from {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	i := 0
	for rec, err := range l.Records(from) {
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read from %d, after %d records: %v, which is not ErrCorrupt", from, i, err)
			}
			return false
		}
		if i >= len(offs) || rec.Offset != offs[i] {
			t.Fatalf("read from %d: record %d at offset %d, want the next of %v", from, i, rec.Offset, offs[i:])
		}
		w := want[rec.Offset]
		if err := sameRecord(rec, modelRecord{key: w.Key, value: w.Value, headers: w.Headers, ms: w.Timestamp.UnixMilli()}); err != nil {
			t.Fatalf("read from %d: offset %d: %v", from, rec.Offset, err)
		}
		i++
	}
	if i != len(offs) {
		t.Fatalf("read from %d stopped after %d records without an error; %v were valid", from, i, offs)
	}
	return true
}

// checkFuzzOffsetForTime checks OffsetForTime around every timestamp of
// a log whose records all read back: it finds the first record at or
// after the time, or fails with ErrCorrupt. Unless exact, it may answer
// a later offset, up to the head, but never an earlier one. An offset
// with no record (a gap the cleaner left) has no timestamp: it is neither
// asked about nor an answer.
func checkFuzzOffsetForTime(t *testing.T, l *Log, want map[int64]batch.Record, exact bool) {
	start, head := l.StartOffset(), l.Head()
	step := max(1, (head-start)/16) // a compressed batch can hold millions of records
	for off := start; off < head; off += step {
		if _, ok := want[off]; !ok {
			continue
		}
		for _, ms := range []int64{want[off].Timestamp.UnixMilli(), want[off].Timestamp.UnixMilli() + 1} {
			expect := head
			for o := start; o < head; o++ {
				if w, ok := want[o]; ok && w.Timestamp.UnixMilli() >= ms {
					expect = o
					break
				}
			}
			got, err := l.OffsetForTime(time.UnixMilli(ms))
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("OffsetForTime(%d): %v, which is not ErrCorrupt", ms, err)
				}
				continue
			}
			if got != expect && (exact || got < expect || got > head) {
				t.Fatalf("OffsetForTime(%d) = %d, want %d", ms, got, expect)
			}
		}
	}
}

// TestFuzzRecover_Seeds runs the seeds that FuzzRecover's corpus is made
// from and checks what each one opens to. With PASSBOOK_WRITE_FUZZ_SEEDS=1
// it writes them to testdata/fuzz/FuzzRecover.
func TestFuzzRecover_Seeds(t *testing.T) {
	seg, index, timeIndex := validSegment()
	_, segNext, _, _ := validPrefix(seg, false)
	cleaned := cleanedSegment()
	flippedCleaned := bytes.Clone(cleaned)
	flippedCleaned[len(cleaned)-10] ^= 0x10 // inside the last batch
	// Batch boundaries, to cut and flip at.
	var ends []int
	for pos := 0; pos < len(seg); {
		h, _ := batch.ParseHeader(seg[pos:])
		pos += h.Size()
		ends = append(ends, pos)
	}
	flipped := bytes.Clone(seg)
	flipped[ends[2]+30] ^= 0x10 // inside the fourth batch
	flippedFirst := bytes.Clone(seg[:ends[1]])
	flippedFirst[30] ^= 0x10 // inside the first batch
	for _, tc := range []struct {
		name     string
		variant  uint8
		data     []byte
		wantHead int64 // −1: Open fails with ErrCorrupt
	}{
		{"valid-active", fuzzActive, seg, segNext},
		{"valid-active-clean", fuzzActiveClean, seg, segNext},
		{"valid-closed", fuzzClosed, seg, segNext},
		{"one-batch", fuzzActive, seg[:ends[0]], fuzzBase + 1},
		{"torn-active", fuzzActive, seg[:ends[3]+25], fuzzBase + 10},
		{"torn-inside-header", fuzzActive, seg[:ends[1]+7], fuzzBase + 3},
		{"torn-half-synced", fuzzActiveHalfSync, seg[:len(seg)-5], segNext - 2},
		{"flipped-active", fuzzActive, flipped, fuzzBase + 6}, // past the recovery point: torn, though a valid batch follows
		{"flipped-active-tail", fuzzActive, flipped[:ends[3]], fuzzBase + 6},
		{"flipped-half-synced", fuzzActiveHalfSync, flippedFirst, -1}, // damage in the fsync'd range
		{"flipped-closed", fuzzClosed, flipped, -1},
		{"empty-active", fuzzActive, nil, fuzzBase},
		{"valid-index-active", fuzzIndexActive, index, segNext},
		{"valid-index-closed", fuzzIndexClosed, index, segNext},
		{"valid-timeindex-closed", fuzzTimeIndexClosed, timeIndex, segNext},
		{"torn-index", fuzzIndexActive, index[:len(index)-3], segNext},
		{"empty-timeindex", fuzzTimeIndexClosed, nil, segNext},
		{"valid-cleaned", fuzzClosedCleaned, cleaned, segNext},
		{"cleaned-not-marked", fuzzClosed, cleaned, -1}, // gaps where the cleaner never wrote
		{"flipped-cleaned", fuzzClosedCleaned, flippedCleaned, -1},
		{"dense-marked-cleaned", fuzzClosedCleaned, seg, segNext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRecover(t, tc.variant, false, tc.data)
			mem := vfs.NewMem()
			layoutFuzzPartition(mem, tc.variant, tc.data)
			l, err := Open("/p", fuzzOptions(mem))
			switch {
			case tc.wantHead < 0 && !errors.Is(err, ErrCorrupt):
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			case tc.wantHead >= 0 && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.wantHead >= 0 && l.Head() != tc.wantHead:
				t.Fatalf("head %d, want %d", l.Head(), tc.wantHead)
			}
			if l != nil {
				l.Close()
			}
			if os.Getenv("PASSBOOK_WRITE_FUZZ_SEEDS") != "" {
				dir := filepath.Join("testdata", "fuzz", "FuzzRecover")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				content := fmt.Sprintf("go test fuzz v1\nuint8(%d)\nbool(false)\n[]byte(%q)\n", tc.variant, tc.data)
				if err := os.WriteFile(filepath.Join(dir, "seed-"+tc.name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// cleanedSegment is validSegment as the cleaner could leave it: two
// batches emptied, batches of several records with every other one gone,
// the others whole.
func cleanedSegment() []byte {
	seg, _, _ := validSegment()
	var out []byte
	var d batch.Decoder
	for i, pos := 0, 0; pos < len(seg); i++ {
		h, _ := batch.ParseHeader(seg[pos:])
		b := seg[pos : pos+h.Size()]
		pos += h.Size()
		switch {
		case i == 2 || i == 3: // not merged into one, as a reader must not mind
			out = batch.AppendEmpty(out, h.BaseOffset, h.LastOffset(), h.MaxTimestamp)
		case h.RecordCount > 1:
			var kept []byte
			n := 0
			for rec, err := range d.RawRecords(b) {
				if err != nil {
					panic(err)
				}
				if (rec.Offset-h.BaseOffset)%2 == int64(i%2) {
					kept = append(kept, rec.Raw...)
					n++
				}
			}
			var err error
			if out, err = batch.AppendFiltered(out, b, kept, n); err != nil {
				panic(err)
			}
		default:
			out = append(out, b...)
		}
	}
	return out
}

// layoutFuzzPartition lays out the partition of a FuzzRecover variant
// with data in its place, and returns the bytes of the first segment.
func layoutFuzzPartition(mem *vfs.MemFS, variant uint8, data []byte) []byte {
	seg, index, timeIndex := validSegment()
	switch variant {
	case fuzzActive:
		writePartition(mem, data, nil, nil, nil, false)
		return data
	case fuzzActiveHalfSync:
		writePartition(mem, data, nil, nil, &checkpoint{base: fuzzBase, pos: int64(len(data) / 2)}, false)
		return data
	case fuzzActiveClean:
		writePartition(mem, data, nil, nil, &checkpoint{base: fuzzBase, pos: int64(len(data)), clean: true}, false)
		return data
	case fuzzClosed:
		writePartition(mem, data, nil, nil, nil, true)
		return data
	case fuzzClosedCleaned:
		writePartitionCleaned(mem, data, nil, nil, nil, true, true)
		return data
	case fuzzIndexActive:
		writePartition(mem, seg, data, timeIndex, &checkpoint{base: fuzzBase, pos: int64(len(seg)), clean: true}, false)
	case fuzzIndexClosed:
		writePartition(mem, seg, data, timeIndex, nil, true)
	case fuzzTimeIndexClosed:
		writePartition(mem, seg, index, data, nil, true)
	}
	return seg
}
