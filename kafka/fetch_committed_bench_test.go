package kafka

import (
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetch_Isolation measures a Fetch of 1 MiB of batches, on the
// wire from a raw connection, read_uncommitted against read_committed,
// on a partition that never held a transaction: read_committed must cost
// nothing more there (the LSO is the head, and no aborted-transaction
// index exists to look at).
//
//	go test -run '^$' -bench BenchmarkFetch_Isolation -benchtime 3s ./kafka/
func BenchmarkFetch_Isolation(b *testing.B) {
	ts := startServer(b, nil)
	topic := ts.createTopic(b, "iso", 1)
	recs := make([]passbook.Record, 1000)
	for i := range recs {
		recs[i] = passbook.Record{Value: benchValue}
	}
	for range 100 { // 100,000 records
		if _, err := topic.AppendTo(0, recs, storage.InOS); err != nil {
			b.Fatal(err)
		}
	}
	l, err := topic.Partition(0)
	if err != nil {
		b.Fatal(err)
	}
	head := l.Head()
	raw := dialRaw(b, ts.addr)
	fetch := func(iso int8, from int64) int {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.IsolationLevel, req.MaxBytes, req.MaxWaitMillis = 12, iso, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "iso"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = from, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := raw.do(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.LastStableOffset != head {
			b.Fatalf("fetch at %d: error %d, %d bytes, LSO %d", from, p.ErrorCode, len(p.RecordBatches), p.LastStableOffset)
		}
		return len(p.RecordBatches)
	}
	// Both isolation levels in every iteration, in alternating order, so
	// that the machine's load (shared cores) weighs on both alike.
	var spent [2]time.Duration
	var bytes int64
	from := int64(0)
	i := 0
	for b.Loop() {
		for k := range 2 {
			iso := int8((i + k) % 2)
			began := time.Now()
			bytes += int64(fetch(iso, from))
			spent[iso] += time.Since(began)
		}
		i++
		from = (from + 10_000) % head
	}
	n := float64(max(b.N, 1))
	b.ReportMetric(float64(spent[0].Nanoseconds())/n, "ns/uncommitted")
	b.ReportMetric(float64(spent[1].Nanoseconds())/n, "ns/committed")
	b.ReportMetric(float64(bytes)/n/2, "B/fetch")
}

// BenchmarkReadBatches_Isolation is the storage half of it: a chunk of
// 1 MiB read uncommitted (ReadBatches) against read committed
// (ReadCommittedBatches and AbortedTxns over the range), on a log with
// no transaction.
func BenchmarkReadBatches_Isolation(b *testing.B) {
	l, err := storage.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	recs := make([]passbook.Record, 1000)
	for i := range recs {
		recs[i] = passbook.Record{Value: benchValue}
	}
	for range 100 {
		if _, err := l.Append(recs, storage.InOS); err != nil {
			b.Fatal(err)
		}
	}
	read := func(committed bool, from int64) {
		read := l.ReadBatches
		if committed {
			read = l.ReadCommittedBatches
		}
		c, err := read(from, 1<<20)
		if err != nil || c.Size == 0 {
			b.Fatalf("read at %d: %v, %d bytes", from, err, c.Size)
		}
		if committed && len(l.AbortedTxns(from, c.Next)) != 0 {
			b.Fatal("aborted transactions on a log without any")
		}
		c.Release()
	}
	var spent [2]time.Duration
	from := int64(0)
	i := 0
	for b.Loop() {
		for k := range 2 {
			c := (i + k) % 2
			began := time.Now()
			read(c == 1, from)
			spent[c] += time.Since(began)
		}
		i++
		from = (from + 10_000) % l.Head()
	}
	n := float64(max(b.N, 1))
	b.ReportMetric(float64(spent[0].Nanoseconds())/n, "ns/uncommitted")
	b.ReportMetric(float64(spent[1].Nanoseconds())/n, "ns/committed")
}
