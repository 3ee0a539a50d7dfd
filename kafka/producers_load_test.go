package kafka

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// TestProducerStates_LoadReadsInChunks: the producer state rebuilt from
// a log's tail, which load reads producerReadChunk at a time, is the state
// the appends made, batch by batch: with thousands of small batches of
// three producers whose headers straddle the chunk boundaries, plain
// batches among them, and plain batches larger than a chunk.
func TestProducerStates_LoadReadsInChunks(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("idem", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := topic.Partition(0)
	want := &partitionProducers{producers: map[int64]*producerState{}}
	now := time.Now()
	seq := map[int64]int32{}
	for i := range 6000 {
		var b []byte
		switch {
		case i%1500 == 750:
			b = testBatch(t, 3, producerReadChunk) // larger than a chunk
		case i%7 == 3:
			b = testBatch(t, 1, 10+i%50)
		default:
			pid := int64(1 + i%3)
			n := 1 + i%4
			b = idemBatch(t, pid, 0, seq[pid], n)
			seq[pid] += int32(n)
		}
		off, err := l.AppendBatch(b, storage.InOS)
		if err != nil {
			t.Fatal(err)
		}
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.ProducerID >= 0 {
			want.remember(h, off, lastSequence(h), now)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, _ = db.Topic("idem")
	l, _ = topic.Partition(0)
	if l.Size() < 4*producerReadChunk {
		t.Fatalf("log of %d bytes: too small to need several chunks", l.Size())
	}
	var logged batchCount
	ps := newProducerStates(1<<40, slog.New(&logged))
	pp := ps.partition("idem", 0, l)
	pp.log, pp.producers = l, map[int64]*producerState{}
	ps.load(pp, "idem", 0)
	if logged.batches != 6000 {
		t.Errorf("load read %d batch headers, want all 6,000", logged.batches)
	}
	if len(pp.producers) != len(want.producers) {
		t.Fatalf("%d producers rebuilt, want %d", len(pp.producers), len(want.producers))
	}
	for id, w := range want.producers {
		got := pp.producers[id]
		if got == nil {
			t.Fatalf("producer %d not rebuilt", id)
		}
		if got.epoch != w.epoch || !reflect.DeepEqual(got.batches, w.batches) || got.lastMs != w.lastMs {
			t.Errorf("producer %d: rebuilt epoch %d batches %+v lastMs %d, want %d %+v %d", id, got.epoch, got.batches, got.lastMs, w.epoch, w.batches, w.lastMs)
		}
	}
}

// batchCount is a slog handler that keeps the batches attribute of the
// "rebuilt producer state" record.
type batchCount struct{ batches int64 }

func (c *batchCount) Enabled(context.Context, slog.Level) bool { return true }
func (c *batchCount) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "batches" {
			c.batches = a.Value.Int64()
		}
		return true
	})
	return nil
}
func (c *batchCount) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *batchCount) WithGroup(string) slog.Handler      { return c }

// BenchmarkProducerStates_Load rebuilds the producer state of a partition
// of 100,000 small idempotent batches (about 8 MB), as the first
// idempotent produce after a restart does, and reports the file reads it
// makes (reads/op, counted through a counting vfs.FS: ReadBatches' and
// load's own).
func BenchmarkProducerStates_Load(b *testing.B) {
	dir := b.TempDir()
	var reads atomic.Int64
	fsys := vfs.NewFaulty(vfs.OS(), vfs.FaultyOptions{FailAt: -1, Kinds: vfs.OpRead, Filter: func(op vfs.Op) bool {
		if strings.HasSuffix(op.Name, ".log") {
			reads.Add(1)
		}
		return false
	}})
	db, err := passbook.Open(dir, &passbook.Options{FS: fsys})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	topic, err := db.CreateTopic("idem", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	l, _ := topic.Partition(0)
	for i := range 100_000 {
		if _, err := l.AppendBatch(idemBatch(b, int64(1+i%8), 0, int32(i/8), 1), storage.InOS); err != nil {
			b.Fatal(err)
		}
	}
	ps := newProducerStates(1<<40, slog.New(slog.DiscardHandler))
	reads.Store(0)
	for b.Loop() {
		pp := &partitionProducers{log: l, producers: map[int64]*producerState{}}
		ps.load(pp, "idem", 0)
		if len(pp.producers) != 8 {
			b.Fatalf("%d producers, want 8", len(pp.producers))
		}
	}
	b.ReportMetric(float64(reads.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
}
