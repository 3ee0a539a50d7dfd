package main

import (
	"testing"
	"time"
)

// TestProgressStatus: what a progress bar says after its name — counts
// with separators and "records", bytes in binary units, the share done
// only when there is a total, the average rate, and "(stopped)" for a bar
// an error or an interrupt ended.
func TestProgressStatus(t *testing.T) {
	for _, tc := range []struct {
		name           string
		u              unit
		total, current int64
		elapsed        time.Duration
		stopped        bool
		want           string
	}{
		{"records of a known total", unitRecords, 3_000_000, 1_234_567, 2 * time.Second, false,
			"1,234,567 / 3,000,000 records  41%  617,284 records/s"},
		{"records, done", unitRecords, 300_000, 300_000, 250 * time.Millisecond, false,
			"300,000 / 300,000 records  100%  1,200,000 records/s"},
		{"records, interrupted", unitRecords, 300_000, 100_000, time.Second, true,
			"100,000 / 300,000 records  33%  100,000 records/s  (stopped)"},
		{"records, unknown total", unitRecords, 0, 11, time.Second, false,
			"11 records  11 records/s"},
		{"bytes of a known total", unitBytes, 30 << 20, 12 << 20, 4 * time.Second, false,
			"12.0 MiB / 30.0 MiB  40%  3.0 MiB/s"},
		{"bytes from stdin (no total)", unitBytes, 0, 11, time.Second, false,
			"11 B  11 B/s"},
		{"kibibytes", unitBytes, 0, 1536, time.Second, false,
			"1.5 KiB  1.5 KiB/s"},
		{"gibibytes", unitBytes, 0, 3 << 30, 2 * time.Second, false,
			"3.0 GiB  1.5 GiB/s"},
		{"nothing yet", unitRecords, 10, 0, 0, false,
			"0 / 10 records  0%  0 records/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressStatus(tc.u, tc.total, tc.current, tc.elapsed, tc.stopped); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
