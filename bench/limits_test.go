package main

import (
	"os"
	"strings"
	"testing"
)

// TestLimits measures every limit, small, in a temporary directory: each
// figure is there and positive, the directory is left empty, and the
// report has a row for each.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	sz := limitSizes{fsyncs: 3, parRounds: 2, writes: 320, rounds: 2, copies: 1000, touchBytes: 1 << 20, seqBytes: 3<<20 + 17, seqRounds: 1}
	l, err := measureLimits(dir, sz)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]stats{
		"fsync": l.fsync, "fsync 8": l.fsyncPar[8], "fsync 64": l.fsyncPar[64], "write": l.write1, "write 16": l.write16,
		"memcpy": l.memcpy, "touch page": l.touchPage, "touch record": l.touchRecord, "sequential": l.seqBytesPerS,
	} {
		if !(s.min > 0 && s.min <= s.median && s.median <= s.max) {
			t.Errorf("%s: %+v, want 0 < min ≤ median ≤ max", name, s)
		}
	}
	if l.seqBytes != sz.seqBytes {
		t.Errorf("sequential bytes %d, want %d", l.seqBytes, sz.seqBytes)
	}
	if left := mustReadDir(t, dir); len(left) != 0 {
		t.Errorf("left behind in the directory: %v", left)
	}
	md := l.markdown()
	t.Log(md)
	for _, want := range []string{
		"| fdatasync of a 170 B append to one file |", "| fdatasync of 8 files in parallel", "| fdatasync of 64 files in parallel",
		"| one write(2) of 170 B |", "| one write(2) of 16 × 170 B, per record |", "| copy of 170 B into a mapped page already touched |",
		"| first touch of a fresh page of a mapped, preallocated file, per 4 KiB page |", "| the same, per 170 B record copied in |",
		"| buffered write + fdatasync, 3.00 MiB in 1 MiB writes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestNanos(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want string
	}{
		{9.43e-9, "9.4 ns"}, {390e-9, "390 ns"}, {1.234e-6, "1.23 µs"}, {73.4e-6, "73.40 µs"}, {212e-6, "212 µs"},
		{2.5e-3, "2.50 ms"}, {0.31, "310 ms"}, {2.4, "2.40 s"},
	} {
		if got := nanos(tc.s); got != tc.want {
			t.Errorf("nanos(%g) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if got := mbps(405.4e6); got != "405 MB/s" {
		t.Errorf("mbps = %q", got)
	}
	if got := mbps(1234.6e6); got != "1,235 MB/s" {
		t.Errorf("mbps = %q", got)
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
