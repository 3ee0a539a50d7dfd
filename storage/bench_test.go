package storage

import (
	"bytes"
	"sync"
	"testing"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// Benchmarks report records/s; docs/benchmarks.md records the figures and
// bench/ runs the same workloads on peers for ratios.

func hundredBytes(n int) []batch.Record {
	rs := make([]batch.Record, n)
	v := bytes.Repeat([]byte("x"), 100)
	for i := range rs {
		rs[i].Value = v
	}
	return rs
}

func reportRate(b *testing.B, records int) {
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkLog_AppendBatch1000_Fsync: the mapped path; _Write on write(2).
func BenchmarkLog_AppendBatch1000_Fsync(b *testing.B) {
	appendBatch1000(b, &Options{Durability: Fsync})
}

func BenchmarkLog_AppendBatch1000_Fsync_Write(b *testing.B) {
	appendBatch1000(b, &Options{Durability: Fsync, FS: vfs.WithoutMapping(vfs.OS())})
}

func appendBatch1000(b *testing.B, o *Options) {
	l := mustOpen(b, b.TempDir(), o)
	defer l.Close()
	rs := hundredBytes(1000)
	b.SetBytes(100 * 1000)
	for b.Loop() {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N*1000)
}

// BenchmarkLog_Append1_InOS appends one record at a time through the
// mapped active segment (mapwrite.go); _Write is the same on write(2),
// the baseline.
func BenchmarkLog_Append1_InOS(b *testing.B) { appendOne(b, &Options{Durability: InOS}) }

func BenchmarkLog_Append1_InOS_Write(b *testing.B) {
	appendOne(b, &Options{Durability: InOS, FS: vfs.WithoutMapping(vfs.OS())})
}

func appendOne(b *testing.B, o *Options) {
	l := mustOpen(b, b.TempDir(), o)
	defer l.Close()
	rs := hundredBytes(1)
	b.SetBytes(100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
}

// BenchmarkLog_Append1_InOS16Goroutines is issue 21's item 4: sixteen
// appenders of one record each, InOS, on one log.
func BenchmarkLog_Append1_InOS16Goroutines(b *testing.B) {
	appendGoroutines(b, &Options{Durability: InOS}, 16)
}

func BenchmarkLog_Append1_InOS16Goroutines_Write(b *testing.B) {
	appendGoroutines(b, &Options{Durability: InOS, FS: vfs.WithoutMapping(vfs.OS())}, 16)
}

func BenchmarkLog_Append1_Fsync16Goroutines(b *testing.B) {
	appendGoroutines(b, &Options{Durability: Fsync}, 16)
}

func BenchmarkLog_Append1_Fsync16Goroutines_Write(b *testing.B) {
	appendGoroutines(b, &Options{Durability: Fsync, FS: vfs.WithoutMapping(vfs.OS())}, 16)
}

// appendGoroutines runs n appenders of one 100-byte record each on one log.
func appendGoroutines(b *testing.B, o *Options, n int) {
	l := mustOpen(b, b.TempDir(), o)
	defer l.Close()
	rs := hundredBytes(1)
	b.SetBytes(100)
	var wg sync.WaitGroup
	per := b.N/n + 1
	b.ResetTimer()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if _, err := l.Append(rs, DefaultDurability); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	reportRate(b, per*n)
	if rounds, calls := combined(l); rounds > 0 {
		b.ReportMetric(float64(calls)/float64(rounds), "appends/round")
	}
}

func BenchmarkLog_Read1M(b *testing.B) {
	l := mustOpen(b, b.TempDir(), nil)
	defer l.Close()
	rs := hundredBytes(1000)
	for range 1000 {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for rec, err := range l.Records(0) {
			if err != nil || len(rec.Value) != 100 {
				b.Fatal(err)
			}
			n++
		}
		if n != 1_000_000 {
			b.Fatalf("read %d", n)
		}
	}
	reportRate(b, b.N*1_000_000)
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() {
		for range l.Records(0) {
		}
	}))/1e6, "allocs/record")
}

// BenchmarkLog_Open_Recover opens a partition whose last shutdown was not
// clean: recovery re-validates its whole active segment (64 MiB of
// 1,000-record batches) batch by batch, as after kill -9 with a checkpoint
// at the segment's start. The page cache holds the file, so this measures
// the walker, not the disk.
func BenchmarkLog_Open_Recover(b *testing.B) {
	dir := b.TempDir()
	l := mustOpen(b, dir, &Options{Durability: InOS})
	rs := hundredBytes(1000)
	for l.Size() < 64<<20 {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	size := l.Size()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		if err := writeCheckpoint(vfs.OS(), dir, checkpoint{}); err != nil {
			b.Fatal(err)
		}
		l := mustOpen(b, dir, nil)
		if r := l.Recovery(); r.Clean || r.Validated != size {
			b.Fatalf("recovery %+v, want %d bytes validated", r, size)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLog_Open_Clean opens a cleanly closed partition of 16 segments:
// each is loaded from its index files, with no batch re-validated.
func BenchmarkLog_Open_Clean(b *testing.B) {
	dir := b.TempDir()
	l := mustOpen(b, dir, &Options{Durability: InOS, SegmentBytes: 4 << 20})
	rs := hundredBytes(1000)
	for l.SegmentCount() < 16 {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		l := mustOpen(b, dir, &Options{SegmentBytes: 4 << 20})
		if r := l.Recovery(); !r.Clean || r.Validated != 0 {
			b.Fatalf("recovery %+v, want a clean open", r)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
