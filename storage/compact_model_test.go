package storage

import (
	"context"
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

// TestLog_CompactModel runs random sequences of keyed appends (some of
// them tombstones), compactions, clock advances past DeleteRetention,
// reopenings and power losses against a compacted Log on a MemFS, and
// checks it against a model: every record appended, by offset, and when
// the cleaner first saw each tombstone. After every step, reading from
// offset 0 yields offsets that increase strictly, each with the record
// appended there; every key's newest record (a tombstone, until
// DeleteRetention has passed since the cleaner first saw it); and every
// record at or after the cleaned point. Right after a compaction, the
// closed segments below the cleaned point hold each key at most once,
// and the tombstones past DeleteRetention are gone with every record of
// their key. A reader from a random offset — maybe in a gap — yields the
// same records from there on, and so does ReadBatches.
//
// rapid prints the seed of a failing run; rerun it with -rapid.seed.
func TestLog_CompactModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newCompactModel(t)
		defer m.close()
		t.Repeat(map[string]func(*rapid.T){
			"Append":      m.Append,
			"AppendBatch": m.AppendBatch,
			"Compact":     m.Compact,
			"Advance":     m.Advance,
			"ReadFrom":    m.ReadFrom,
			"Reopen":      m.Reopen,
			"Crash":       m.Crash,
			"":            m.Check,
		})
	})
}

type compactModel struct {
	mem   *vfs.MemFS
	opts  Options
	clock atomic.Int64 // ms
	l     *Log

	recs      []batch.Record  // by offset
	firstSeen map[int64]int64 // tombstone offset → when a compaction first covered it
	merged    bool            // CLEANER's marks merged: tombstones may stay longer
	durable   int64           // offsets below survive a power loss
}

const modelRetention = time.Hour

func newCompactModel(t *rapid.T) *compactModel {
	m := &compactModel{mem: vfs.NewMem(), firstSeen: map[int64]int64{}}
	m.clock.Store(1_700_000_000_000)
	m.opts = Options{
		FS:                 m.mem,
		Compact:            true,
		SegmentBytes:       int64(rapid.IntRange(300, 3000).Draw(t, "segmentBytes")),
		IndexInterval:      rapid.IntRange(1, 512).Draw(t, "indexInterval"),
		CleanerBufferBytes: rapid.SampledFrom([]int{minCleanerBuffer, 1 << 10, 0}).Draw(t, "cleanerBuffer"),
		DeleteRetention:    modelRetention,
		SyncInterval:       time.Hour,
		CleanerInterval:    time.Hour,
		Now:                func() time.Time { return time.UnixMilli(m.clock.Load()) },
	}
	m.open(t)
	return m
}

func (m *compactModel) open(t *rapid.T) {
	l, err := Open("/p", &m.opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	m.l = l
}

func (m *compactModel) close() {
	if m.l != nil {
		m.l.Close()
	}
}

// drawKeyed draws 1–8 records over 12 keys, one in six a tombstone.
func drawKeyed(t *rapid.T) []batch.Record {
	n := rapid.IntRange(1, 8).Draw(t, "records")
	rs := make([]batch.Record, n)
	for i := range rs {
		rs[i].Key = fmt.Appendf(nil, "k%d", rapid.IntRange(0, 11).Draw(t, "key"))
		if rapid.IntRange(0, 5).Draw(t, "tombstone") > 0 {
			rs[i].Value = fmt.Appendf(nil, "v%d-%d", rapid.IntRange(0, 1<<20).Draw(t, "value"), i)
		}
		if rapid.IntRange(0, 7).Draw(t, "header") == 0 {
			rs[i].Headers = []batch.RecordHeader{{Key: "h", Value: []byte("x")}}
		}
	}
	return rs
}

func (m *compactModel) stored(t *rapid.T, off int64, rs []batch.Record, d Durability) {
	if off != int64(len(m.recs)) {
		t.Fatalf("append at %d, want %d", off, len(m.recs))
	}
	for i, r := range rs {
		r.Offset = off + int64(i)
		if r.Timestamp.IsZero() {
			r.Timestamp = time.UnixMilli(m.clock.Load())
		}
		m.recs = append(m.recs, r)
	}
	if d == Fsync {
		m.durable = int64(len(m.recs))
	}
	m.durable = max(m.durable, m.l.active().base) // closed segments were fsync'd
}

func (m *compactModel) Append(t *rapid.T) {
	rs := drawKeyed(t)
	d := drawDurability(t)
	off, err := m.l.Append(rs, d)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	m.stored(t, off, rs, d)
}

func (m *compactModel) AppendBatch(t *rapid.T) {
	rs := drawKeyed(t)
	d := drawDurability(t)
	codec := rapid.SampledFrom([]batch.Codec{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}).Draw(t, "codec")
	b, err := batch.Append(nil, rs, batch.Options{Codec: codec, Now: m.opts.Now()})
	if err != nil {
		t.Fatal(err)
	}
	off, err := m.l.AppendBatch(b, d)
	if err != nil {
		t.Fatalf("append batch: %v", err)
	}
	m.stored(t, off, rs, d)
}

// Compact compacts, notes when tombstones were first seen, and checks
// what a compaction promises.
func (m *compactModel) Compact(t *rapid.T) {
	before := m.l.CleanerStats().CleanedTo
	if _, err := m.l.Compact(context.Background()); err != nil {
		t.Fatalf("compact: %v", err)
	}
	after := m.l.CleanerStats().CleanedTo
	if after < before || after != m.l.active().base {
		t.Fatalf("cleaned point %d after compaction (%d before), active segment at %d", after, before, m.l.active().base)
	}
	now := m.clock.Load()
	for off := before; off < after; off++ {
		if _, ok := m.firstSeen[off]; !ok && m.recs[off].Tombstone() {
			m.firstSeen[off] = now
		}
	}
	m.merged = m.merged || len(m.l.clean.state.marks) == maxMarks
	offs := m.check(t)
	// Below the cleaned point, each key at most once; gone tombstones
	// take their key with them.
	seen := map[string]bool{}
	for _, o := range offs {
		if o >= after {
			break
		}
		k := string(m.recs[o].Key)
		if seen[k] {
			t.Fatalf("key %s twice below the cleaned point %d: %v", k, after, offs)
		}
		seen[k] = true
	}
	if m.merged {
		return
	}
	for k, off := range newest(m.recs) {
		if seen, ok := m.firstSeen[off]; ok && now-seen >= modelRetention.Milliseconds() {
			for _, o := range offs {
				if string(m.recs[o].Key) == k {
					t.Fatalf("key %s, deleted at %d and expired, has a record at %d", k, off, o)
				}
			}
		}
	}
}

// Advance moves the clock, up to twice DeleteRetention.
func (m *compactModel) Advance(t *rapid.T) {
	m.clock.Add(rapid.Int64Range(0, 2*modelRetention.Milliseconds()).Draw(t, "advanceMs"))
}

// ReadFrom reads from a random offset, maybe in a gap, and through
// ReadBatches: both yield the records of a read from 0 at or after it.
func (m *compactModel) ReadFrom(t *rapid.T) {
	from := rapid.Int64Range(0, m.l.Head()).Draw(t, "from")
	all := readChecked(t, m.l, 0, m.recs)
	i, _ := slices.BinarySearch(all, from)
	if got := readChecked(t, m.l, from, m.recs); !slices.Equal(got, all[i:]) {
		t.Fatalf("read from %d: %v, want %v", from, got, all[i:])
	}
	checkChunks(t, m.l, from, rapid.SampledFrom([]int{1, 200, 1 << 20}).Draw(t, "maxBytes"), all[i:], m.recs)
}

func (m *compactModel) Reopen(t *rapid.T) {
	if err := m.l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	m.open(t)
	m.durable = int64(len(m.recs))
	if r := m.l.Recovery(); !r.Clean {
		t.Fatalf("recovery after a clean close: %+v", r)
	}
}

// Crash cuts the power: the head may fall back to the durable point,
// the cleaner's work stays.
func (m *compactModel) Crash(t *rapid.T) {
	seed := rapid.Uint64().Draw(t, "tearSeed")
	cleaned := m.l.CleanerStats().CleanedTo
	crashed := m.mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(seed, 0))})
	m.l.Close()
	m.mem, m.opts.FS = crashed, crashed
	m.open(t)
	head := m.l.Head()
	if head < m.durable || head > int64(len(m.recs)) {
		t.Fatalf("head after power loss %d, want in [%d, %d]", head, m.durable, len(m.recs))
	}
	if got := m.l.CleanerStats().CleanedTo; got != cleaned {
		t.Fatalf("cleaned point %d after power loss, %d before", got, cleaned)
	}
	m.recs = m.recs[:head]
	for off := range m.firstSeen {
		if off >= head {
			delete(m.firstSeen, off)
		}
	}
	m.durable = head
}

func (m *compactModel) Check(t *rapid.T) { m.check(t) }

// check reads from 0 and checks every record against the model, and that
// what must be there is.
func (m *compactModel) check(t *rapid.T) []int64 {
	if err := m.l.Err(); err != nil {
		t.Fatalf("sticky error: %v", err)
	}
	if m.l.Head() != int64(len(m.recs)) || m.l.StartOffset() != 0 {
		t.Fatalf("log [%d, %d), model [0, %d)", m.l.StartOffset(), m.l.Head(), len(m.recs))
	}
	offs := readChecked(t, m.l, 0, m.recs)
	have := make(map[int64]bool, len(offs))
	for _, o := range offs {
		have[o] = true
	}
	for k, off := range newest(m.recs) {
		seen, ok := m.firstSeen[off]
		expired := m.recs[off].Tombstone() && ok && m.clock.Load()-seen >= modelRetention.Milliseconds()
		if !have[off] && !expired {
			t.Fatalf("key %s: its newest record, at %d, is gone", k, off)
		}
	}
	for o := m.l.CleanerStats().CleanedTo; o < m.l.Head(); o++ {
		if !have[o] {
			t.Fatalf("offset %d, at or after the cleaned point, is gone", o)
		}
	}
	return offs
}
