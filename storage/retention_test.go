package storage

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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

// blockingFS pauses Remove of files with a given suffix until released.
type blockingFS struct {
	vfs.FS
	suffix  string
	entered chan string   // receives the name of each blocked Remove
	release chan struct{} // closed to let them go
}

func (f *blockingFS) Remove(name string) error {
	if strings.HasSuffix(name, f.suffix) {
		f.entered <- name
		<-f.release
	}
	return f.FS.Remove(name)
}

// TestRetain_UnlinksOutsideTheLock: while retention's removal of a
// segment file is stuck in the file system, appends to the same log
// complete and readers see the new start offset; retention then finishes
// and logs one line for the pass, not one per segment.
func TestRetain_UnlinksOutsideTheLock(t *testing.T) {
	fsys := &blockingFS{FS: vfs.NewMem(), suffix: ".log", entered: make(chan string, 1), release: make(chan struct{})}
	var logged bytes.Buffer
	var logMu sync.Mutex
	o := &Options{FS: vfs.NewMem(), SegmentBytes: 512, SyncInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))}
	l := mustOpen(t, "/p", o)
	for j := range 100 {
		if _, err := l.Append(recs(j, 1), InOS); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.SegmentCount()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fsys.FS = o.FS
	o.FS, o.RetentionBytes = fsys, 1
	l = mustOpen(t, "/p", o)
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		n, err := l.Retain()
		if err == nil && n != segs-1 {
			err = fmt.Errorf("Retain deleted %d segments, want %d", n, segs-1)
		}
		done <- err
	}()
	<-fsys.entered // the first unlink is stuck
	if l.StartOffset() == 0 {
		t.Fatal("the start offset did not move before the unlinks")
	}
	for j := 100; j < 110; j++ { // would deadlock if retention held the log's lock
		if _, err := l.Append(recs(j, 1), InOS); err != nil {
			t.Fatal(err)
		}
	}
	close(fsys.release)
	for range segs - 2 {
		<-fsys.entered
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	lines := strings.Count(logged.String(), "retention deleted segments")
	logMu.Unlock()
	if lines != 1 {
		t.Fatalf("%d retention log lines for one pass, want 1:\n%s", lines, logged.String())
	}
	if l.Head() != 110 {
		t.Fatalf("head %d, want 110", l.Head())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
