package storage

import (
	"syscall"
	"testing"
	"time"
)

// manySegments builds, once per benchmark, a cleanly closed partition of
// n segments of about 128 KiB each (100-byte records in batches of 10).
func manySegments(b *testing.B, n int) (dir string, o *Options) {
	b.Helper()
	dir = b.TempDir()
	o = &Options{Durability: InOS, SegmentBytes: 128 << 10}
	l := mustOpen(b, dir, o)
	rs := hundredBytes(10)
	for l.SegmentCount() < n {
		if _, err := l.Append(rs, DefaultDurability); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, o
}

// BenchmarkLog_Open_6000Segments opens a cleanly closed partition of
// 6,000 closed segments: each is loaded from its index files (the ends of
// the offset and time indexes, the batches after the last index entry,
// the first batch's header), none re-validated. It reports the bytes
// allocated per Open, the time of Open alone (open-ms/op) and the CPU
// time (user and system) of Open and Close; the page cache holds the
// files.
func BenchmarkLog_Open_6000Segments(b *testing.B) {
	const n = 6000
	dir, o := manySegments(b, n)
	b.ReportAllocs()
	cpu := cpuTime()
	var open time.Duration
	for b.Loop() {
		began := time.Now()
		l := mustOpen(b, dir, o)
		open += time.Since(began)
		if r := l.Recovery(); !r.Clean || r.Validated != 0 || r.Segments != n || r.RebuiltIndex != 0 {
			b.Fatalf("recovery %+v, want a clean open of %d segments", r, n)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	b.ReportMetric(float64(open.Microseconds())/1e3/float64(b.N), "open-ms/op")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
