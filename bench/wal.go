package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/wal"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

const recordBytes = 100

// walConfig is what `bench wal` runs.
type walConfig struct {
	dir        string // where the temporary logs go
	trials     int
	batches    int   // (a) 1,000-record batches per trial
	singles    int   // (b) single-record appends per trial
	reads      int   // (c) records read back per trial
	openSize   int64 // (d) bytes in the log opened after a kill
	skipOpen   bool
	dropCaches bool
}

func runWAL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := walConfig{}
	fs.StringVar(&c.dir, "dir", os.TempDir(), "directory for the temporary logs (the disk under test)")
	fs.IntVar(&c.trials, "trials", 3, "trials per measurement")
	fs.IntVar(&c.batches, "batches", 1000, "(a) 1,000-record batches per trial")
	fs.IntVar(&c.singles, "singles", 1_000_000, "(b) single-record appends per trial")
	fs.IntVar(&c.reads, "reads", 1_000_000, "(c) records read back per trial")
	openSize := fs.String("open-size", "1GiB", "(d) size of the log opened after a kill")
	fs.BoolVar(&c.skipOpen, "skip-open", false, "skip (d)")
	fs.BoolVar(&c.dropCaches, "drop-caches", true, "(d) drop the page cache before each Open, when allowed (root on Linux)")
	quick := fs.Bool("quick", false, "small workloads and one trial: a smoke run of a few seconds")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: bench wal [flags]\n\nRuns passbook's storage.Log and tidwall/wal on the same workloads of 100-byte records.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.openSize, err = parseSize(*openSize); err != nil {
		return err
	}
	if *quick {
		c.trials, c.batches, c.singles, c.reads = 1, 10, 5_000, 50_000
		if !isFlagSet(fs, "open-size") {
			c.openSize = 16 << 20
		}
	}
	if c.trials < 1 || c.batches < 1 || c.singles < 1 || c.reads < 1 {
		return fmt.Errorf("trials and workload sizes must be positive")
	}
	tmp, err := os.MkdirTemp(c.dir, "passbook-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return benchWAL(ctx, c, tmp, stdout, stderr)
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// walWorkload is one row of the table: the same work on both logs.
type walWorkload struct {
	name     string
	passbook func(dir string) (float64, error) // records/s
	wal      func(dir string) (float64, error)
	keep     bool // keep the directories between trials
}

func benchWAL(ctx context.Context, c walConfig, tmp string, stdout, stderr io.Writer) error {
	walVersion := moduleVersion("github.com/tidwall/wal")
	fmt.Fprintf(stdout, "## passbook storage.Log vs tidwall/wal %s\n\n", walVersion)
	for _, l := range machine(c.dir) {
		fmt.Fprintf(stdout, "- %s\n", l)
	}
	fmt.Fprintf(stdout, "- records: %d-byte values; %d trial(s); figures are the median (min–max)\n\n", recordBytes, c.trials)

	// (c) reads the same log in every trial: each system fills its own
	// once, in the first trial's directory.
	var pbReadDir, walReadDir string
	workloads := []walWorkload{
		{
			name:     fmt.Sprintf("(a) %s batches of 1,000, fsync per batch", commas(int64(c.batches))),
			passbook: func(dir string) (float64, error) { return passbookBatches(dir, c.batches) },
			wal:      func(dir string) (float64, error) { return walBatches(dir, c.batches) },
		},
		{
			name:     fmt.Sprintf("(b) %s single-record appends, no fsync", commas(int64(c.singles))),
			passbook: func(dir string) (float64, error) { return passbookSingles(dir, c.singles) },
			wal:      func(dir string) (float64, error) { return walSingles(dir, c.singles) },
		},
		{
			name:     "(b′) the same, passbook on write(2)",
			passbook: func(dir string) (float64, error) { return passbookSinglesOn(dir, c.singles, true) },
			wal:      func(dir string) (float64, error) { return walSingles(dir, c.singles) },
		},
		{
			name: fmt.Sprintf("(c) read %s records from the start", commas(int64(c.reads))),
			keep: true,
			passbook: func(dir string) (float64, error) {
				if pbReadDir == "" {
					if err := passbookFill(dir, c.reads); err != nil {
						return 0, err
					}
					pbReadDir = dir
				}
				return passbookRead(pbReadDir, c.reads)
			},
			wal: func(dir string) (float64, error) {
				if walReadDir == "" {
					if err := walFill(dir, c.reads); err != nil {
						return 0, err
					}
					walReadDir = dir
				}
				return walRead(walReadDir, c.reads)
			},
		},
	}

	fmt.Fprintf(stdout, "| workload | passbook records/s | tidwall/wal records/s | passbook / wal |\n")
	fmt.Fprintf(stdout, "|---|---:|---:|---:|\n")
	for wi, w := range workloads {
		var pb, wl []float64
		for trial := range c.trials {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Alternate which system goes first, so that neither always
			// runs on a disk the other just warmed or dirtied.
			runs := []struct {
				name string
				f    func(string) (float64, error)
				out  *[]float64
			}{{"passbook", w.passbook, &pb}, {"wal", w.wal, &wl}}
			if trial%2 == 1 {
				runs[0], runs[1] = runs[1], runs[0]
			}
			for _, r := range runs {
				dir := filepath.Join(tmp, fmt.Sprintf("w%d-t%d-%s", wi, trial, r.name))
				x, err := r.f(dir)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", w.name, r.name, err)
				}
				*r.out = append(*r.out, x)
				if !w.keep {
					os.RemoveAll(dir)
				}
			}
		}
		p, q := summarize(pb), summarize(wl)
		fmt.Fprintf(stdout, "| %s | %s | %s | %.2f× |\n", w.name, p.rate(), q.rate(), p.median/q.median)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "(a) passbook: Append of 1,000 records with Fsync durability (fdatasync); wal: WriteBatch of 1,000 entries with NoSync=false, which fsyncs the batch.")
	fmt.Fprintln(stdout, "(b) passbook: Append of 1 record with InOS durability (a copy into the active segment's shared mapping: no system call per append); (b′) the same with the mapping hidden (vfs.WithoutMapping: a write(2) per append, the baseline); wal: Write with NoSync=true.")
	fmt.Fprintln(stdout, "(c) from the page cache, written just before: passbook: the Records iterator from offset 0 (CRC-checked batches); wal: Read(i) for i = 1…N (a copy per entry).")
	fmt.Fprintln(stdout)
	if c.skipOpen {
		return nil
	}
	return benchOpenAfterKill(ctx, c, tmp, stdout, stderr)
}

func hundredByteRecords(n int) []batch.Record {
	rs := make([]batch.Record, n)
	v := bytes.Repeat([]byte("x"), recordBytes)
	for i := range rs {
		rs[i].Value = v
	}
	return rs
}

func rate(records int, d time.Duration) float64 { return float64(records) / d.Seconds() }

func passbookBatches(dir string, batches int) (float64, error) {
	l, err := storage.Open(dir, &storage.Options{Durability: storage.Fsync})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	rs := hundredByteRecords(1000)
	start := time.Now()
	for range batches {
		if _, err := l.Append(rs, storage.Fsync); err != nil {
			return 0, err
		}
	}
	return rate(batches*1000, time.Since(start)), nil
}

func walBatches(dir string, batches int) (float64, error) {
	w, err := wal.Open(dir, &wal.Options{NoSync: false})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	v := bytes.Repeat([]byte("x"), recordBytes)
	var b wal.Batch
	idx := uint64(1)
	start := time.Now()
	for range batches {
		for range 1000 {
			b.Write(idx, v)
			idx++
		}
		if err := w.WriteBatch(&b); err != nil { // fsyncs: NoSync is false
			return 0, err
		}
	}
	return rate(batches*1000, time.Since(start)), nil
}

// passbookSingles appends n single records, through the mapped active
// segment where the file system can map.
func passbookSingles(dir string, n int) (float64, error) { return passbookSinglesOn(dir, n, false) }

// passbookSinglesOn is passbookSingles; with write2, on write(2) rather
// than through the mapping (the baseline).
func passbookSinglesOn(dir string, n int, write2 bool) (float64, error) {
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
	start := time.Now()
	for range n {
		if _, err := l.Append(rs, storage.InOS); err != nil {
			return 0, err
		}
	}
	return rate(n, time.Since(start)), nil
}

func walSingles(dir string, n int) (float64, error) {
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	v := bytes.Repeat([]byte("x"), recordBytes)
	start := time.Now()
	for i := range n {
		if err := w.Write(uint64(i+1), v); err != nil {
			return 0, err
		}
	}
	return rate(n, time.Since(start)), nil
}

func passbookFill(dir string, n int) error {
	l, err := storage.Open(dir, &storage.Options{Durability: storage.InOS})
	if err != nil {
		return err
	}
	rs := hundredByteRecords(1000)
	for done := 0; done < n; done += len(rs) {
		if _, err := l.Append(rs[:min(len(rs), n-done)], storage.InOS); err != nil {
			l.Close()
			return err
		}
	}
	return l.Close()
}

func walFill(dir string, n int) error {
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		return err
	}
	v := bytes.Repeat([]byte("x"), recordBytes)
	var b wal.Batch
	for i := range n {
		b.Write(uint64(i+1), v)
		if b2 := i + 1; b2%1000 == 0 || b2 == n {
			if err := w.WriteBatch(&b); err != nil {
				w.Close()
				return err
			}
		}
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func passbookRead(dir string, n int) (float64, error) {
	l, err := storage.Open(dir, nil)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	start := time.Now()
	got, sum := 0, 0
	for rec, err := range l.Records(0) {
		if err != nil {
			return 0, err
		}
		sum += len(rec.Value)
		got++
	}
	d := time.Since(start)
	if got != n || sum != n*recordBytes {
		return 0, fmt.Errorf("read %d records (%d bytes), want %d", got, sum, n)
	}
	return rate(n, d), nil
}

func walRead(dir string, n int) (float64, error) {
	w, err := wal.Open(dir, nil)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	start := time.Now()
	sum := 0
	for i := range n {
		v, err := w.Read(uint64(i + 1))
		if err != nil {
			return 0, err
		}
		sum += len(v)
	}
	d := time.Since(start)
	if sum != n*recordBytes {
		return 0, fmt.Errorf("read %d bytes, want %d", sum, n*recordBytes)
	}
	return rate(n, d), nil
}
