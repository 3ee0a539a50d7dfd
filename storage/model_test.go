package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// TestLog_Model runs random sequences of appends, reads, syncs, reopens,
// power losses and retention against a Log on a MemFS and, step by step,
// against a model: the records appended (a slice), the log start offset,
// the segments the spec says the log must hold (a segment rolls when the
// next batch would take it past SegmentBytes, or when it is SegmentAge
// old by the log's clock: counted from its first append since the log
// was opened, or from its first record's timestamp if the segment was
// found on Open and that timestamp is in the past), and how far the log is known to be durable. After
// every step the log's head, start offset, size and segment bases must
// equal the model's.
//
// A power loss keeps every record that was acknowledged durable — by an
// Fsync append, a later Sync, a segment roll (closed segments are
// fsync'd), an Open or a Close — and may keep some of the records after
// them, but only as a dense prefix of whole batches with the right bytes.
//
// rapid prints the seed of a failing run; rerun it with -rapid.seed.
// -rapid.checks and -rapid.steps make runs longer.
func TestLog_Model(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newLogModel(t)
		defer m.close()
		t.Repeat(map[string]func(*rapid.T){
			"Append":        m.Append,
			"AppendBatch":   m.AppendBatch,
			"Read":          m.Read,
			"OffsetForTime": m.OffsetForTime,
			"Sync":          m.Sync,
			"Reopen":        m.Reopen,
			"Crash":         m.Crash,
			"Retain":        m.Retain,
			"":              m.Check,
		})
	})
}

// modelRecord is what the model knows about one record.
type modelRecord struct {
	key, value []byte
	headers    []batch.RecordHeader
	ms         int64
}

// modelBatch is one stored batch: offsets [first, next), size bytes.
type modelBatch struct {
	first, next   int64
	size          int64
	baseMs, maxMs int64
}

// modelSegment is one segment the spec says the log holds.
type modelSegment struct {
	base    int64
	batches []modelBatch
	since   int64 // where its age counts from, by the log's clock; 0 until its first append since Open
}

func (s *modelSegment) size() int64 {
	var n int64
	for _, b := range s.batches {
		n += b.size
	}
	return n
}

// firstMs is the base timestamp of the first batch, −1 when empty.
func (s *modelSegment) firstMs() int64 {
	if len(s.batches) == 0 {
		return -1
	}
	return s.batches[0].baseMs
}

// maxMs is the newest timestamp in the segment, −1 when empty.
func (s *modelSegment) maxMs() int64 {
	m := int64(-1)
	for _, b := range s.batches {
		m = max(m, b.maxMs)
	}
	return m
}

type logModel struct {
	mem   *vfs.MemFS
	opts  Options
	clock atomic.Int64 // ms since the epoch; the log's Now
	l     *Log

	recs    []modelRecord // by offset, from 0 (those below start stay, unread)
	start   int64
	segs    []*modelSegment
	durable int64 // offsets below this must survive a power loss
}

func newLogModel(t *rapid.T) *logModel {
	m := &logModel{mem: vfs.NewMem()}
	m.clock.Store(rapid.Int64Range(1_600_000_000_000, 1_700_000_000_000).Draw(t, "clock"))
	m.opts = Options{
		FS:             m.mem,
		SegmentBytes:   int64(rapid.IntRange(1<<10, 8<<10).Draw(t, "segmentBytes")),
		SegmentAge:     rapid.SampledFrom([]time.Duration{time.Hour, 7 * 24 * time.Hour}).Draw(t, "segmentAge"),
		IndexInterval:  rapid.IntRange(1, 1<<10).Draw(t, "indexInterval"),
		RetentionBytes: rapid.SampledFrom([]int64{0, 4 << 10, 16 << 10}).Draw(t, "retentionBytes"),
		RetentionAge:   rapid.SampledFrom([]time.Duration{0, 30 * time.Minute, 2 * time.Hour}).Draw(t, "retentionAge"),
		SyncInterval:   time.Hour, // keep the background fsync and retention out of the way
		Now:            func() time.Time { return time.UnixMilli(m.clock.Load()) },
	}
	m.segs = []*modelSegment{{base: 0}}
	m.open(t)
	return m
}

func (m *logModel) open(t *rapid.T) {
	l, err := Open("/p", &m.opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	m.l = l
	for _, s := range m.segs {
		s.since = 0
	}
}

func (m *logModel) close() {
	if m.l != nil {
		m.l.Close()
	}
}

func (m *logModel) head() int64 { return int64(len(m.recs)) }

func (m *logModel) active() *modelSegment { return m.segs[len(m.segs)-1] }

// drawRecords draws 1–20 records with random keys, values (nil or 0–300
// bytes) and headers. Bytes come from a drawn seed, so that shrinking
// works on sizes rather than on every byte.
func drawRecords(t *rapid.T) []batch.Record {
	n := rapid.IntRange(1, 20).Draw(t, "records")
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0))
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	rs := make([]batch.Record, n)
	for i := range rs {
		if k := rapid.IntRange(-1, 16).Draw(t, "keyLen"); k >= 0 {
			rs[i].Key = bytesOf(k)
		}
		if v := rapid.IntRange(-1, 300).Draw(t, "valueLen"); v >= 0 {
			rs[i].Value = bytesOf(v)
		}
		for h := range rapid.IntRange(0, 2).Draw(t, "headers") {
			hv := bytesOf(rng.IntN(8))
			if rng.IntN(4) == 0 {
				hv = nil
			}
			rs[i].Headers = append(rs[i].Headers, batch.RecordHeader{Key: fmt.Sprint("h", h), Value: hv})
		}
	}
	return rs
}

func drawDurability(t *rapid.T) Durability {
	return rapid.SampledFrom([]Durability{InOS, Fsync}).Draw(t, "durability")
}

// Append appends 1–20 records with Append, as one batch.
func (m *logModel) Append(t *rapid.T) {
	rs := drawRecords(t)
	d := drawDurability(t)
	now := m.opts.Now()
	// What the log will store: the same encoding, at the head.
	b, err := batch.Append(nil, rs, batch.Options{BaseOffset: m.head(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	off, err := m.l.Append(rs, d)
	if err != nil {
		t.Fatalf("append %d records (%v): %v", len(rs), d, err)
	}
	m.stored(t, off, b, rs, now, d)
}

// AppendBatch appends a batch encoded by a producer: any codec, and
// timestamps that may lie in the past.
func (m *logModel) AppendBatch(t *rapid.T) {
	rs := drawRecords(t)
	d := drawDurability(t)
	codec := rapid.SampledFrom([]batch.Codec{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}).Draw(t, "codec")
	now := m.opts.Now()
	for i := range rs {
		if back := rapid.Int64Range(-1, 3*3600_000).Draw(t, "msInThePast"); back >= 0 {
			rs[i].Timestamp = now.Add(-time.Duration(back) * time.Millisecond)
		}
	}
	b, err := batch.Append(nil, rs, batch.Options{Codec: codec, BaseOffset: 12345, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	off, err := m.l.AppendBatch(slices.Clone(b), d)
	if err != nil {
		t.Fatalf("append batch of %d records (%v, %v): %v", len(rs), codec, d, err)
	}
	m.stored(t, off, b, rs, now, d)
}

// stored updates the model after the log acknowledged batch b, holding
// rs, at offset off: it rolls when the spec says so, appends the batch
// and advances the durable point for an Fsync append.
func (m *logModel) stored(t *rapid.T, off int64, b []byte, rs []batch.Record, now time.Time, d Durability) {
	if off != m.head() {
		t.Fatalf("append returned offset %d, want the head %d", off, m.head())
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	a := m.active()
	nowMs := now.UnixMilli()
	if a.since == 0 {
		a.since = nowMs
		if a.size() > 0 && a.firstMs() >= 0 && a.firstMs() < nowMs {
			a.since = a.firstMs()
		}
	}
	if sz := a.size(); sz > 0 && (sz+int64(len(b)) > m.opts.SegmentBytes || nowMs-a.since >= m.opts.SegmentAge.Milliseconds()) {
		m.segs = append(m.segs, &modelSegment{base: off, since: nowMs})
		m.durable = max(m.durable, off) // the roll fsync'd the old segment
		a = m.active()
	}
	a.batches = append(a.batches, modelBatch{first: off, next: off + int64(len(rs)), size: int64(len(b)), baseMs: h.BaseTimestamp, maxMs: h.MaxTimestamp})
	for _, r := range rs {
		ms := now.UnixMilli()
		if !r.Timestamp.IsZero() {
			ms = r.Timestamp.UnixMilli()
		}
		m.recs = append(m.recs, modelRecord{key: r.Key, value: r.Value, headers: r.Headers, ms: ms})
	}
	if d == Fsync {
		m.durable = m.head()
	}
}

// Read reads from a random offset in [start, head] to the head, and
// checks that offsets just outside that range are out of range.
func (m *logModel) Read(t *rapid.T) {
	from := rapid.Int64Range(m.start, m.head()).Draw(t, "from")
	m.checkRecords(t, from)
	for _, off := range []int64{m.start - 1, m.head() + 1} {
		if off < 0 {
			continue
		}
		r := m.l.NewReader(off)
		_, _, err := r.TryNext()
		r.Close()
		var oor *OutOfRangeError
		if !errors.As(err, &oor) || !errors.Is(err, ErrOutOfRange) || oor.Start != m.start || oor.Head != m.head() {
			t.Fatalf("read at %d of [%d, %d]: %v, want an OutOfRangeError", off, m.start, m.head(), err)
		}
	}
}

// checkRecords reads from 'from' to the head and compares every record
// with the model: offsets, keys, values, headers (nil-ness included) and
// timestamps.
func (m *logModel) checkRecords(t *rapid.T, from int64) {
	want := from
	for rec, err := range m.l.Records(from) {
		if err != nil {
			t.Fatalf("read from %d, at %d: %v", from, want, err)
		}
		if rec.Offset != want {
			t.Fatalf("read from %d: got offset %d, want %d", from, rec.Offset, want)
		}
		if want >= m.head() {
			t.Fatalf("read from %d: got offset %d at or past the head %d", from, rec.Offset, m.head())
		}
		if err := sameRecord(rec, m.recs[want]); err != nil {
			t.Fatalf("record %d: %v", want, err)
		}
		want++
	}
	if want != m.head() {
		t.Fatalf("read from %d stopped at %d, head is %d", from, want, m.head())
	}
}

func sameRecord(got batch.Record, want modelRecord) error {
	eq := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	switch {
	case !eq(got.Key, want.key):
		return fmt.Errorf("key %q (nil %t), want %q (nil %t)", got.Key, got.Key == nil, want.key, want.key == nil)
	case !eq(got.Value, want.value):
		return fmt.Errorf("value %q (nil %t), want %q (nil %t)", got.Value, got.Value == nil, want.value, want.value == nil)
	case got.Timestamp.UnixMilli() != want.ms:
		return fmt.Errorf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.ms)
	case len(got.Headers) != len(want.headers):
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.headers))
	}
	for i, h := range got.Headers {
		if h.Key != want.headers[i].Key || !eq(h.Value, want.headers[i].Value) {
			return fmt.Errorf("header %d: %q=%q, want %q=%q", i, h.Key, h.Value, want.headers[i].Key, want.headers[i].Value)
		}
	}
	return nil
}

// OffsetForTime looks up a time around the records' timestamps: the
// answer is the first kept record at or after it, or the head.
func (m *logModel) OffsetForTime(t *rapid.T) {
	now := m.clock.Load()
	ms := rapid.Int64Range(now-4*3600_000, now+1).Draw(t, "ms")
	want := m.head()
	for off := m.start; off < m.head(); off++ {
		if m.recs[off].ms >= ms {
			want = off
			break
		}
	}
	got, err := m.l.OffsetForTime(time.UnixMilli(ms))
	if err != nil || got != want {
		t.Fatalf("OffsetForTime(now%+dms) = %d, %v; want %d", ms-now, got, err, want)
	}
}

// Sync fsyncs everything appended so far.
func (m *logModel) Sync(t *rapid.T) {
	if err := m.l.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	m.durable = m.head()
}

// Reopen closes the log cleanly and opens it again: nothing is lost and
// recovery has nothing to re-validate.
func (m *logModel) Reopen(t *rapid.T) {
	if err := m.l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	m.l = nil
	m.open(t)
	m.durable = m.head() // Close fsync'd everything
	if r := m.l.Recovery(); !r.Clean || r.TornBytes != 0 {
		t.Fatalf("recovery after a clean close: %+v", r)
	}
}

// Crash cuts the power (keeping only fsync'd bytes, tearing the rest at
// random or not) and reopens what the disk kept.
func (m *logModel) Crash(t *rapid.T) {
	tear := rapid.Bool().Draw(t, "tear")
	seed := rapid.Uint64().Draw(t, "tearSeed")
	crashed := m.mem.Crash(vfs.CrashOptions{Tear: tear, Rand: rand.New(rand.NewPCG(seed, 0))})
	m.l.Close() // on the old MemFS: it no longer matters
	m.l = nil
	m.mem, m.opts.FS = crashed, crashed
	durable, before := m.durable, m.head()
	m.open(t)
	head := m.l.Head()
	if head < durable || head > before {
		t.Fatalf("head after power loss %d, want in [%d (durable), %d (appended)]", head, durable, before)
	}
	// What survived must be whole batches: cut the model there.
	for i, s := range m.segs {
		if s.base > head {
			t.Fatalf("segment %d (base %d) lost, but the head is %d", i, s.base, head)
		}
		for j, b := range s.batches {
			if b.next > head {
				if b.first != head {
					t.Fatalf("head %d after power loss is inside the batch [%d, %d)", head, b.first, b.next)
				}
				s.batches = s.batches[:j]
				break
			}
		}
	}
	m.recs = m.recs[:head]
	m.durable = head // Open fsyncs what it recovered
	m.checkRecords(t, m.start)
}

// Retain moves the clock forward (maybe by nothing) and runs retention:
// oldest closed segments go while their newest record is older than
// RetentionAge, or while the others still hold RetentionBytes.
func (m *logModel) Retain(t *rapid.T) {
	m.clock.Add(rapid.Int64Range(0, 3*3600_000).Draw(t, "advanceMs"))
	nowMs := m.clock.Load()
	total := int64(0)
	for _, s := range m.segs {
		total += s.size()
	}
	n := 0
	for n < len(m.segs)-1 {
		s := m.segs[n]
		byAge := m.opts.RetentionAge > 0 && s.maxMs() >= 0 && nowMs-s.maxMs() > m.opts.RetentionAge.Milliseconds()
		bySize := m.opts.RetentionBytes > 0 && total-s.size() >= m.opts.RetentionBytes
		if !byAge && !bySize {
			break
		}
		total -= s.size()
		n++
	}
	got, err := m.l.Retain()
	if err != nil || got != n {
		t.Fatalf("Retain = %d, %v; want %d segments deleted (of %d)", got, err, n, len(m.segs))
	}
	m.segs = m.segs[n:]
	m.start = m.segs[0].base
	if m.start > 0 {
		r := m.l.NewReader(m.start - 1)
		if _, _, err := r.TryNext(); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("read at %d below the start %d: %v, want ErrOutOfRange", m.start-1, m.start, err)
		}
		r.Close()
	}
}

// Check compares the log's shape with the model after every step.
func (m *logModel) Check(t *rapid.T) {
	l := m.l
	if err := l.Err(); err != nil {
		t.Fatalf("sticky error: %v", err)
	}
	if l.Head() != m.head() || l.StartOffset() != m.start {
		t.Fatalf("log holds [%d, %d), model [%d, %d)", l.StartOffset(), l.Head(), m.start, m.head())
	}
	var bases, wantBases []int64
	for _, s := range l.segments() {
		bases = append(bases, s.base)
	}
	size := int64(0)
	for _, s := range m.segs {
		wantBases = append(wantBases, s.base)
		size += s.size()
	}
	if !slices.Equal(bases, wantBases) {
		t.Fatalf("segment bases %v, want %v", bases, wantBases)
	}
	if l.Size() != size {
		t.Fatalf("size %d, want %d", l.Size(), size)
	}
}
