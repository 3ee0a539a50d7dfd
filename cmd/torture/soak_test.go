package main

import (
	"io"
	"testing"
	"time"
)

// TestVerdict: the soak fails on growth, not on a passing bump (the
// clients' metadata refresh every 5 minutes holds a few more connections
// for a minute), and not on noise.
func TestVerdict(t *testing.T) {
	series := func(f func(i int) (rss float64, g, fd int)) []soakRow {
		var rows []soakRow
		for i := range 60 {
			rss, g, fd := f(i)
			rows = append(rows, soakRow{elapsed: time.Duration(i+1) * 10 * time.Second, rssMiB: rss, goroutines: g, fds: fd})
		}
		return rows
	}
	tests := []struct {
		name string
		rows []soakRow
		flat bool
	}{
		{"flat", series(func(i int) (float64, int, int) { return 44 + float64(i%3)/2, 68, 264 }), true},
		{"bump at the end", series(func(i int) (float64, int, int) {
			if i >= 29 && i < 35 || i == 59 {
				return 45, 87, 273
			}
			return 44, 68, 264
		}), true},
		{"goroutines leak", series(func(i int) (float64, int, int) { return 44, 68 + i, 264 }), false},
		{"files leak", series(func(i int) (float64, int, int) { return 44, 68, 264 + i/2 }), false},
		{"memory grows", series(func(i int) (float64, int, int) { return 40 + float64(i), 68, 264 }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verdict(io.Discard, tt.rows)
			if (err == nil) != tt.flat {
				t.Errorf("verdict = %v, want flat %v", err, tt.flat)
			}
		})
	}
}
