package storage

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// A fixed broker clock: 2026-12-01 12:00 UTC.
var brokerNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func encoded(t *testing.T, ts time.Time) []byte {
	t.Helper()
	b, err := batch.Append(nil, []batch.Record{{Value: []byte("v"), Timestamp: ts}}, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLog_Append_Timestamps(t *testing.T) {
	year9999 := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		before, after time.Duration
		ts            time.Time
		wantErr       bool
	}{
		{"now", 0, 0, brokerNow, false},
		{"an hour ahead: Kafka 4's default after.max.ms", 0, 0, brokerNow.Add(time.Hour), false},
		{"an hour and a millisecond ahead", 0, 0, brokerNow.Add(time.Hour + time.Millisecond), true},
		{"year 9999", 0, 0, year9999, true},
		{"year 9999, after.max.ms unlimited", 0, NoTimestampLimit, year9999, false},
		{"1 ms after 1970: before.max.ms unlimited by default", 0, 0, time.UnixMilli(1), false},
		{"1 ms after 1970, before.max.ms 1 day", 24 * time.Hour, 0, time.UnixMilli(1), true},
		{"a day ago, before.max.ms 1 day", 24 * time.Hour, 0, brokerNow.Add(-24 * time.Hour), false},
		{"a minute ahead, after.max.ms 1s", 0, time.Second, brokerNow.Add(time.Minute), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), &Options{
				TimestampBeforeMax: tt.before, TimestampAfterMax: tt.after,
				Now: func() time.Time { return brokerNow },
			})
			defer l.Close()
			_, errBatch := l.AppendBatch(encoded(t, tt.ts), InOS)
			_, errRecs := l.Append([]batch.Record{{Value: []byte("v"), Timestamp: tt.ts}}, InOS)
			for what, err := range map[string]error{"AppendBatch": errBatch, "Append": errRecs} {
				t.Logf("%s: %v", what, err)
				if got := errors.Is(err, ErrInvalidTimestamp); got != tt.wantErr || (!tt.wantErr && err != nil) {
					t.Errorf("%s: err = %v, want ErrInvalidTimestamp: %v", what, err, tt.wantErr)
				}
			}
			if want := int64(2); tt.wantErr {
				if l.Head() != 0 {
					t.Errorf("head %d after refused appends, want 0", l.Head())
				}
				if got := l.Refused(); got != (Refused{InvalidTimestamp: 2}) {
					t.Errorf("Refused() = %+v, want 2 invalid timestamps", got)
				}
			} else if l.Head() != want {
				t.Errorf("head %d, want %d", l.Head(), want)
			}
		})
	}
}

// A producer's clock does not roll segments: 2,000 batches stamped 1 ms
// after 1970 stay in one segment until segment.ms of the broker's time
// has passed, then roll once.
func TestLog_AgeRoll_BrokerClock(t *testing.T) {
	var clock atomic.Int64
	clock.Store(brokerNow.UnixMilli())
	o := &Options{SegmentAge: time.Hour, Now: func() time.Time { return time.UnixMilli(clock.Load()) }}
	dir := t.TempDir()
	l := mustOpen(t, dir, o)
	storm := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := l.AppendBatch(encoded(t, time.UnixMilli(1+int64(i))), InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	storm(2000)
	if n := l.SegmentCount(); n != 1 {
		t.Fatalf("%d segments after 2,000 batches stamped 1970 within segment.ms, want 1", n)
	}
	clock.Add(time.Hour.Milliseconds() - 1)
	storm(10)
	if n := l.SegmentCount(); n != 1 {
		t.Fatalf("%d segments before segment.ms of broker time, want 1", n)
	}
	clock.Add(1)
	storm(1000)
	if n := l.SegmentCount(); n != 2 {
		t.Fatalf("%d segments once segment.ms passed, want 2", n)
	}
	// After a restart the active segment, whose first record says 1970,
	// rolls once, and its successor waits segment.ms again.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, o)
	defer l.Close()
	storm(1000)
	if n := l.SegmentCount(); n != 3 {
		t.Fatalf("%d segments after a restart, want 3", n)
	}
}

// A record stamped in the year 9999, stored before
// message.timestamp.after.max.ms was checked, does not stop time-based
// retention for good: retention counts such a segment from when its file
// was last written, plus the after.max.ms window.
func TestLog_Retain_FarFutureTimestampOnDisk(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	dir := t.TempDir()
	o := &Options{
		SegmentBytes: 1 << 10, RetentionAge: time.Hour,
		TimestampAfterMax: NoTimestampLimit, // as before the check existed
		Now:               func() time.Time { return time.UnixMilli(clock.Load()) },
	}
	l := mustOpen(t, dir, o)
	if _, err := l.Append([]batch.Record{{Value: []byte("from the future"), Timestamp: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}}, InOS); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 100, InOS) // rolls: the year-9999 segment is closed
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segments := l.SegmentCount()

	o.TimestampAfterMax = 0 // the default, 1 hour
	clock.Add((2*time.Hour + time.Minute).Milliseconds())
	l = mustOpen(t, dir, o)
	defer l.Close()
	n, err := l.Retain()
	if err != nil {
		t.Fatal(err)
	}
	if n != segments-1 || l.StartOffset() == 0 {
		t.Fatalf("retention deleted %d of %d segments (start offset %d), want every closed one", n, segments, l.StartOffset())
	}
}
