package storage

import (
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// The tests in this file pin down, one promise each, what docs/durability.md
// says a power loss can and cannot take away. vfs.MemFS.Crash keeps what
// was fsync'd and nothing else (without Tear), like a disk losing power.

// crashHead returns the head of the log that a power loss at this instant
// would leave on mem.
func crashHead(t *testing.T, mem *vfs.MemFS) int64 {
	t.Helper()
	l := mustOpen(t, "/p", &Options{FS: mem.Crash(vfs.CrashOptions{})})
	defer l.Close()
	checkRecords(t, l, 0)
	return l.Head()
}

// TestLog_PowerLoss_Durability appends 10 records with one durability
// and then 10 with another, and cuts the power: InOS records are lost
// unless something fsync'd them since, Fsync ones are kept, and so is
// everything a later Sync, WaitDurable, segment roll or Close covered.
func TestLog_PowerLoss_Durability(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first Durability
		then  func(l *Log) error // after the first 10 records
		want  int64              // head after the power loss
	}{
		{"InOS is lost", InOS, nil, 0},
		{"Fsync is kept", Fsync, nil, 10},
		{"Sync covers earlier InOS", InOS, func(l *Log) error { return l.Sync() }, 10},
		{"WaitDurable covers earlier InOS", InOS, func(l *Log) error { return l.WaitDurable(10, Fsync) }, 10},
		{"a later Fsync append covers earlier InOS", InOS, func(l *Log) error { _, err := l.Append(recs(10, 1), Fsync); return err }, 11},
		{"a roll fsyncs the closed segment", InOS, func(l *Log) error {
			_, err := l.Append(recs(10, 200), InOS) // past SegmentBytes: the next append rolls
			if err == nil {
				_, err = l.Append(recs(210, 1), InOS)
			}
			if err == nil && l.SegmentCount() < 2 {
				t.Fatalf("no roll: %d segment(s)", l.SegmentCount())
			}
			return err
		}, 210},
		{"Close fsyncs everything", InOS, func(l *Log) error { return l.Close() }, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 4 << 10, SyncInterval: time.Hour})
			defer l.Close()
			if _, err := l.Append(recs(0, 10), tc.first); err != nil {
				t.Fatal(err)
			}
			if tc.then != nil {
				if err := tc.then(l); err != nil {
					t.Fatal(err)
				}
			}
			if got := crashHead(t, mem); got != tc.want {
				t.Fatalf("head after a power loss = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLog_PowerLoss_Interval: with Interval durability, as the log's
// default or for one append, records become durable without any call,
// within about Options.SyncInterval.
func TestLog_PowerLoss_Interval(t *testing.T) {
	const every = 20 * time.Millisecond
	for _, tc := range []struct {
		name       string
		logDefault Durability
		append     Durability
	}{
		{"the log's default", Interval, DefaultDurability},
		{"one append on an InOS log", InOS, Interval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := mustOpen(t, "/p", &Options{FS: mem, Durability: tc.logDefault, SyncInterval: every})
			defer l.Close()
			began := time.Now()
			if _, err := l.Append(recs(0, 10), tc.append); err != nil {
				t.Fatal(err)
			}
			for crashHead(t, mem) < 10 {
				if time.Since(began) > 100*every+5*time.Second { // generous: -race on a busy machine
					t.Fatalf("records not durable %v after the append, with SyncInterval %v", time.Since(began), every)
				}
				time.Sleep(every / 4)
			}
			t.Logf("durable after %v with SyncInterval %v", time.Since(began), every)
		})
	}
}
