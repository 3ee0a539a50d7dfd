package storage

import (
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// TestLog_NewestTimestamp_AfterCleanReopen: a segment's newest timestamp
// survives a clean Close and Open even when the sparse time index did not
// record it as it was written. Before the fix, the reopened active
// segment took its newest timestamp from the last sparse entry, so once
// it rolled, retention by age deleted it while it still held a record
// younger than RetentionAge, and OffsetForTime skipped it.
func TestLog_NewestTimestamp_AfterCleanReopen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, l *Log, young time.Time)
	}{
		{"retention keeps the segment", func(t *testing.T, l *Log, young time.Time) {
			if n, err := l.Retain(); err != nil || n != 0 {
				t.Fatalf("Retain = %d, %v; want 0: the first segment holds a record from %v", n, err, young)
			}
		}},
		{"OffsetForTime finds the record", func(t *testing.T, l *Log, young time.Time) {
			if got, err := l.OffsetForTime(young); err != nil || got != 1 {
				t.Fatalf("OffsetForTime(%v) = %d, %v; want 1", young, got, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.UnixMilli(1_700_000_000_000)
			o := &Options{
				FS:            vfs.NewMem(),
				SegmentBytes:  1 << 10,
				IndexInterval: 4 << 10, // one time index entry per segment: its first batch
				RetentionAge:  time.Hour,
				SyncInterval:  time.Hour,
				Now:           func() time.Time { return now },
			}
			l := mustOpen(t, "/p", o)
			if _, err := l.Append(recs(0, 1), DefaultDurability); err != nil {
				t.Fatal(err)
			}
			now = now.Add(2 * time.Hour)
			young := now
			if _, err := l.Append(recs(1, 1), DefaultDurability); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/p", o)
			defer l.Close()
			// A batch too big for the segment rolls it.
			if _, err := l.Append([]batch.Record{{Value: make([]byte, 1<<10)}}, DefaultDurability); err != nil {
				t.Fatal(err)
			}
			if l.SegmentCount() != 2 {
				t.Fatalf("%d segments, want 2", l.SegmentCount())
			}
			now = now.Add(time.Minute)
			tc.check(t, l, young)
		})
	}
}
