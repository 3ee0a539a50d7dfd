package web

import (
	"io/fs"
	"os"
	"time"

	"github.com/passbook-log/passbook/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// SyncTimer is a vfs.FS that times every fsync of the file system it
// wraps: File.Sync (segments and their indexes) and FS.SyncDir. Open the
// DB with it as passbook.Options.FS and give it to the Server as
// Options.SyncTimer, and /metrics serves passbook_fsync_duration_seconds.
// It is how the server measures fsync latency without reaching into the
// storage engine. (The offset store's SQLite fsyncs are not seen: it
// always uses the OS directly.)
type SyncTimer struct {
	vfs.FS
	hist *prometheus.HistogramVec // op: file, dir
}

// NewSyncTimer wraps fsys (vfs.OS() when nil).
func NewSyncTimer(fsys vfs.FS) *SyncTimer {
	if fsys == nil {
		fsys = vfs.OS()
	}
	return &SyncTimer{FS: fsys, hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "passbook_fsync_duration_seconds",
		Help:    "Latency of fsyncs of the logs' files (op=file) and directories (op=dir).",
		Buckets: latencyBuckets(),
	}, []string{"op"})}
}

// OpenFile opens a file whose Sync is timed.
func (t *SyncTimer) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := t.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	tf := &timedFile{File: f, obs: t.hist.WithLabelValues("file")}
	if of, ok := f.(osFiler); ok {
		// Keep the descriptor reachable for sendfile (see vfs.OS).
		return &timedOSFile{timedFile: tf, of: of}, nil
	}
	return tf, nil
}

type osFiler interface{ OSFile() *os.File }

type timedOSFile struct {
	*timedFile
	of osFiler
}

// OSFile returns the *os.File underneath.
func (f *timedOSFile) OSFile() *os.File { return f.of.OSFile() }

// SyncDir syncs dir, timed.
func (t *SyncTimer) SyncDir(dir string) error {
	began := time.Now()
	err := t.FS.SyncDir(dir)
	t.hist.WithLabelValues("dir").Observe(time.Since(began).Seconds())
	return err
}

// Describe and Collect make a SyncTimer a prometheus.Collector.
func (t *SyncTimer) Describe(ch chan<- *prometheus.Desc) { t.hist.Describe(ch) }

// Collect collects the fsync histogram.
func (t *SyncTimer) Collect(ch chan<- prometheus.Metric) { t.hist.Collect(ch) }

type timedFile struct {
	vfs.File
	obs prometheus.Observer
}

func (f *timedFile) Sync() error {
	began := time.Now()
	err := f.File.Sync()
	f.obs.Observe(time.Since(began).Seconds())
	return err
}

// MapFile maps a file of the wrapped FS (vfs.ErrNoMapping when it cannot
// map), so that the logs keep their mapped write path behind the timer.
// A mapped write is no fsync: the File.Sync that makes it durable is
// timed as every other.
func (t *SyncTimer) MapFile(name string, reserve int64) (vfs.MappedFile, error) {
	m, ok := t.FS.(vfs.MapFS)
	if !ok || !vfs.CanMap(t.FS) {
		return nil, vfs.ErrNoMapping
	}
	return m.MapFile(name, reserve)
}
