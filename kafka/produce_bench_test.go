package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceDefaults: a franz-go producer with its default settings
// (acks=all, idempotent, snappy preferred, 10 ms linger, 50,000 buffered
// records) produces b.N records to four partitions, against passbook
// (fsync'd: acks=all) and then against kfake (in memory) in the same run.
// The kfake sub-benchmark reports passbook's rate as a fraction of its
// own ("x-kfake"). The 1 KiB passbook case also reports the bytes it
// stored per second as a fraction of this disk's buffered+fdatasync
// sequential bandwidth (buffered writes, then one fsync), measured in the same run ("x-disk").
//
// The passbook server logs nothing (no request log), as in production.
//
//	go test ./kafka -run '^$' -bench ProduceDefaults -benchtime 500000x
func BenchmarkProduceDefaults(b *testing.B) {
	for _, size := range []int{100, 1 << 10} {
		// Distinct random values, more of them than snappy's window
		// holds: the batches do not compress, as real data often does
		// not (one value repeated would shrink to almost nothing).
		values := make([][]byte, 4096)
		for i := range values {
			values[i] = make([]byte, size)
			for j := range values[i] {
				values[i][j] = byte(rand.IntN(256))
			}
		}
		name := fmt.Sprintf("%dB", size)
		var pbRate float64
		for _, target := range []string{"passbook", "kfake"} {
			b.Run(name+"/"+target, func(b *testing.B) {
				var addr string
				var dir string
				if target == "passbook" {
					addr, dir = startQuietServer(b)
				} else {
					addr = startKfake(b)
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(benchTopic))
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				produceValues(b, cl, values, 1000) // metadata, connections, producer id
				b.ResetTimer()
				began := time.Now()
				produceValues(b, cl, values, b.N)
				el := time.Since(began).Seconds()
				b.StopTimer()
				rate := float64(b.N) / el
				b.ReportMetric(rate, "records/s")
				b.ReportMetric(float64(b.N*size)/el/1e6, "MB/s")
				b.ReportMetric(0, "ns/op")
				switch target {
				case "passbook":
					pbRate = rate
					if size >= 1<<10 {
						disk := diskBandwidth(b, dir)
						b.ReportMetric(disk/1e6, "disk-MB/s")
						b.ReportMetric(float64(b.N*size)/el/disk, "x-disk")
					}
				case "kfake":
					if pbRate > 0 {
						b.ReportMetric(pbRate/rate, "x-kfake")
					}
				}
			})
		}
	}
}

// startQuietServer starts a passbook server with default options that
// logs nothing, with a four-partition topic benchTopic, and returns its
// address and data directory.
func startQuietServer(b *testing.B) (addr, dir string) {
	dir = b.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.CreateTopic(benchTopic, passbook.TopicConfig{Partitions: benchPartitions}); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(db, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		<-done
		if err := db.Close(); err != nil {
			b.Errorf("close db: %v", err)
		}
	})
	return ln.Addr().String(), dir
}

func startKfake(b *testing.B) string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(benchPartitions, benchTopic))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// produceValues produces n records to the client's default topic, their
// values taken in turn from values, and waits for every acknowledgement.
func produceValues(b *testing.B, cl *kgo.Client, values [][]byte, n int) {
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	wg.Add(n)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			first.CompareAndSwap(nil, err)
		}
		wg.Done()
	}
	ctx := context.Background()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, promise)
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d records failed, the first with %v", f, n, first.Load())
	}
}

// diskBandwidth measures the sequential write bandwidth of the file
// system holding dir, in bytes per second: 128 MiB written in 1 MiB
// writes (buffered) and one fsync of the new file at the end.
func diskBandwidth(b *testing.B, dir string) float64 {
	const chunk, total = 1 << 20, 128 << 20
	f, err := os.Create(filepath.Join(dir, "disk-bandwidth"))
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(rand.IntN(256))
	}
	began := time.Now()
	for range total / chunk {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return total / time.Since(began).Seconds()
}
