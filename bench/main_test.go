package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the bench binary when the
// open-after-kill workload starts it as a child process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == fillCommand || os.Args[1] == openCommand || os.Args[1] == kfakeCommand) {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCommas(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"},
		{1234567, "1,234,567"}, {-1234567, "-1,234,567"}, {100000, "100,000"},
	} {
		if got := commas(tc.n); got != tc.want {
			t.Errorf("commas(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1GiB", 1 << 30}, {"64MiB", 64 << 20}, {"0.5GiB", 512 << 20}, {"4096", 4096}, {"2 KiB", 2048}, {"10B", 10},
	} {
		if got, err := parseSize(tc.in); err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1MiB", "1GB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want stats
	}{
		{[]float64{3}, stats{3, 3, 3}},
		{[]float64{5, 1, 3}, stats{3, 1, 5}},
		{[]float64{4, 1, 3, 2}, stats{2.5, 1, 4}},
	} {
		if got := summarize(tc.xs); got != tc.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tc.xs, got, tc.want)
		}
	}
}

// TestWAL_Quick is the CI smoke run: every workload, one small trial.
func TestWAL_Quick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	var out, errs strings.Builder
	err := run(context.Background(), []string{"wal", "-quick", "-open-size", "4MiB", "-dir", t.TempDir()}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log(out.String())
	for _, want := range []string{"| (a) ", "| (b) ", "| (c) ", "| Open time |", "passbook / wal"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--quick", "--n", "1000"}, "--quick --n 1000"},
		{[]string{"--source", "commit abc (git archive)"}, "--source 'commit abc (git archive)'"},
		{[]string{"--source", "it's"}, `--source 'it'\''s'`},
		{[]string{"--md", "../docs/benchmarks.md", ""}, "--md ../docs/benchmarks.md ''"},
	} {
		if got := shellJoin(tc.args); got != tc.want {
			t.Errorf("shellJoin(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
