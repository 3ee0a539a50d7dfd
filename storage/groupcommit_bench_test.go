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
			c := &syncCountFS{FS: vfs.OS()}
			l := mustOpen(b, b.TempDir(), &Options{FS: c, Durability: Fsync})
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
