package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/passbook-log/passbook/batch"
)

// BenchmarkLog_Compact compacts a log of PASSBOOK_COMPACT_RECORDS records
// (default 1,000,000; the figure is 10,000,000) with 100-byte
// values over 100,000 keys drawn at random, on the OS file system, in
// 16 MiB segments. It reports the cleaner's throughput (bytes of the log
// compacted per second of compaction, fsyncs included) and the key map's
// memory per key. Each iteration builds the log anew, untimed; run it
// once:
//
//	PASSBOOK_COMPACT_RECORDS=10000000 go test -run='^$' -bench=Compact -benchtime=1x ./storage/
func BenchmarkLog_Compact(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("PASSBOOK_COMPACT_RECORDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("PASSBOOK_COMPACT_RECORDS=%q", s)
		}
	}
	const keys = 100_000
	var total CompactStats
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := mustOpen(b, b.TempDir(), &Options{Compact: true, SegmentBytes: 16 << 20})
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		value := make([]byte, 100)
		recs := make([]batch.Record, 1000)
		for done := 0; done < n; done += len(recs) {
			recs = recs[:min(len(recs), n-done)]
			for j := range recs {
				recs[j] = batch.Record{Key: fmt.Appendf(nil, "key-%06d", rng.IntN(keys)), Value: value}
			}
			if _, err := l.Append(recs, InOS); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := l.Compact(context.Background())
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if st.Keys == 0 || st.RecordsRemoved == 0 {
			b.Fatalf("nothing compacted: %+v", st)
		}
		total.BytesBefore += st.BytesBefore
		total.BytesAfter += st.BytesAfter
		total.Duration += st.Duration
		total.Keys += st.Keys
		total.MapBytes = max(total.MapBytes, st.MapBytes)
		total.RecordsRemoved += st.RecordsRemoved
		if i == 0 {
			b.Logf("%d records, %d segments of %d bytes: %+v", n, st.Segments, st.BytesBefore, st)
		}
		l.Close()
	}
	b.ReportMetric(float64(total.BytesBefore)/1e6/total.Duration.Seconds(), "MB/s")
	b.ReportMetric(float64(total.MapBytes)/float64(total.Keys/int64(b.N)), "map-B/key")
	b.ReportMetric(keySlotBytes, "B/entry")
	b.ReportMetric(float64(total.RecordsRemoved)/float64(b.N), "removed/op")
}
