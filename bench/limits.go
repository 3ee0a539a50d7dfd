package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This machine's physical limits, measured at the start of every run in
// the directory under test, so that each figure of the run is also a
// fraction of what the disk, the kernel and the memory allow: the cost of
// an fdatasync of a small append (alone, and of 8 and 64 files synced in
// parallel), of a small write(2) (alone, and 16 records in one), of a
// copy into a mapped page (touched before, and touched for the first
// time), and the sequential bandwidth of buffered writes followed by one
// fdatasync.

// limitRecord is the size of the record the limits are measured with:
// a 100-byte value in its Kafka framing, as passbook stores it.
const limitRecord = 170

// limits are the figures, each over several repetitions (in seconds per
// operation; seqBytesPerSec in bytes per second).
type limits struct {
	dir          string
	fsync        stats         // fdatasync after a 170 B append to one file
	fsyncPar     map[int]stats // fdatasync of n files in parallel, per file
	write1       stats         // one write(2) of 170 B
	write16      stats         // one write(2) of 16 × 170 B, per record
	memcpy       stats         // copy of 170 B into an already touched mapped page
	touchPage    stats         // first touch of a fresh page of a mapped, preallocated file
	touchRecord  stats         // the same, per 170 B record copied in
	seqBytes     int64         // bytes written per sequential trial
	seqBytesPerS stats         // buffered 1 MiB writes + one fdatasync, bytes/s
	took         time.Duration
}

// limitSizes are the repetitions of each measurement: small in a quick
// run (a few tenths of a second in all), larger in a full one.
type limitSizes struct {
	fsyncs     int   // fdatasyncs of one file
	parRounds  int   // rounds of parallel fdatasyncs
	writes     int   // write(2) calls per round
	rounds     int   // rounds of the write and memcpy loops
	copies     int   // 170 B copies per memcpy round
	touchBytes int64 // fresh mapped bytes per first-touch round
	seqBytes   int64 // bytes per sequential-bandwidth round
	seqRounds  int
}

func limitSizesFor(quick bool) limitSizes {
	if quick {
		return limitSizes{fsyncs: 20, parRounds: 3, writes: 5_000, rounds: 3, copies: 200_000, touchBytes: 8 << 20, seqBytes: 16 << 20, seqRounds: 1}
	}
	return limitSizes{fsyncs: 200, parRounds: 20, writes: 50_000, rounds: 5, copies: 2_000_000, touchBytes: 64 << 20, seqBytes: 64 << 20, seqRounds: 3}
}

// parallelFiles are the file counts of the parallel fdatasync figure.
var parallelFiles = []int{8, 64}

// measureLimits measures the limits in a fresh directory under dir, which
// it removes afterwards.
func measureLimits(dir string, sz limitSizes) (*limits, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp(dir, "limits-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	l := &limits{dir: dir, fsyncPar: map[int]stats{}, seqBytes: sz.seqBytes}
	rec := make([]byte, limitRecord)
	for i := range rec {
		rec[i] = byte(i*7 + 1)
	}
	if l.fsync, err = limitFsync(tmp, rec, sz.fsyncs); err != nil {
		return nil, fmt.Errorf("fdatasync: %w", err)
	}
	for _, n := range parallelFiles {
		if l.fsyncPar[n], err = limitFsyncParallel(tmp, rec, n, sz.parRounds); err != nil {
			return nil, fmt.Errorf("parallel fdatasync of %d files: %w", n, err)
		}
	}
	if l.write1, err = limitWrite(tmp, rec, 1, sz.writes, sz.rounds); err != nil {
		return nil, fmt.Errorf("write(2): %w", err)
	}
	if l.write16, err = limitWrite(tmp, rec, 16, sz.writes, sz.rounds); err != nil {
		return nil, fmt.Errorf("write(2) of 16 records: %w", err)
	}
	if l.memcpy, err = limitMemcpy(tmp, rec, sz.copies, sz.rounds); err != nil {
		return nil, fmt.Errorf("memcpy into a mapped page: %w", err)
	}
	if l.touchPage, l.touchRecord, err = limitFirstTouch(tmp, rec, sz.touchBytes, sz.rounds); err != nil {
		return nil, fmt.Errorf("first touch of a mapped page: %w", err)
	}
	if l.seqBytesPerS, err = limitSequential(tmp, sz.seqBytes, sz.seqRounds); err != nil {
		return nil, fmt.Errorf("sequential write + fdatasync: %w", err)
	}
	l.took = time.Since(start)
	return l, nil
}

// limitFsync appends rec to one file and fdatasyncs it, n times; each
// sample is one append and its fdatasync.
func limitFsync(dir string, rec []byte, n int) (stats, error) {
	f, err := os.OpenFile(filepath.Join(dir, "fsync"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return stats{}, err
	}
	defer f.Close()
	fd := int(f.Fd())
	xs := make([]float64, 0, n)
	for range n {
		t := time.Now()
		if _, err := syscall.Write(fd, rec); err != nil {
			return stats{}, err
		}
		if err := syscall.Fdatasync(fd); err != nil {
			return stats{}, err
		}
		xs = append(xs, time.Since(t).Seconds())
	}
	return summarize(xs), nil
}

// limitFsyncParallel appends rec to each of n files and fdatasyncs them
// all at once, one goroutine per file; a sample is the wall time of a
// round divided by n.
func limitFsyncParallel(dir string, rec []byte, n, rounds int) (stats, error) {
	fds := make([]int, n)
	for i := range fds {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("par-%d-%d", n, i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return stats{}, err
		}
		defer f.Close()
		fds[i] = int(f.Fd())
	}
	xs := make([]float64, 0, rounds)
	errs := make([]error, n)
	for range rounds {
		var wg sync.WaitGroup
		t := time.Now()
		for i, fd := range fds {
			wg.Go(func() {
				if _, err := syscall.Write(fd, rec); err != nil {
					errs[i] = err
					return
				}
				errs[i] = syscall.Fdatasync(fd)
			})
		}
		wg.Wait()
		el := time.Since(t)
		for _, err := range errs {
			if err != nil {
				return stats{}, err
			}
		}
		xs = append(xs, el.Seconds()/float64(n))
	}
	return summarize(xs), nil
}

// limitWrite makes writes write(2) calls of k records each, per round,
// to a fresh file; a sample is a round's time per record.
func limitWrite(dir string, rec []byte, k, writes, rounds int) (stats, error) {
	buf := make([]byte, 0, k*len(rec))
	for range k {
		buf = append(buf, rec...)
	}
	n := max(writes/k, 1)
	xs := make([]float64, 0, rounds)
	for r := range rounds {
		name := filepath.Join(dir, fmt.Sprintf("write-%d-%d", k, r))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return stats{}, err
		}
		fd := int(f.Fd())
		t := time.Now()
		for range n {
			if _, err := syscall.Write(fd, buf); err != nil {
				f.Close()
				return stats{}, err
			}
		}
		el := time.Since(t)
		f.Close()
		os.Remove(name)
		xs = append(xs, el.Seconds()/float64(n*k))
	}
	return summarize(xs), nil
}

// mapFile creates a preallocated file of size bytes and maps it shared,
// read and write. The caller unmaps and closes.
func mapFile(name string, size int64) (*os.File, []byte, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("fallocate: %w", err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return f, m, nil
}

// limitMemcpy copies rec into a 1 MiB mapping whose pages were all
// touched first, over and over, end to end; a sample is a round's time
// per copy.
func limitMemcpy(dir string, rec []byte, copies, rounds int) (stats, error) {
	const size = 1 << 20
	f, m, err := mapFile(filepath.Join(dir, "memcpy"), size)
	if err != nil {
		return stats{}, err
	}
	defer f.Close()
	defer syscall.Munmap(m)
	for i := 0; i < len(m); i += os.Getpagesize() {
		m[i] = 1
	}
	slots := len(m) / len(rec)
	xs := make([]float64, 0, rounds)
	for range rounds {
		t := time.Now()
		for i := range copies {
			o := (i % slots) * len(rec)
			copy(m[o:o+len(rec)], rec)
		}
		xs = append(xs, time.Since(t).Seconds()/float64(copies))
	}
	return summarize(xs), nil
}

// limitFirstTouch copies rec end to end into a fresh mapping of a
// preallocated file of size bytes, every page touched for the first time
// by those copies; a sample is a round's time per page and per record.
func limitFirstTouch(dir string, rec []byte, size int64, rounds int) (perPage, perRecord stats, err error) {
	var pages, records []float64
	for r := range rounds {
		name := filepath.Join(dir, fmt.Sprintf("touch-%d", r))
		f, m, err := mapFile(name, size)
		if err != nil {
			return stats{}, stats{}, err
		}
		n := len(m) / len(rec)
		t := time.Now()
		for i := range n {
			copy(m[i*len(rec):], rec)
		}
		el := time.Since(t)
		syscall.Munmap(m)
		f.Close()
		os.Remove(name)
		pages = append(pages, el.Seconds()/float64(size/int64(os.Getpagesize())))
		records = append(records, el.Seconds()/float64(n))
	}
	return summarize(pages), summarize(records), nil
}

// limitSequential writes size bytes to a fresh file in 1 MiB writes and
// fdatasyncs it; a sample is the bytes over the time of both.
func limitSequential(dir string, size int64, rounds int) (stats, error) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 131)
	}
	xs := make([]float64, 0, rounds)
	for r := range rounds {
		name := filepath.Join(dir, fmt.Sprintf("seq-%d", r))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return stats{}, err
		}
		// What earlier rounds and other processes left dirty is written
		// back first, not during this round.
		syscall.Sync()
		fd := int(f.Fd())
		t := time.Now()
		for done := int64(0); done < size; done += int64(len(buf)) {
			if _, err := syscall.Write(fd, buf[:min(int64(len(buf)), size-done)]); err != nil {
				f.Close()
				return stats{}, err
			}
		}
		if err := syscall.Fdatasync(fd); err != nil {
			f.Close()
			return stats{}, err
		}
		el := time.Since(t)
		f.Close()
		os.Remove(name)
		xs = append(xs, float64(size)/el.Seconds())
	}
	return summarize(xs), nil
}

// nanos formats a time given in seconds at a precision that fits it:
// "212 µs", "1.23 µs", "9.4 ns".
func nanos(s float64) string {
	ns := s * 1e9
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e7:
		return fmt.Sprintf("%.0f ms", ns/1e6)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e5:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns >= 100:
		return fmt.Sprintf("%.0f ns", ns)
	}
	return fmt.Sprintf("%.1f ns", ns)
}

// nanosRange is a stats of seconds as "median (min–max)".
func nanosRange(s stats) string {
	if s.min == s.max {
		return nanos(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", nanos(s.median), nanos(s.min), nanos(s.max))
}

// mbps formats bytes/s as decimal MB/s.
func mbps(x float64) string { return commas(int64(x/1e6+0.5)) + " MB/s" }

// perSecond is the rate 1/s as a count with thousands separators.
func perSecond(s float64) string {
	if s <= 0 {
		return "—"
	}
	return commas(int64(1/s + 0.5))
}

// markdown is the limits as a table: each figure and the ceiling it puts
// on a path that pays it once per record (or per acknowledgement).
func (l *limits) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### This machine's limits (measured at the start of the run, in %s)\n\n", l.dir)
	fmt.Fprintf(&b, "Median (min–max) over the repetitions, %v in all. The ceiling is what a path paying the cost once per record (or per acknowledgement) could do at most; the tables below give figures as fractions of these.\n\n", roundDuration(l.took))
	b.WriteString("| limit | figure | ceiling it sets |\n|---|---:|---|\n")
	fmt.Fprintf(&b, "| fdatasync of a %d B append to one file | %s | %s durable acknowledgements/s, one after another |\n", limitRecord, nanosRange(l.fsync), perSecond(l.fsync.median))
	for _, n := range parallelFiles {
		s := l.fsyncPar[n]
		fmt.Fprintf(&b, "| fdatasync of %d files in parallel (a %d B append each), per file | %s | %s files synced/s |\n", n, limitRecord, nanosRange(s), perSecond(s.median))
	}
	fmt.Fprintf(&b, "| one write(2) of %d B | %s | %s records/s at a write(2) each |\n", limitRecord, nanosRange(l.write1), perSecond(l.write1.median))
	fmt.Fprintf(&b, "| one write(2) of 16 × %d B, per record | %s | %s records/s |\n", limitRecord, nanosRange(l.write16), perSecond(l.write16.median))
	fmt.Fprintf(&b, "| copy of %d B into a mapped page already touched | %s | %s records/s |\n", limitRecord, nanosRange(l.memcpy), perSecond(l.memcpy.median))
	fmt.Fprintf(&b, "| first touch of a fresh page of a mapped, preallocated file, per 4 KiB page | %s | %s pages/s |\n", nanosRange(l.touchPage), perSecond(l.touchPage.median))
	fmt.Fprintf(&b, "| the same, per %d B record copied in | %s | %s records/s into fresh pages |\n", limitRecord, nanosRange(l.touchRecord), perSecond(l.touchRecord.median))
	seq := l.seqBytesPerS
	rng := ""
	if seq.min != seq.max {
		rng = fmt.Sprintf(" (%s–%s)", strings.TrimSuffix(mbps(seq.min), " MB/s"), mbps(seq.max))
	}
	fmt.Fprintf(&b, "| buffered write + fdatasync, %s in 1 MiB writes | %s%s | %s records/s of 1 KiB |\n", bytesIEC(l.seqBytes), mbps(seq.median), rng, commas(int64(seq.median/1024)))
	b.WriteString("\n")
	return b.String()
}
