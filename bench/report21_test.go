package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// fakeResults is a run's results with the given records/s per system and
// workload (one trial each, of one second), for the report's tests.
func fakeResults(p params, rates map[string]map[workload]float64) *results {
	h := &harness{p: p, trials: 1}
	for w := range numWorkloads {
		h.workloads = append(h.workloads, w)
	}
	r := &results{h: h, cells: map[string]map[workload]*cell{}, appenders: appenderResults{}}
	for _, name := range []string{pbEmbedded, pbKafka, kfakeMemoryName} {
		s := &system{name: name, durability: func(workload) string { return "" }, skip: func(workload) string { return "" }}
		r.systems = append(r.systems, s)
		for w, x := range rates[name] {
			r.cell(s, w).trials = append(r.cell(s, w).trials, measure{records: int(x), elapsed: time.Second})
		}
	}
	return r
}

// TestTargets21 checks each row of issue 21's targets table: the ratio it
// computes from the run's figures and whether the target is met.
func TestTargets21(t *testing.T) {
	p := params{n: 1_000_000, size: 100, batch: 1000, partitions: 1000, openSizes: [2]int{1000, 10_000}}
	r := fakeResults(p, map[string]map[workload]float64{
		pbKafka: {
			wAcks1: 1_000_000, wAcksMany: 600_000, wDefaults: 850_000, wKiBDurable: 380_000,
		},
		pbEmbedded:      {wKiBDurable: 400_000},
		kfakeMemoryName: {wAcksMany: 700_000, wDefaults: 1_000_000},
	})
	// Open times: 0.4 s for 1,000 partitions, 3.5 s for 10,000.
	r.cell(r.systems[1], wOpenSmall).trials = []measure{{records: 1000, elapsed: 400 * time.Millisecond}}
	r.cell(r.systems[1], wOpenLarge).trials = []measure{{records: 10_000, elapsed: 3500 * time.Millisecond}}
	r.cell(r.systems[1], wReplay).trials = []measure{{records: 1000, elapsed: time.Second, serverCPU: 10 * time.Millisecond, bytes: 1e6}}
	r.limits = &limits{seqBytesPerS: stats{median: 400e6, min: 400e6, max: 400e6}, fsyncPar: map[int]stats{64: {median: 60e-6}},
		fsync: stats{median: 200e-6}, write1: stats{median: 1e-6}, write16: stats{median: 170e-9}}
	r.appenders.add("passbook", 1, 1_500_000)
	r.appenders.add("wal", 1, 1_000_000)
	r.appenders.add("passbook", 16, 3_200_000)
	r.appenders.add("wal", 16, 1_000_000)
	var b strings.Builder
	r.targets21(&b)
	got := b.String()
	t.Log(got)
	for _, tc := range []struct{ row, ratio, met string }{
		{"acks=all over 1,000 partitions ≥ 0.5× acks=all over one partition", "0.60×", "**yes**"},
		{"acks=all over 1,000 partitions ≥ kfake (in memory)", "0.86×", "no"},
		{"franz-go's default producer settings ≥ 0.9× kfake", "0.85×", "no"},
		// 380,000 × 1 KiB = 389 MB/s of 400 MB/s: 97%.
		{"1 KiB records, acks=all (fsync), ≥ 90%", "97%", "**yes**"},
		{"1 KiB records, Fsync, ≥ 90%", "102%", "**yes**"},
		{"open of passbook serve over 1,000 partitions", "—", "**yes**"},
		{"open of passbook serve over 10,000 partitions", "—", "no"},
		{"one appender: storage.Log ≥ 1.5× tidwall/wal", "1.50×", "**yes**"},
		{"16 appenders on one log: storage.Log ≥ 1.5× tidwall/wal", "3.20×", "**yes**"},
		{"16 appenders: storage.Log ≥ 3 M records/s", "—", "**yes**"},
		{"server CPU per MB fetched by a replay: −40% against the old path", "—", "not measured here"},
	} {
		row := ""
		for _, l := range strings.Split(got, "\n") {
			if strings.Contains(l, tc.row) {
				row = l
			}
		}
		if row == "" {
			t.Errorf("no row %q", tc.row)
			continue
		}
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 6 {
			t.Errorf("row %q has %d cells", row, len(cells))
			continue
		}
		if cells[3] != tc.ratio || cells[5] != tc.met {
			t.Errorf("row %q: ratio %q, met %q; want %q, %q", tc.row, cells[3], cells[5], tc.ratio, tc.met)
		}
	}
}

// TestFetchCPU: the server's CPU per MB fetched, from the CPU time and
// bytes of each replay, and its ratio to kfake's.
func TestFetchCPU(t *testing.T) {
	r := fakeResults(params{n: 1000, size: 100}, nil)
	r.cell(r.systems[1], wReplay).trials = []measure{{records: 1_000_000, elapsed: time.Second, serverCPU: 300 * time.Millisecond, bytes: 100e6}}
	r.cell(r.systems[2], wReplay).trials = []measure{{records: 1_000_000, elapsed: time.Second, serverCPU: 600 * time.Millisecond, bytes: 100e6}}
	r.cell(r.systems[0], wReplay).trials = []measure{{records: 1_000_000, elapsed: time.Second}}
	if got := r.medianCPUPerMB(pbKafka); got < 2.99e-3 || got > 3.01e-3 {
		t.Errorf("passbook: %g s per MB, want 3 ms", got)
	}
	var b strings.Builder
	r.fetchCPUTable(&b)
	for _, want := range []string{"| passbook (Kafka protocol) | 3.00 ms | 0.50× |", "| franz-go kfake (in memory) | 6.00 ms | 1.00× |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), pbEmbedded) {
		t.Errorf("the embedded side has no server, yet it has a row:\n%s", b.String())
	}
}

// TestThreadsCPU: the CPU time of this process's threads, summed, grows
// with work done, and a process that does not exist is an error.
func TestThreadsCPU(t *testing.T) {
	before, err := threadsCPU(os.Getpid())
	if err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i * 7
	}
	after, err := threadsCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time %v then %v (x %d): did not grow", before, after, x)
	}
	if _, err := threadsCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// TestLimitsTable: each workload's figure over the ceiling the machine's
// limit sets for it.
func TestLimitsTable(t *testing.T) {
	p := params{n: 1000, size: 100, batch: 1000, partitions: 1000}
	r := fakeResults(p, map[string]map[workload]float64{
		pbEmbedded: {wSingle: 500_000, wDurable: 2_500_000},
		pbKafka:    {wDurable: 500_000, wAcksMany: 50_000},
	})
	r.limits = &limits{write1: stats{median: 1e-6}, write16: stats{median: 200e-9}, fsync: stats{median: 200e-6},
		fsyncPar: map[int]stats{64: {median: 100e-6}}, touchRecord: stats{median: 100e-9}, seqBytesPerS: stats{median: 400e6}}
	r.appenders.add("passbook", 1, 2_000_000)
	r.appenders.add("passbook-write2", 1, 250_000)
	var b strings.Builder
	r.limitsTable(&b)
	t.Log(b.String())
	for _, want := range []string{
		"| 1. one record at a time (InOS) | one write(2) of 170 B per record | 1,000,000/s | 500,000/s | 0.50 | — | — |",
		"| 3. batches of 1,000, fsync | one fdatasync per 1,000 records | 5,000,000/s | 2,500,000/s | 0.50 | 500,000/s | 0.10 |",
		// 10,000 records a window over 1,000 partitions × 100 µs: 100,000/s.
		"| acks=all over 1,000 partitions | every partition's fdatasync per window of 10,000, at the per-file cost of 64 in parallel | 100,000/s | — | — | 50,000/s | 0.50 |",
		"| storage.Log, one appender (InOS, mapped) | first touch of a fresh mapped page, per 170 B record | 10,000,000/s | 2,000,000/s | 0.20 | — | — |",
		"| storage.Log on write(2), one appender (InOS) | one write(2) of 170 B per record | 1,000,000/s | 250,000/s | 0.25 | — | — |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
