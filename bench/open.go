package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/storage"
)

// The open-after-kill workload (d) runs in child processes, so that the
// log is left as kill -9 leaves it (no Close, no clean checkpoint) and
// the RSS measured is that of a process that does nothing but Open.
const (
	fillCommand = "_fill" // fill a log to a size, then SIGKILL itself
	openCommand = "_open" // open a log, report as JSON, then SIGKILL itself
)

// openProbe is what the _open child reports.
type openProbe struct {
	OpenNanos   int64
	RSSBeforeKB int64
	RSSAfterKB  int64
	HWMAfterKB  int64
	Head        int64
	Size        int64
	Segments    int
	Validated   int64
	TornBytes   int64
}

// segmentBytes is the segment size the fill uses: storage's default.
const segmentBytes = 128 << 20

func benchOpenAfterKill(ctx context.Context, c walConfig, tmp string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "| (d) open after kill -9 (passbook) | log | re-validated at Open | Open time | RSS growth during Open | peak RSS |\n")
	fmt.Fprintf(stdout, "|---|---|---:|---:|---:|---:|\n")
	cache := "warm (in the page cache)"
	for _, fullActive := range []bool{false, true} {
		name := fmt.Sprintf("%s, the active segment as the writer left it", bytesIEC(c.openSize))
		dir := filepath.Join(tmp, "open-after-kill")
		if fullActive {
			name = fmt.Sprintf("%s or more, the active segment full (the worst case)", bytesIEC(c.openSize))
			dir += "-full"
		}
		fill := exec.CommandContext(ctx, exe, fillCommand, "-dir", dir, "-size", fmt.Sprint(c.openSize), fmt.Sprintf("-full-active=%t", fullActive))
		fill.Stderr = stderr
		if err := fill.Run(); !killedBySIGKILL(err) {
			return fmt.Errorf("fill %s: %v (want the child killed by SIGKILL)", dir, err)
		}
		var opens, rss, hwm []float64
		var last openProbe
		for range c.trials {
			if c.dropCaches && dropCaches() {
				cache = "cold (page cache dropped before each Open)"
			}
			var out strings.Builder
			probe := exec.CommandContext(ctx, exe, openCommand, "-dir", dir)
			probe.Stdout, probe.Stderr = &out, stderr
			if err := probe.Run(); !killedBySIGKILL(err) {
				return fmt.Errorf("open probe: %v (want the child killed by SIGKILL)", err)
			}
			if err := json.Unmarshal([]byte(out.String()), &last); err != nil {
				return fmt.Errorf("open probe printed %q: %w", out.String(), err)
			}
			opens = append(opens, float64(last.OpenNanos)/1e9)
			rss = append(rss, float64(last.RSSAfterKB-last.RSSBeforeKB)*1024)
			hwm = append(hwm, float64(last.HWMAfterKB)*1024)
		}
		fmt.Fprintf(stdout, "| %s | %s in %d segments, %s records | %s, %s torn | %s | %s | %s |\n",
			name, bytesIEC(last.Size), last.Segments, commas(last.Head), bytesIEC(last.Validated), commas(last.TornBytes),
			summarize(opens).duration(), summarize(rss).size(), summarize(hwm).size())
		os.RemoveAll(dir)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "(d) a child process appends 1,000-record batches (InOS, %s segments) until the log reaches the size (and, in the worst case, until the next batch would roll the segment), then kills itself with SIGKILL. Each trial opens the log in a fresh process, which also dies by SIGKILL, so every Open recovers from an unclean stop: it re-validates the active segment batch by batch and loads the closed ones from their indexes. Page cache: %s.\n", bytesIEC(segmentBytes), cache)
	return nil
}

// killedBySIGKILL reports whether a child's Run error says it died by
// SIGKILL, as the children here do on purpose.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// dropCaches empties the page cache if this process may (root on Linux),
// so that Open reads from the disk. It reports whether it did.
func dropCaches() bool {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0) == nil
}

func killSelf() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// runFill is the _fill child: append until the log holds size bytes, then
// die without closing.
func runFill(args []string) error {
	fs := flag.NewFlagSet(fillCommand, flag.ContinueOnError)
	dir := fs.String("dir", "", "log directory")
	size := fs.Int64("size", 0, "bytes to write")
	fullActive := fs.Bool("full-active", false, "go on until the next batch would roll the active segment")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l, err := storage.Open(*dir, &storage.Options{Durability: storage.InOS, SegmentBytes: segmentBytes})
	if err != nil {
		return err
	}
	rs := hundredByteRecords(1000)
	active, segs := int64(0), l.SegmentCount()
	for {
		before := l.Size()
		if _, err := l.Append(rs, storage.InOS); err != nil {
			return err
		}
		n := l.Size() - before
		if l.SegmentCount() != segs {
			active, segs = n, l.SegmentCount()
		} else {
			active += n
		}
		if l.Size() >= *size && (!*fullActive || active+n > segmentBytes) {
			break
		}
	}
	killSelf()
	return nil
}

// runOpenProbe is the _open child: open the log, print what it cost as
// JSON, and die without closing.
func runOpenProbe(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(openCommand, flag.ContinueOnError)
	dir := fs.String("dir", "", "log directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var p openProbe
	p.RSSBeforeKB = procValue("/proc/self/status", "VmRSS")
	start := time.Now()
	l, err := storage.Open(*dir, nil)
	if err != nil {
		return err
	}
	p.OpenNanos = time.Since(start).Nanoseconds()
	p.RSSAfterKB = procValue("/proc/self/status", "VmRSS")
	p.HWMAfterKB = procValue("/proc/self/status", "VmHWM")
	rec := l.Recovery()
	p.Head, p.Size, p.Segments, p.Validated, p.TornBytes = l.Head(), l.Size(), l.SegmentCount(), rec.Validated, rec.TornBytes
	if err := json.NewEncoder(stdout).Encode(p); err != nil {
		return err
	}
	killSelf()
	return nil
}
