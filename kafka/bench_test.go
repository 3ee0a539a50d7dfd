package kafka

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The benchmarks run the franz-go client against passbook and, as a
// reference, against franz-go's in-memory fake cluster (kfake), and
// report records/s; the kfake sub-benchmark also reports passbook's rate
// as a fraction of its own ("x-kfake"). Records are 100 bytes.
//
//	go test ./kafka -run '^$' -bench . -benchtime 2000000x

const (
	benchPartitions = 4
	benchTopic      = "bench"
	recordSize      = 100
)

// benchTarget is a broker to benchmark against.
type benchTarget struct {
	name  string
	start func(b *testing.B) (addr string, fill func(n int))
}

var benchTargets = []benchTarget{
	{"passbook", func(b *testing.B) (string, func(int)) {
		ts := startServer(b, nil)
		topic := ts.createTopic(b, benchTopic, benchPartitions)
		return ts.addr, func(n int) { fillDirect(b, topic, n) }
	}},
	{"kfake", func(b *testing.B) (string, func(int)) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(benchPartitions, benchTopic))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		addr := c.ListenAddrs()[0]
		return addr, func(n int) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(100_000))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			produceN(b, cl, n/benchPartitions*benchPartitions)
		}
	}},
}

// rates keeps each target's last rate per benchmark, for the ratio.
var rates sync.Map

func report(b *testing.B, bench, target string, perSec float64) {
	b.ReportMetric(perSec, "records/s")
	b.ReportMetric(0, "ns/op")
	rates.Store(bench+"/"+target, perSec)
	if target == "kfake" {
		if pb, ok := rates.Load(bench + "/passbook"); ok {
			b.ReportMetric(pb.(float64)/perSec, "x-kfake")
		}
	}
}

// benchValue is random, so that nothing compresses it; producers send
// uncompressed batches.
var benchValue = func() []byte {
	b := make([]byte, recordSize)
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return b
}()

// produceN produces n records and waits for every acknowledgement.
func produceN(b *testing.B, cl *kgo.Client, n int) {
	var wg sync.WaitGroup
	var failed atomic.Int64
	wg.Add(n)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
		wg.Done()
	}
	ctx := context.Background()
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: benchTopic, Value: benchValue}, promise)
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d records failed", f, n)
	}
}

func producer(b *testing.B, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(250_000), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	// Warm up: metadata, connections.
	produceN(b, cl, 1000)
	return cl
}

// BenchmarkProduce: franz-go producer, acks=all (fsync'd for passbook),
// 100-byte records, four partitions.
func BenchmarkProduce(b *testing.B) {
	for _, tg := range benchTargets {
		b.Run(tg.name, func(b *testing.B) {
			addr, _ := tg.start(b)
			cl := producer(b, addr)
			b.ResetTimer()
			began := time.Now()
			produceN(b, cl, b.N)
			report(b, "produce", tg.name, float64(b.N)/time.Since(began).Seconds())
		})
	}
}

// BenchmarkFetch: a franz-go consumer reads b.N 100-byte records from
// offset 0 of four partitions.
func BenchmarkFetch(b *testing.B) {
	for _, tg := range benchTargets {
		b.Run(tg.name, func(b *testing.B) {
			addr, fill := tg.start(b)
			n := max(b.N/benchPartitions*benchPartitions, benchPartitions)
			fill(n)
			offsets := map[int32]kgo.Offset{}
			for p := range int32(benchPartitions) {
				offsets[p] = kgo.NewOffset().At(0)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{benchTopic: offsets}),
				kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(8<<20))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			began := time.Now()
			for got := 0; got < n; {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					b.Fatalf("consumed %d of %d: %v", got, n, err)
				}
				fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", t, p, err) })
				got += fs.NumRecords()
			}
			report(b, "fetch", tg.name, float64(n)/time.Since(began).Seconds())
		})
	}
}

// fillDirect appends n records to the topic's partitions through the
// embedded API, in batches of 1,000 (what a producer's batches hold).
func fillDirect(b *testing.B, topic *passbook.Topic, n int) {
	recs := make([]passbook.Record, 1000)
	for i := range recs {
		recs[i] = passbook.Record{Value: benchValue}
	}
	per := n / topic.Partitions()
	for p := range int32(topic.Partitions()) {
		for left := per; left > 0; left -= len(recs) {
			if _, err := topic.AppendTo(p, recs[:min(left, len(recs))], storage.InOS); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkProduceLatency measures the produce rate a franz-go producer
// sustains for a second, then produces at half that rate for three
// seconds and reports the latency percentiles (from Produce to the
// acknowledgement; acks=all).
func BenchmarkProduceLatency(b *testing.B) {
	for _, tg := range benchTargets {
		b.Run(tg.name, func(b *testing.B) {
			addr, _ := tg.start(b)
			cl := producer(b, addr)
			b.ResetTimer()
			for range b.N {
				began := time.Now()
				n := 0
				for time.Since(began) < time.Second {
					produceN(b, cl, 20_000)
					n += 20_000
				}
				maxRate := float64(n) / time.Since(began).Seconds()
				lat := paced(b, cl, maxRate/2, 3*time.Second)
				slices.Sort(lat)
				pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
				b.ReportMetric(maxRate, "max-records/s")
				b.ReportMetric(maxRate/2, "paced-records/s")
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(pct(0.999), "p99.9-ms")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// paced produces at rate records/s for d and returns each record's latency.
func paced(b *testing.B, cl *kgo.Client, rate float64, d time.Duration) []time.Duration {
	const tick = time.Millisecond
	perTick := rate * tick.Seconds()
	total := int(rate * d.Seconds())
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	var failed atomic.Int64
	wg.Add(total)
	began := time.Now()
	sent := 0
	for sent < total {
		due := min(int(perTick*float64(time.Since(began)/tick+1)), total)
		for ; sent < due; sent++ {
			i, at := sent, time.Now()
			cl.Produce(context.Background(), &kgo.Record{Topic: benchTopic, Value: benchValue}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
				lat[i] = time.Since(at)
				wg.Done()
			})
		}
		time.Sleep(tick)
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records failed", f)
	}
	if os.Getenv("PASSBOOK_BENCH_TRACE") != "" {
		per := total / 30
		for w := 0; w < 30; w++ {
			b.Logf("window %2d: max %v", w, slices.Max(lat[w*per:(w+1)*per]))
		}
	}
	if el := time.Since(began); el > d*3/2 {
		b.Logf("fell behind: %d records took %v at a target of %v", total, el, d)
	}
	return lat
}
