package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPeers_Quick is the CI run of the side-by-side harness: N = 10,000,
// one trial, every peer that is installed here (the others must say why
// they were skipped), the report and the chart written.
func TestPeers_Quick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := t.TempDir()
	md, png := filepath.Join(dir, "benchmarks.md"), filepath.Join(dir, "benchmarks.png")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\n## Storage\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	err := run(context.Background(), []string{"--quick", "--peers", "all", "--dir", dir, "--md", md, "--png", png}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log(out.String())
	report := out.String()
	quick := params{n: 10_000, size: recordBytes, batch: 1000, rate: 2000, latencyTime: time.Second, partitions: 1000, openSizes: [2]int{100, 1000}}
	for w := range numWorkloads {
		if !strings.Contains(report, w.title(quick)) {
			t.Errorf("report lacks the table of %s", w.key())
		}
	}
	// Issue 21: the machine's limits, its targets (each measured, as a
	// ratio or a time), the figures against the limits, storage.Log
	// against tidwall/wal at 1 and 16 appenders.
	for _, want := range []string{
		"### This machine's limits", "| fdatasync of a 170 B append to one file |", "| buffered write + fdatasync, 16.00 MiB in 1 MiB writes |",
		"### The targets of issue 21", "### Against this machine's limits",
		"| acks=all over 1,000 partitions ≥ 0.5× acks=all over one partition (passbook serve) |",
		"| acks=all over 1,000 partitions ≥ kfake (in memory) at 1,000 partitions |",
		"| Kafka produce with franz-go's default producer settings ≥ 0.9× kfake (in memory) |",
		"| 1 KiB records, acks=all (fsync), ≥ 90% of the disk's buffered+fdatasync bandwidth (Kafka protocol) |",
		"| open of passbook serve over 1,000 partitions after a clean stop (exec → ready) |",
		"| single-record InOS appends, 16 appenders on one log: storage.Log ≥ 1.5× tidwall/wal |",
		"| server CPU per MB fetched by a replay, against kfake (in memory) |",
		"### storage.Log vs tidwall/wal: 10,000 InOS appends, single records from 1 and 16 appenders, and batches", "| 16 | ", "| 1, batches of 1,000 | ",
		"| server | CPU per MB fetched | ÷ kfake's |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, row := range strings.Split(report, "\n") {
		if strings.Contains(row, "| not measured |") && (strings.Contains(row, "partitions") || strings.Contains(row, "franz-go's default")) {
			t.Errorf("an issue 21 target was not measured: %s", row)
		}
	}
	// passbook itself must have run every workload it has. The latency
	// rows depend on a tailing reader and on the machine's load, so their
	// failures are logged rather than failing the test.
	section := ""
	for _, row := range strings.Split(report, "\n") {
		if strings.HasPrefix(row, "### ") {
			section = row
		}
		bad := strings.HasPrefix(row, "| passbook (embedded) |") && (strings.Contains(row, "failed:") || strings.Contains(row, "skipped:")) ||
			strings.HasPrefix(row, "| passbook (Kafka protocol) |") && strings.Contains(row, "failed:")
		switch {
		case bad && strings.Contains(section, "latency"):
			t.Logf("passbook latency did not run: %s", row)
		case bad:
			t.Errorf("passbook did not run (%s): %s", section, row)
		}
	}
	// Every peer is in the report: with figures, or with its reason.
	for _, name := range []string{"tidwall/wal", "franz-go kfake (in memory)", "Apache Kafka (KRaft, defaults)", "Apache Kafka (KRaft, flush.messages=1)", "NATS JetStream", "Redis Streams (appendfsync everysec)", "RabbitMQ Streams", "the course's Python lab"} {
		if !strings.Contains(report, "| "+name+" |") {
			t.Errorf("report does not mention %s", name)
		}
	}
	// The servers' costs: passbook serve's row is there, with a start
	// time and a resident set.
	if !strings.Contains(report, "### What each server costs") || !strings.Contains(report, "| passbook (Kafka protocol) | ") {
		t.Errorf("report lacks the table of what each server costs")
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "## Storage\n\nkept") || !strings.Contains(string(b), sectionBegin) {
		t.Errorf("the markdown file lost its other sections or lacks the harness's:\n%s", b)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
		t.Errorf("chart: %v", err)
	}
}

func TestWriteSection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.md")
	if err := writeSection(file, "one"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	if err := os.WriteFile(file, append(b, "\n## After\n\nby others\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(file, "two"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(file)
	got := string(b)
	want := "# Benchmarks\n\n" + sectionBegin + "\n\ntwo\n\n" + sectionEnd + "\n## After\n\nby others\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestProc_StopKillsGroup: stopping a peer stops what it forked too.
func TestProc_StopKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The shell ignores SIGTERM, so only the group's SIGKILL ends it.
	p, err := startProc("sh", filepath.Join(dir, "log"), nil, "sh", "-c", "trap '' TERM; sleep 300 & echo $! > "+pidFile+"; wait")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		child = atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("no child pid")
	}
	p.stop(200 * time.Millisecond)
	if !p.exited() {
		t.Fatal("the process is still running")
	}
	for i := 0; i < 100; i++ {
		if !alive(child) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("child %d outlived stop", child)
}

// alive: the process exists and is not a zombie (which the init of a
// container may never reap).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1000; i >= 1; i-- {
		lat = append(lat, time.Duration(i))
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 501}, {0.99, 990}, {0.999, 999}, {0, 1}, {1, 1000}} {
		if got := percentile(lat, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// TestPythonLab runs a stand-in for the course's script: the harness
// divides the records it says it processed by the script's wall time.
func TestPythonLab(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "lab.py")
	if err := os.WriteFile(script, []byte("print('total records processed: 100,001  (one ran twice)')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := pythonLab(script)
	if s.unavailable != "" {
		t.Fatal(s.unavailable)
	}
	tg, err := s.start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tg.run(context.Background(), wCommit, params{})
	if err != nil {
		t.Fatal(err)
	}
	if m.records != 100_001 || m.elapsed <= 0 {
		t.Errorf("got %d records in %v, want 100,001", m.records, m.elapsed)
	}
	if _, err := tg.run(context.Background(), wBatch, params{}); err == nil {
		t.Error("the lab ran a workload it does not have")
	}
	if s := pythonLab(""); s.unavailable == "" {
		t.Error("no script, yet not reported as skipped")
	}
}
