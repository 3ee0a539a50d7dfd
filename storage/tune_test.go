package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// producerBatch is a batch as a Kafka producer sends it: n records of
// size bytes each (compressible), in codec c, stamped at ms.
func producerBatch(t *testing.T, n, size int, c batch.Codec, ms int64) []byte {
	t.Helper()
	var recs []batch.Record
	for i := range n {
		recs = append(recs, batch.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{'a' + byte(i%26)}, size), Timestamp: time.UnixMilli(ms)})
	}
	b, err := batch.Append(nil, recs, batch.Options{Codec: c, Idempotent: true, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstBatch reads the stored batch at offset off.
func firstBatch(t *testing.T, l *Log, off int64) (batch.Header, []batch.Record) {
	t.Helper()
	b := mustRead(t, l, off)
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var recs []batch.Record
	for r, err := range batch.Records(b[:h.Size()]) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r.Clone())
	}
	return h, recs
}

func TestLog_AppendBatch_Compression(t *testing.T) {
	for _, tc := range []struct {
		name     string
		topic    *batch.Codec // Options.Compression
		sent     batch.Codec
		wantKept bool // the stored bytes are the producer's
	}{
		{"producer keeps gzip", nil, batch.Gzip, true},
		{"zstd recompresses gzip", Codec(batch.Zstd), batch.Gzip, false},
		{"zstd compresses none", Codec(batch.Zstd), batch.None, false},
		{"uncompressed decompresses lz4", Codec(batch.None), batch.LZ4, false},
		{"snappy keeps snappy", Codec(batch.Snappy), batch.Snappy, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), &Options{Compression: tc.topic})
			defer l.Close()
			now := time.Now().UnixMilli()
			b := producerBatch(t, 5, 300, tc.sent, now)
			sent := bytes.Clone(b)
			if _, err := l.AppendBatch(b, InOS); err != nil {
				t.Fatal(err)
			}
			h, recs := firstBatch(t, l, 0)
			want := tc.sent
			if tc.topic != nil {
				want = *tc.topic
			}
			if h.Codec() != want {
				t.Fatalf("stored codec %s, want %s", h.Codec(), want)
			}
			if h.ProducerID != 7 || h.ProducerEpoch != 1 || h.BaseSequence != 3 || h.MaxTimestamp != now {
				t.Fatalf("header %+v lost the producer's fields", h)
			}
			if len(recs) != 5 || string(recs[4].Key) != "k4" || len(recs[4].Value) != 300 || recs[4].Offset != 4 {
				t.Fatalf("records %d, last %q", len(recs), recs[len(recs)-1].Key)
			}
			if kept := h.Size() == len(sent); kept != tc.wantKept && tc.wantKept {
				t.Fatalf("stored %d bytes, sent %d: the batch should be kept", h.Size(), len(sent))
			}
		})
	}
}

func TestLog_AppendBatch_MaxMessageBytes(t *testing.T) {
	// 20 records of 1,000 bytes: about 20 KB as sent uncompressed, a few
	// hundred bytes in zstd.
	plain := producerBatch(t, 20, 1000, batch.None, time.Now().UnixMilli())
	zstd := producerBatch(t, 20, 1000, batch.Zstd, time.Now().UnixMilli())
	limit := 4 << 10
	if len(plain) <= limit || len(zstd) >= limit {
		t.Fatalf("fixture: plain %d, zstd %d bytes around the limit %d", len(plain), len(zstd), limit)
	}
	for _, tc := range []struct {
		name string
		o    Options
		b    []byte
		ok   bool
	}{
		{"compressed batch under the limit", Options{MaxMessageBytes: limit}, zstd, true},
		{"uncompressed batch over the limit", Options{MaxMessageBytes: limit}, plain, false},
		{"recompressed under the limit is still refused as sent", Options{MaxMessageBytes: limit, Compression: Codec(batch.Zstd)}, plain, false},
		{"recompressed over the limit", Options{MaxMessageBytes: len(zstd) + 1, Compression: Codec(batch.None)}, zstd, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), &tc.o)
			defer l.Close()
			_, err := l.AppendBatch(bytes.Clone(tc.b), InOS)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBatchTooLarge)) {
				t.Fatalf("AppendBatch: %v, want ok=%v or ErrBatchTooLarge", err, tc.ok)
			}
			if want := int64(0); !tc.ok && l.Head() != want {
				t.Fatalf("head %d after a refused batch", l.Head())
			}
		})
	}
}

func TestLog_LogAppendTime(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_800_000_000_000)
	l := mustOpen(t, t.TempDir(), &Options{LogAppendTime: true, TimestampAfterMax: time.Second,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	defer l.Close()
	// A producer's timestamps a day in the future: no INVALID_TIMESTAMP,
	// the broker's time replaces them.
	if _, err := l.AppendBatch(producerBatch(t, 3, 10, batch.Gzip, clock.Load()+86_400_000), InOS); err != nil {
		t.Fatal(err)
	}
	h, _ := firstBatch(t, l, 0)
	if h.Attributes&batch.AttrLogAppendTime == 0 || h.MaxTimestamp != 1_800_000_000_000 {
		t.Fatalf("attributes %#x max timestamp %d: want the LogAppendTime bit and the broker's time", h.Attributes, h.MaxTimestamp)
	}
	if _, err := batch.Check(mustRead(t, l, 0)); err != nil {
		t.Fatalf("stored batch fails its CRC: %v", err)
	}
}

func mustRead(t *testing.T, l *Log, off int64) []byte {
	t.Helper()
	ch, err := l.ReadBatches(off, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Release()
	var buf bytes.Buffer
	if _, err := ch.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLog_Reconfigure(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_700_000_000_000)
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 1 << 10, SyncInterval: time.Hour,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	defer l.Close()
	for i := range 40 {
		if _, err := l.Append([]batch.Record{{Key: fmt.Appendf(nil, "k%d", i%4), Value: bytes.Repeat([]byte{'v'}, 100)}}, InOS); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() < 3 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	t.Run("retention applies on the next pass", func(t *testing.T) {
		clock.Add(int64(time.Hour / time.Millisecond))
		if n, _ := l.Retain(); n != 0 {
			t.Fatalf("retention deleted %d segments with no limit", n)
		}
		o := l.Options()
		o.RetentionAge = time.Minute
		if err := l.Reconfigure(o); err != nil {
			t.Fatal(err)
		}
		if n, err := l.Retain(); err != nil || n == 0 {
			t.Fatalf("Retain after retention.ms=1m: %d segments, %v", n, err)
		}
		if l.SegmentCount() != 1 {
			t.Fatalf("%d segments left, want the active one", l.SegmentCount())
		}
	})
	t.Run("compact turned on", func(t *testing.T) {
		o := l.Options()
		o.RetentionAge, o.Compact = 0, true
		if err := l.Reconfigure(o); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append([]batch.Record{{Value: []byte("no key")}}, InOS); !errors.Is(err, ErrNoKey) {
			t.Fatalf("keyless append on a log made compacted: %v", err)
		}
		if _, err := l.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad options change nothing", func(t *testing.T) {
		before := l.Options()
		o := before
		o.MinDirtyRatio = 2
		if err := l.Reconfigure(o); err == nil {
			t.Fatal("MinDirtyRatio 2 accepted")
		}
		if after := l.Options(); after.MinDirtyRatio != before.MinDirtyRatio {
			t.Fatalf("ratio %v after a refused Reconfigure", after.MinDirtyRatio)
		}
	})
}

func TestLog_MinCompactionLag(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.MinCompactionLag = time.Hour })
	k.putN(200, 5, 10)
	st, err := k.l.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.RecordsRemoved != 0 {
		t.Fatalf("removed %d records younger than min.compaction.lag.ms", st.RecordsRemoved)
	}
	k.clock.Add(int64(2 * time.Hour / time.Millisecond))
	if st, err = k.l.Compact(context.Background()); err != nil || st.RecordsRemoved == 0 {
		t.Fatalf("after the lag: removed %d, %v", st.RecordsRemoved, err)
	}
}

func TestLog_MaxCompactionLag(t *testing.T) {
	k := newKVLog(t, func(o *Options) { o.MaxCompactionLag = time.Minute })
	k.putN(200, 5, 10)
	o := k.l.Options()
	nowMs := k.clock.Load()
	if k.l.compactionOverdue(&o, nowMs) {
		t.Fatal("compaction overdue before max.compaction.lag.ms")
	}
	if !k.l.compactionOverdue(&o, nowMs+2*time.Minute.Milliseconds()) {
		t.Fatal("compaction not overdue past max.compaction.lag.ms")
	}
	if _, err := k.l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.l.compactionOverdue(&o, nowMs+2*time.Minute.Milliseconds()) {
		t.Fatal("compaction overdue with nothing dirty")
	}
	if got := rollAge(&o); got != time.Minute {
		t.Fatalf("a compacted log rolls at %v, want max.compaction.lag.ms", got)
	}
}

// BenchmarkLog_AppendBatch_Compression: what compression.type costs a
// producer's batch (100 records of 200 bytes, sent in gzip): kept as sent
// (producer), or recompressed to zstd or stored uncompressed.
func BenchmarkLog_AppendBatch_Compression(b *testing.B) {
	for _, tc := range []struct {
		name  string
		codec *batch.Codec
	}{{"producer", nil}, {"zstd", Codec(batch.Zstd)}, {"uncompressed", Codec(batch.None)}} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := Open(b.TempDir(), &Options{Compression: tc.codec})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var recs []batch.Record
			for i := range 100 {
				recs = append(recs, batch.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, 200)})
			}
			sent, err := batch.Append(nil, recs, batch.Options{Codec: batch.Gzip})
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, len(sent))
			b.SetBytes(int64(len(sent)))
			b.ResetTimer()
			for range b.N {
				copy(buf, sent)
				if _, err := l.AppendBatch(buf, InOS); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
