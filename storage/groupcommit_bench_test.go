package storage

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// syncCountFS counts and times the fsyncs of segment files (.log), so a
// benchmark can say how many records each fsync covered and how much of
// the run the disk spent syncing.
type syncCountFS struct {
	vfs.FS
	syncs atomic.Int64
	nanos atomic.Int64
}

func (c *syncCountFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &syncCountFile{File: f, c: c}, nil
}

// countingFS returns a syncCountFS over the OS file system, mapping
// files as the OS does (vfs.MapFS) so that the log takes its default
// write path.
func countingFS() (*syncCountFS, vfs.FS) {
	c := &syncCountFS{FS: vfs.OS()}
	if m, ok := c.FS.(vfs.MapFS); ok {
		return c, syncCountMapFS{c, m}
	}
	return c, c
}

// syncCountMapFS is a syncCountFS whose file system maps files.
type syncCountMapFS struct {
	*syncCountFS
	m vfs.MapFS
}

func (s syncCountMapFS) MapFile(name string, reserve int64) (vfs.MappedFile, error) {
	return s.m.MapFile(name, reserve)
}

type syncCountFile struct {
	vfs.File
	c *syncCountFS
}

func (f *syncCountFile) Sync() error {
	began := time.Now()
	err := f.File.Sync()
	f.c.nanos.Add(int64(time.Since(began)))
	f.c.syncs.Add(1)
	return err
}

// reportGroupCommit reports, for records appended by waiters goroutines
// in a run, the group commit's figures:
//
//	coverage      records per segment fsync ÷ waiting appenders (1 = every
//	              fsync covered every appender)
//	fsync-µs      the mean segment fsync in this run
//	of-fsync-rate records/s ÷ (waiters ÷ fsync time): 1 = every appender's
//	              record in every fsync, fsyncs back to back
func reportGroupCommit(b *testing.B, c *syncCountFS, records, waiters int) {
	syncs, nanos := c.syncs.Load(), c.nanos.Load()
	rate := float64(records) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "records/s")
	if syncs == 0 {
		return
	}
	fsync := time.Duration(nanos / syncs)
	b.ReportMetric(float64(records)/float64(syncs), "records/fsync")
	b.ReportMetric(float64(records)/float64(syncs)/float64(waiters), "coverage")
	b.ReportMetric(float64(fsync.Microseconds()), "fsync-µs")
	b.ReportMetric(rate/(float64(waiters)/fsync.Seconds()), "of-fsync-rate")
}

// BenchmarkLog_Append1_FsyncGoroutines: N goroutines each append one
// 100-byte record at a time with Fsync durability to one log (issue 21,
// item 3). Coverage ≥ 0.8 means the group commit keeps every appender in
// each fsync instead of splitting them into groups that take turns.
func BenchmarkLog_Append1_FsyncGoroutines(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			c, fsys := countingFS()
			l := mustOpen(b, b.TempDir(), &Options{FS: fsys, Durability: Fsync})
			defer l.Close()
			rs := hundredBytes(1)
			b.SetBytes(100)
			per := b.N/n + 1
			var wg sync.WaitGroup
			c.syncs.Store(0)
			c.nanos.Store(0)
			b.ResetTimer()
			for range n {
				wg.Go(func() {
					for range per {
						if _, err := l.Append(rs, DefaultDurability); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			reportGroupCommit(b, c, per*n, n)
		})
	}
}

// BenchmarkSyncer_Logs (issue 21, item 1, in-package): 64 goroutines
// append batches of 10 100-byte records with Fsync durability, each to
// the next of N logs in turn: one log; 1,000 logs sharing one Syncer
// (what passbook.Open gives its partitions); 1,000 logs each with its
// own (no Options.Syncer). Each reports records/s, the segment fsyncs per
// 1,000 records and, against the one log of the same run, "x-1log".
//
//	go test ./storage -run '^$' -bench Syncer_Logs -benchtime 100000x
func BenchmarkSyncer_Logs(b *testing.B) {
	const goroutines, perBatch = 64, 10
	var one float64
	for _, tc := range []struct {
		name   string
		logs   int
		shared bool
	}{
		{"1log", 1, false},
		{"1000logs-shared", 1000, true},
		{"1000logs-own", 1000, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, fsys := countingFS()
			dir := b.TempDir()
			var y *Syncer
			if tc.shared {
				y = NewSyncer(0)
			}
			ls := make([]*Log, tc.logs)
			for i := range ls {
				ls[i] = mustOpen(b, fmt.Sprintf("%s/p%d", dir, i), &Options{FS: fsys, Syncer: y, Durability: Fsync, Files: NewFileCache(0)})
			}
			defer func() {
				for _, l := range ls {
					l.Close()
				}
			}()
			rs := hundredBytes(perBatch)
			batches := b.N/perBatch + 1
			var next atomic.Int64
			c.syncs.Store(0)
			c.nanos.Store(0)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(batches) {
							return
						}
						if _, err := ls[i%int64(len(ls))].Append(rs, DefaultDurability); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			records := batches * perBatch
			rate := float64(records) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "records/s")
			b.ReportMetric(float64(c.syncs.Load())*1000/float64(records), "fsyncs/1k-records")
			if syncs := c.syncs.Load(); syncs > 0 {
				b.ReportMetric(float64(time.Duration(c.nanos.Load()/syncs).Microseconds()), "fsync-µs")
			}
			if tc.logs == 1 {
				one = rate
			} else if one > 0 {
				b.ReportMetric(rate/one, "x-1log")
			}
		})
	}
}
