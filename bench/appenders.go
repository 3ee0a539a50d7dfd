package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/wal"

	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// storage.Log against tidwall/wal with single-record InOS appends (no
// fsync), from one goroutine and from 16 at once (issue 21, items 4 and
// 5). One appender is bench/wal.go's workloads (b) and (b′),
// passbookSingles, passbookSinglesOn and walSingles; 16 appenders share
// one log, each appending its share. storage.Log runs twice: through the
// mapped active segment (the default where the file system can map) and
// on write(2), the old path, as the baseline.

// appendersKey names them in --workloads.
const appendersKey = "appenders"

// appenderCounts are the goroutine counts measured, and appendBatched
// the row of one appender appending batches of 1,000 records.
var appenderCounts = []int{1, 16, appendBatched}

const appendBatched = -1000

// appenderResults are records/s by system ("passbook", "wal") and
// goroutine count, a figure per trial.
type appenderResults map[string]map[int][]float64

func (a appenderResults) add(sys string, k int, x float64) {
	if a[sys] == nil {
		a[sys] = map[int][]float64{}
	}
	a[sys][k] = append(a[sys][k], x)
}

// median of a system's figures at k appenders, or 0.
func (a appenderResults) median(sys string, k int) float64 {
	if xs := a[sys][k]; len(xs) > 0 {
		return summarize(xs).median
	}
	return 0
}

// runAppenders measures both systems at every count, n records each, in
// fresh directories under tmp; the order of the systems alternates from
// trial to trial.
func (h *harness) runAppenders(ctx context.Context, r *results, trial int, tmp string) error {
	n := h.p.n
	type run struct {
		sys string
		f   func(dir string, k int) (float64, error)
	}
	runs := []run{
		{"passbook", func(dir string, k int) (float64, error) {
			switch k {
			case 1:
				return passbookSingles(dir, n)
			case appendBatched:
				return passbookBatchesInOS(dir, n, false)
			}
			return passbookAppenders(dir, n, k, false)
		}},
		{"passbook-write2", func(dir string, k int) (float64, error) {
			switch k {
			case 1:
				return passbookSinglesOn(dir, n, true)
			case appendBatched:
				return passbookBatchesInOS(dir, n, true)
			}
			return passbookAppenders(dir, n, k, true)
		}},
		{"wal", func(dir string, k int) (float64, error) {
			switch k {
			case 1:
				return walSingles(dir, n)
			case appendBatched:
				return walBatchesNoSync(dir, n)
			}
			return walAppenders(dir, n, k)
		}},
	}
	if trial%2 == 1 {
		slices.Reverse(runs)
	}
	for _, k := range appenderCounts {
		for _, ru := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			dir := filepath.Join(tmp, fmt.Sprintf("appenders-%s-%d-t%d", ru.sys, max(k, 0), trial))
			syscall.Sync()
			x, err := ru.f(dir, k)
			os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("%s, %d appenders: %w", ru.sys, k, err)
			}
			r.appenders.add(ru.sys, k, x)
			fmt.Fprintf(h.stderr, "trial %d: %s: %s appender(s), InOS: %s records/s\n", trial+1, ru.sys, appendersLabel(k), commas(int64(x)))
		}
	}
	return nil
}

// passbookAppenders appends n single-record batches to one storage.Log
// with InOS durability from k goroutines at once: through the mapped
// active segment where the file system can map, or with write2 on
// write(2) (vfs.WithoutMapping, the baseline), as passbookSinglesOn.
func passbookAppenders(dir string, n, k int, write2 bool) (float64, error) {
	o := &storage.Options{Durability: storage.InOS}
	if write2 {
		o.FS = vfs.WithoutMapping(vfs.OS())
	}
	l, err := storage.Open(dir, o)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	rs := hundredByteRecords(1)
	el, err := fanOut(n, k, func() error {
		_, err := l.Append(rs, storage.InOS)
		return err
	})
	if err != nil {
		return 0, err
	}
	if got := l.Head(); got != int64(n) {
		return 0, fmt.Errorf("the log holds %d records, want %d", got, n)
	}
	return rate(n, el), nil
}

// walAppenders writes n entries to one tidwall/wal log (NoSync) from k
// goroutines at once. Its entries are numbered by the caller and must be
// written in order, so each goroutine takes the next number and writes
// it under one mutex, as concurrent users of it must.
func walAppenders(dir string, n, k int) (float64, error) {
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	v := bytes.Repeat([]byte("x"), recordBytes)
	var mu sync.Mutex
	next := uint64(1)
	el, err := fanOut(n, k, func() error {
		mu.Lock()
		defer mu.Unlock()
		err := w.Write(next, v)
		next++
		return err
	})
	if err != nil {
		return 0, err
	}
	return rate(n, el), nil
}

// fanOut calls write n times from k goroutines at once (share(n, k, g)
// calls each), a goroutine stopping at its first error, and returns the
// time it all took and the first error.
func fanOut(n, k int, write func() error) (time.Duration, error) {
	errs := make([]error, k)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range k {
		wg.Go(func() {
			for range share(n, k, g) {
				if err := write(); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	return el, errors.Join(errs...)
}

// passbookBatchesInOS appends n records to one storage.Log in batches of
// 1,000 with InOS durability: mapped, or with write2 on write(2).
func passbookBatchesInOS(dir string, n int, write2 bool) (float64, error) {
	o := &storage.Options{Durability: storage.InOS}
	if write2 {
		o.FS = vfs.WithoutMapping(vfs.OS())
	}
	l, err := storage.Open(dir, o)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	rs := hundredByteRecords(1000)
	start := time.Now()
	for done := 0; done < n; done += len(rs) {
		if _, err := l.Append(rs[:min(len(rs), n-done)], storage.InOS); err != nil {
			return 0, err
		}
	}
	return rate(n, time.Since(start)), nil
}

// walBatchesNoSync writes n entries to tidwall/wal in WriteBatch calls of
// 1,000, NoSync.
func walBatchesNoSync(dir string, n int) (float64, error) {
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	v := bytes.Repeat([]byte("x"), recordBytes)
	var b wal.Batch
	start := time.Now()
	for i := range n {
		b.Write(uint64(i+1), v)
		if (i+1)%1000 == 0 || i+1 == n {
			if err := w.WriteBatch(&b); err != nil {
				return 0, err
			}
		}
	}
	return rate(n, time.Since(start)), nil
}

// appendersLabel is how the table names a count.
func appendersLabel(k int) string {
	if k == appendBatched {
		return "1, batches of 1,000"
	}
	return fmt.Sprint(k)
}

// share is goroutine g's part of n records over k goroutines.
func share(n, k, g int) int {
	s := n / k
	if g < n%k {
		s++
	}
	return s
}
