package passbook_test

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// BenchmarkDB_OpenClose opens and closes a data directory of many
// partitions after a clean shutdown, each partition holding one small
// record: the cost of a restart of passbook serve with nothing to
// recover. The directory is built once per case; each iteration is one
// Open and one Close. Besides the time per Open+Close (ms/op, and apart:
// open-ms/op, close-ms/op) and the CPU time the process spent on it
// (cpu-ms/op, user and system: what a loaded machine's wall clock hides)
// it reports
// the file-system calls one Open+Close makes per partition, counted once
// through a counting vfs.FS: fsyncs of files (syncs/part) and of
// directories (dirsyncs/part), and renames (renames/part).
func BenchmarkDB_OpenClose(b *testing.B) {
	for _, c := range []struct {
		topics, partitions int // topics of partitions each
	}{
		{1, 1000},
		{1000, 1},
		{1, 10000},
	} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", c.topics, c.partitions), func(b *testing.B) {
			dir := b.TempDir()
			total := c.topics * c.partitions
			db, err := passbook.Open(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range c.topics {
				t, err := db.CreateTopic(fmt.Sprintf("t%05d", i), passbook.TopicConfig{Partitions: c.partitions})
				if err != nil {
					b.Fatal(err)
				}
				for p := range c.partitions {
					if _, err := t.AppendTo(int32(p), []passbook.Record{{Value: []byte("hello")}}, storage.InOS); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}

			var syncs, dirSyncs, renames atomic.Int64
			counting := vfs.NewFaulty(vfs.OS(), vfs.FaultyOptions{FailAt: -1, Kinds: vfs.OpSync | vfs.OpSyncDir | vfs.OpRename,
				Filter: func(op vfs.Op) bool {
					switch op.Kind {
					case vfs.OpSync:
						syncs.Add(1)
					case vfs.OpSyncDir:
						dirSyncs.Add(1)
					case vfs.OpRename:
						renames.Add(1)
					}
					return false
				}})
			openClose(b, dir, &passbook.Options{FS: counting}, total)

			var open, close time.Duration
			cpu := cpuTime()
			for b.Loop() {
				o, c := openClose(b, dir, nil, total)
				open, close = open+o, close+c
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
			b.ReportMetric(float64(open.Microseconds())/1e3/float64(b.N), "open-ms/op")
			b.ReportMetric(float64(close.Microseconds())/1e3/float64(b.N), "close-ms/op")
			b.ReportMetric(float64(syncs.Load())/float64(total), "syncs/part")
			b.ReportMetric(float64(dirSyncs.Load())/float64(total), "dirsyncs/part")
			b.ReportMetric(float64(renames.Load())/float64(total), "renames/part")
		})
	}
}

// openClose opens dir, checks that every partition holds its record, and
// closes it. It returns the time Open took and the time Close took.
func openClose(b *testing.B, dir string, o *passbook.Options, partitions int) (open, close time.Duration) {
	b.Helper()
	began := time.Now()
	db, err := passbook.Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	open = time.Since(began)
	n := 0
	for _, t := range db.Topics() {
		for p := range t.Partitions() {
			l, err := t.Partition(int32(p))
			if err != nil {
				b.Fatal(err)
			}
			if l.Head() != 1 {
				b.Fatalf("%s partition %d: head %d, want 1", t.Name(), p, l.Head())
			}
			n++
		}
	}
	if n != partitions {
		b.Fatalf("%d partitions, want %d", n, partitions)
	}
	began = time.Now()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return open, time.Since(began)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
