package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// txnBatch encodes a batch of n records of producer pid (epoch, first
// sequence seq), transactional when txn is set, as a Kafka producer
// sends it. Each record's value names its producer and place.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	t.Helper()
	rs := make([]batch.Record, n)
	for i := range rs {
		rs[i] = batch.Record{Value: fmt.Appendf(nil, "p%d-s%d", pid, int(seq)+i)}
	}
	b, err := batch.Append(nil, rs, batch.Options{Idempotent: pid >= 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	if txn {
		const offAttributes, offCRC = 21, 17
		binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|batch.AttrTransactional)
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	}
	return b
}

// txnStep is one step of a transaction workload: "txn" (a transactional
// batch of n records of producer pid), "plain" (n records, no
// producer), "commit" or "abort" (pid's marker).
type txnStep struct {
	op  string
	pid int64
	n   int
}

// txnWorkload runs steps on l and returns the offsets of the markers it
// wrote.
func txnWorkload(t testing.TB, l *Log, steps []txnStep) (markers []int64) {
	t.Helper()
	seq := map[int64]int32{}
	for i, st := range steps {
		var err error
		switch st.op {
		case "txn":
			_, err = l.AppendBatch(txnBatch(t, st.pid, 0, seq[st.pid], st.n, true), DefaultDurability)
			seq[st.pid] += int32(st.n)
		case "plain":
			_, err = l.Append(recs(i, st.n), DefaultDurability)
		case "commit", "abort":
			typ := ControlCommit
			if st.op == "abort" {
				typ = ControlAbort
			}
			var off int64
			off, err = l.AppendMarker(Marker{ProducerID: st.pid, Type: typ, CoordinatorEpoch: 7}, DefaultDurability)
			markers = append(markers, off)
		default:
			t.Fatalf("step %d: unknown op %q", i, st.op)
		}
		if err != nil {
			t.Fatalf("step %d (%v): %v", i, st, err)
		}
	}
	return markers
}

// committedOffsets reads l as a read_committed reader and returns the
// offsets it sees.
func committedOffsets(t testing.TB, l *Log) []int64 {
	t.Helper()
	r := l.NewReader(l.StartOffset()).ReadCommitted()
	defer r.Close()
	var got []int64
	for {
		rec, ok, err := r.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, rec.Offset)
	}
	if r.Offset() != l.LastStableOffset() {
		t.Fatalf("read_committed reader stopped at %d, LSO is %d", r.Offset(), l.LastStableOffset())
	}
	return got
}

// span is the offsets [from, to).
func span(from, to int64) []int64 {
	var s []int64
	for o := from; o < to; o++ {
		s = append(s, o)
	}
	return s
}

var txnCases = []struct {
	name        string
	steps       []txnStep
	lso         int64
	open        []OpenTxn
	aborted     []AbortedTxn
	committed   []int64 // offsets a read_committed reader sees
	uncommitted int64   // the head
}{
	{
		name:      "no transactions: the LSO is the head",
		steps:     []txnStep{{"plain", 0, 3}, {"plain", 0, 2}},
		lso:       5,
		committed: span(0, 5),
	},
	{
		name:      "an open transaction holds the LSO at its first offset",
		steps:     []txnStep{{"plain", 0, 2}, {"txn", 1, 3}, {"plain", 0, 2}},
		lso:       2,
		open:      []OpenTxn{{ProducerID: 1, FirstOffset: 2}},
		committed: span(0, 2),
	},
	{
		name:      "a commit releases the transaction; its marker takes an offset readers skip",
		steps:     []txnStep{{"txn", 1, 3}, {"plain", 0, 1}, {"txn", 1, 2}, {"commit", 1, 0}},
		lso:       7,
		committed: span(0, 6),
	},
	{
		name:      "an abort is indexed and its records dropped",
		steps:     []txnStep{{"plain", 0, 1}, {"txn", 1, 3}, {"plain", 0, 1}, {"abort", 1, 0}, {"plain", 0, 1}},
		lso:       7,
		aborted:   []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 5, LastStableOffset: 6}},
		committed: []int64{0, 4, 6},
	},
	{
		name: "interleaved transactions: the oldest open one holds the LSO; an abort's LSO is the other's start",
		steps: []txnStep{{"txn", 1, 2}, {"txn", 2, 2}, {"txn", 1, 1}, {"abort", 1, 0}, {"txn", 3, 1}, {"commit", 2, 0},
			{"plain", 0, 1}},
		// 0-1 p1, 2-3 p2, 4 p1, 5 abort p1, 6 p3, 7 commit p2, 8 plain
		lso:       6,
		open:      []OpenTxn{{ProducerID: 3, FirstOffset: 6}},
		aborted:   []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 2}},
		committed: []int64{2, 3},
	},
	{
		name:      "a marker for a producer with nothing open is written and changes nothing",
		steps:     []txnStep{{"plain", 0, 2}, {"commit", 9, 0}, {"abort", 8, 0}, {"plain", 0, 1}},
		lso:       5,
		committed: []int64{0, 1, 4},
	},
	{
		name:      "a producer's next transaction opens at its next batch",
		steps:     []txnStep{{"txn", 1, 2}, {"abort", 1, 0}, {"txn", 1, 2}, {"commit", 1, 0}, {"txn", 1, 1}},
		lso:       6,
		open:      []OpenTxn{{ProducerID: 1, FirstOffset: 6}},
		aborted:   []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}},
		committed: []int64{3, 4},
	},
}

// checkTxnState checks l's LSO, open transactions, aborted index and
// what a read_committed reader sees against a case.
func checkTxnState(t *testing.T, what string, l *Log, lso int64, open []OpenTxn, aborted []AbortedTxn, committed, markers []int64) {
	t.Helper()
	// Read uncommitted: every record but the markers.
	var all, want []int64
	for rec, err := range l.RecordsIsolated(0, ReadUncommitted) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rec.Offset)
	}
	for o := range l.Head() {
		if !slices.Contains(markers, o) {
			want = append(want, o)
		}
	}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("%s: read_uncommitted sees %v, want %v", what, all, want)
	}
	if got := l.LastStableOffset(); got != lso {
		t.Errorf("%s: LSO %d, want %d", what, got, lso)
	}
	if got := l.OpenTxns(); !reflect.DeepEqual(got, slices.Clip(append([]OpenTxn{}, open...))) && (len(got) != 0 || len(open) != 0) {
		t.Errorf("%s: open transactions %+v, want %+v", what, got, open)
	}
	if got := l.AbortedTxns(0, l.Head()); !reflect.DeepEqual(got, aborted) {
		t.Errorf("%s: aborted %+v, want %+v", what, got, aborted)
	}
	if got := committedOffsets(t, l); !reflect.DeepEqual(got, committed) {
		t.Errorf("%s: read_committed sees %v, want %v", what, got, committed)
	}
}

func TestLog_Txn_LSOAndAbortedIndex(t *testing.T) {
	for _, tc := range txnCases {
		for _, segBytes := range []int64{1 << 20, 200} { // one segment; a roll at every batch or two
			t.Run(fmt.Sprintf("%s/segment %d", tc.name, segBytes), func(t *testing.T) {
				mem := vfs.NewMem()
				o := &Options{FS: mem, SegmentBytes: segBytes}
				l := mustOpen(t, "/p", o)
				markers := txnWorkload(t, l, tc.steps)
				checkTxnState(t, "live", l, tc.lso, tc.open, tc.aborted, tc.committed, markers)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, "/p", o)
				checkTxnState(t, "reopened after a clean close", l, tc.lso, tc.open, tc.aborted, tc.committed, markers)
				l.Close()

				// A missing index: rebuilt from the segments.
				names, _ := mem.ReadDir("/p")
				for _, n := range names {
					if filepath.Ext(n) == ".txnindex" {
						if err := mem.Remove("/p/" + n); err != nil {
							t.Fatal(err)
						}
					}
				}
				l = mustOpen(t, "/p", o)
				checkTxnState(t, "reopened with every .txnindex removed", l, tc.lso, tc.open, tc.aborted, tc.committed, markers)
				l.Close()

				// A torn index: rebuilt from the segments.
				names, _ = mem.ReadDir("/p")
				for _, n := range names {
					if filepath.Ext(n) == ".txnindex" {
						b, _ := vfs.ReadFile(mem, "/p/"+n)
						f, err := mem.OpenFile("/p/"+n, os.O_RDWR, 0)
						if err != nil {
							t.Fatal(err)
						}
						f.Truncate(int64(len(b) - 3))
						f.Close()
					}
				}
				l = mustOpen(t, "/p", o)
				checkTxnState(t, "reopened with every .txnindex torn", l, tc.lso, tc.open, tc.aborted, tc.committed, markers)
				l.Close()
			})
		}
	}
}

// TestLog_Txn_Crash: after a power loss that keeps only fsync'd bytes,
// with the log open, the rebuilt transaction state equals the state
// before (every append was fsync'd).
func TestLog_Txn_Crash(t *testing.T) {
	for _, tc := range txnCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			o := &Options{FS: mem, SegmentBytes: 300, Durability: Fsync}
			l := mustOpen(t, "/p", o)
			markers := txnWorkload(t, l, tc.steps)
			crashed := mem.Crash(vfs.CrashOptions{})
			l.Close()
			l = mustOpen(t, "/p", &Options{FS: crashed, SegmentBytes: 300})
			defer l.Close()
			checkTxnState(t, "after power loss", l, tc.lso, tc.open, tc.aborted, tc.committed, markers)
		})
	}
}

func TestLog_AppendMarker_Refusals(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	if _, err := l.AppendBatch(txnBatch(t, 5, 3, 0, 1, true), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	head := l.Head()
	for _, tc := range []struct {
		name string
		m    Marker
		want error
	}{
		{"stale epoch", Marker{ProducerID: 5, ProducerEpoch: 2, Type: ControlCommit}, ErrProducerFenced},
		{"no producer", Marker{ProducerID: -1, Type: ControlCommit}, ErrInvalidMarker},
		{"unknown type", Marker{ProducerID: 5, ProducerEpoch: 3, Type: 7}, ErrInvalidMarker},
	} {
		if _, err := l.AppendMarker(tc.m, DefaultDurability); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	// A control batch from outside.
	b, err := appendControlBatch(nil, 0, Marker{ProducerID: 5, ProducerEpoch: 3, Type: ControlCommit}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(b, DefaultDurability); !errors.Is(err, ErrControlBatch) {
		t.Errorf("control batch through AppendBatch: err %v, want ErrControlBatch", err)
	}
	if l.Head() != head || l.LastStableOffset() != 0 {
		t.Fatalf("refusals changed the log: head %d (want %d), LSO %d", l.Head(), head, l.LastStableOffset())
	}
	// A newer epoch (a coordinator's abort after a bump) ends it.
	if _, err := l.AppendMarker(Marker{ProducerID: 5, ProducerEpoch: 4, Type: ControlAbort}, Fsync); err != nil {
		t.Fatal(err)
	}
	if l.LastStableOffset() != l.Head() {
		t.Fatalf("LSO %d after the abort, head %d", l.LastStableOffset(), l.Head())
	}
}

func TestControlRecord_Format(t *testing.T) {
	b, err := appendControlBatch(nil, 42, Marker{ProducerID: 9, ProducerEpoch: 2, Type: ControlCommit, CoordinatorEpoch: 11}, time.UnixMilli(1000))
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Attributes != batch.AttrTransactional|batch.AttrControl || h.ProducerID != 9 || h.ProducerEpoch != 2 || h.BaseSequence != -1 || h.RecordCount != 1 {
		t.Fatalf("header %+v", h)
	}
	for rec, err := range batch.Records(b) {
		if err != nil {
			t.Fatal(err)
		}
		// Kafka's ControlRecordUtils: key version 0, type 1; value version 0, coordinator epoch.
		if want := []byte{0, 0, 0, 1}; !slices.Equal(rec.Key, want) {
			t.Errorf("key %x, want %x", rec.Key, want)
		}
		if want := []byte{0, 0, 0, 0, 0, 11}; !slices.Equal(rec.Value, want) {
			t.Errorf("value %x, want %x", rec.Value, want)
		}
	}
	cr, err := ControlBatchType(b)
	if err != nil || cr != (ControlRecord{Type: ControlCommit, CoordinatorEpoch: 11}) {
		t.Fatalf("ControlBatchType: %+v, %v", cr, err)
	}
}

// TestLog_WaitStable: a read_committed long poll ends when a marker
// moves the LSO, not when the transaction's batches arrive.
func TestLog_WaitStable(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	if _, err := l.AppendBatch(txnBatch(t, 1, 0, 0, 2, true), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.WaitStable(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitStable with the transaction open: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.WaitStable(context.Background(), 0) }()
	if _, err := l.AppendMarker(Marker{ProducerID: 1, Type: ControlCommit}, DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := WaitAny(context.Background(), WaitFor{Log: l, Offset: 1, Stable: true}); err != nil {
		t.Fatal(err)
	}
}

// keyedTxnBatch is txnBatch with a key per record, for a compacted log.
func keyedTxnBatch(t testing.TB, pid int64, seq int32, keys ...string) []byte {
	t.Helper()
	rs := make([]batch.Record, len(keys))
	for i, k := range keys {
		rs[i] = batch.Record{Key: []byte(k), Value: fmt.Appendf(nil, "p%d-s%d", pid, int(seq)+i)}
	}
	b, err := batch.Append(nil, rs, batch.Options{Idempotent: true, ProducerID: pid, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	const offAttributes, offCRC = 21, 17
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestLog_Txn_CompactionKeepsAbortedIndex: a compaction that merges
// segments merges their aborted-transaction indexes, live and across a
// reopen, and one cut short between writing the merged index and
// removing the others' leaves Open to merge them.
func TestLog_Txn_CompactionKeepsAbortedIndex(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, Compact: true, SegmentBytes: 1200}
	l := mustOpen(t, "/p", o)
	seq := int32(0)
	for round := range 8 {
		pid := int64(round + 1)
		if _, err := l.AppendBatch(keyedTxnBatch(t, pid, 0, fmt.Sprintf("txn-%d", round)), DefaultDurability); err != nil {
			t.Fatal(err)
		}
		// Plain records of one key: compaction empties the segments of
		// all but the newest, so they merge.
		for range 8 {
			if _, err := l.Append([]batch.Record{{Key: []byte("hot"), Value: fmt.Appendf(nil, "v%d", seq)}}, DefaultDurability); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		typ := ControlCommit
		if round%2 == 0 {
			typ = ControlAbort
		}
		if _, err := l.AppendMarker(Marker{ProducerID: pid, Type: typ}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	want := l.AbortedTxns(0, l.Head())
	if len(want) != 4 {
		t.Fatalf("aborted %+v, want 4", want)
	}
	segs := l.SegmentCount()
	for range 2 { // the second pass merges what the first shrank
		if _, err := l.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() >= segs {
		t.Fatalf("%d segments after compaction, %d before: nothing merged", l.SegmentCount(), segs)
	}
	if got := l.AbortedTxns(0, l.Head()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction: aborted %+v, want %+v", got, want)
	}
	committed := committedOffsets(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", o)
	if got := l.AbortedTxns(0, l.Head()); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened after compaction: aborted %+v, want %+v", got, want)
	}
	if got := committedOffsets(t, l); !reflect.DeepEqual(got, committed) {
		t.Fatalf("reopened after compaction: read_committed %v, want %v", got, committed)
	}
	l.Close()

	// A swap cut short: the merged segment's index holds only its own
	// aborts, the merged-away segments' indexes are still there.
	names, _ := mem.ReadDir("/p")
	var first string
	for _, n := range names {
		if filepath.Ext(n) == ".txnindex" {
			first = n
			break
		}
	}
	b, _ := vfs.ReadFile(mem, "/p/"+first)
	f, err := parseTxnFile(b, 0)
	if err != nil || len(f.aborted) < 2 {
		t.Fatalf("merged index %s: %+v, %v", first, f, err)
	}
	if err := mem.SetFileBytes("/p/"+first, encodeTxnFile(f.start, f.aborted[:1])); err != nil {
		t.Fatal(err)
	}
	orphan := encodeTxnFile(nil, f.aborted[1:])
	base := f.aborted[0].LastOffset // inside the merged segment, after its first marker
	if err := vfs.WriteFileAtomic(mem, "/p", filepath.Base(txnIndexPath("/p", base)), orphan); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", o)
	defer l.Close()
	if got := l.AbortedTxns(0, l.Head()); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened after a swap cut short: aborted %+v, want %+v", got, want)
	}
	if _, err := mem.Stat(txnIndexPath("/p", base)); err == nil {
		t.Fatal("the merged-away index is still there")
	}
}

// TestLog_Txn_CompactionKeepsCommittedValues: on a compacted log, a
// record of an aborted transaction, or of one still open, does not make
// compaction remove the committed record of its key that it would
// supersede — read_committed still finds the committed value.
func TestLog_Txn_CompactionKeepsCommittedValues(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{Compact: true, SegmentBytes: 300})
	defer l.Close()
	put := func(k, v string) {
		t.Helper()
		if _, err := l.Append([]batch.Record{{Key: []byte(k), Value: []byte(v)}}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "committed-a")
	put("b", "committed-b")
	// pid 1 overwrites a, then aborts; pid 2 overwrites b and stays open.
	if _, err := l.AppendBatch(keyedTxnBatch(t, 1, 0, "a"), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendMarker(Marker{ProducerID: 1, Type: ControlAbort}, DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(keyedTxnBatch(t, 2, 0, "b"), DefaultDurability); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // roll past all of it
		put("filler", fmt.Sprint(i))
	}
	for range 2 {
		if _, err := l.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	values := map[string]string{}
	for rec, err := range l.RecordsIsolated(0, ReadCommitted) {
		if err != nil {
			t.Fatal(err)
		}
		values[string(rec.Key)] = string(rec.Value)
	}
	if values["a"] != "committed-a" || values["b"] != "committed-b" {
		t.Fatalf("read_committed after compaction: a=%q b=%q, want the committed values", values["a"], values["b"])
	}
	// Once pid 2 commits and the log moves on, its b supersedes.
	if _, err := l.AppendMarker(Marker{ProducerID: 2, Type: ControlCommit}, DefaultDurability); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		put("filler", fmt.Sprint(i))
	}
	for range 2 {
		if _, err := l.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for rec, err := range l.RecordsIsolated(0, ReadCommitted) {
		if err != nil {
			t.Fatal(err)
		}
		if string(rec.Key) == "b" {
			n++
			if string(rec.Value) != "p2-s0" {
				t.Fatalf("b = %q after the commit and compaction, want pid 2's", rec.Value)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d records of b after the commit and compaction, want 1", n)
	}
}

// TestLog_Txn_ConcurrentCommittedReaders: read_committed readers
// following the log while transactions are written, committed and
// aborted never see a record of a transaction that was not committed,
// see every committed one once, in offset order, and end where the
// writer ended (run under -race, it also checks that the LSO and the
// aborted lists are published safely).
func TestLog_Txn_ConcurrentCommittedReaders(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{SegmentBytes: 2 << 10})
	defer l.Close()
	const txns = 200
	fate := make([]bool, txns) // committed?
	for i := range fate {
		fate[i] = i%3 != 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := make(chan []string, 3)
	for range 3 {
		go func() {
			r := l.NewReader(0).ReadCommitted()
			defer r.Close()
			var got []string
			for {
				rec, err := r.Next(ctx)
				if err != nil {
					got = append(got, "error: "+err.Error())
					break
				}
				if string(rec.Value) == "end" {
					break
				}
				got = append(got, string(rec.Value))
			}
			results <- got
		}()
	}
	var want []string
	for i := range txns {
		pid := int64(i%4 + 1)
		b, err := batch.Append(nil, []batch.Record{{Value: fmt.Appendf(nil, "t%d-a", i)}, {Value: fmt.Appendf(nil, "t%d-b", i)}},
			batch.Options{Idempotent: true, ProducerID: pid, BaseSequence: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		batch.SetTransactional(b)
		if _, err := l.AppendBatch(b, DefaultDurability); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append([]batch.Record{{Value: fmt.Appendf(nil, "plain-%d", i)}}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
		typ := ControlAbort
		if fate[i] {
			typ = ControlCommit
			want = append(want, fmt.Sprintf("t%d-a", i), fmt.Sprintf("t%d-b", i))
		}
		want = append(want, fmt.Sprintf("plain-%d", i))
		if _, err := l.AppendMarker(Marker{ProducerID: pid, Type: typ}, DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append([]batch.Record{{Value: []byte("end")}}, DefaultDurability); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got := <-results
		// plain-i was written after transaction i's batch, before its
		// marker: offset order is t<i>-a, t<i>-b, plain-i.
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("a read_committed reader saw %d records, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
