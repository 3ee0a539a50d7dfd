package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The side-by-side harness: passbook (embedded, and over the Kafka
// protocol) and its peers on the same workloads, in the same run, on the
// same machine. Every claim is a ratio of two figures measured here.

// workload is one kind of work every system that can do it runs.
type workload int

const (
	wSingle  workload = iota // append one record at a time, each acknowledged
	wBatch                   // append in windows of --batch records
	wDurable                 // as wBatch, each acknowledgement after an fsync
	wReplay                  // read N records from offset 0
	wCommit                  // a consumer committing after every record
	wLatency                 // produce → tailing consumer at a fixed rate
	wKiB                     // as wBatch with 1 KiB records
	// The workloads of issue 21 (durable produce over many partitions,
	// franz-go's defaults, 1 KiB records against the disk's bandwidth,
	// open time over many partitions).
	wKiBDurable // as wDurable with 1 KiB records
	wDefaults   // Kafka produce with franz-go's default producer settings
	wAcks1      // acks=all produce over 1 partition, windows of --partitions × 10 records
	wAcksMany   // the same over --partitions partitions, round robin
	wOpenSmall  // passbook serve's open time over the first of --open-partitions
	wOpenLarge  // the same over the second
	numWorkloads
)

var workloadKeys = [numWorkloads]string{"single", "batch", "fsync", "replay", "commit", "latency", "1kib",
	"1kib-fsync", "defaults", "acks-1p", "acks-manyp", "open-small", "open-large"}

// kafkaOnly reports whether w runs only on Kafka-protocol servers the
// issue compares (passbook serve and kfake): the other systems skip it.
func (w workload) kafkaOnly() bool {
	return w == wDefaults || w == wAcks1 || w == wAcksMany || w == wOpenSmall || w == wOpenLarge
}

func (w workload) key() string { return workloadKeys[w] }

// title is the heading of the workload's table.
func (w workload) title(p params) string {
	switch w {
	case wSingle:
		return fmt.Sprintf("Append %s × %d B, one record at a time", commas(int64(p.n)), p.size)
	case wBatch:
		return fmt.Sprintf("Append %s × %d B in batches of %s", commas(int64(p.n)), p.size, commas(int64(p.batch)))
	case wDurable:
		return fmt.Sprintf("Append %s × %d B in batches of %s, fsync before acknowledgement", commas(int64(p.n)), p.size, commas(int64(p.batch)))
	case wReplay:
		return fmt.Sprintf("Replay %s × %d B from offset 0", commas(int64(p.n)), p.size)
	case wCommit:
		return fmt.Sprintf("Consume %d B records, committing after every record", p.size)
	case wLatency:
		return fmt.Sprintf("End-to-end latency, produce → tailing consumer, %s records/s of %d B for %v", commas(int64(p.rate)), p.size, p.latencyTime)
	case wKiB:
		return fmt.Sprintf("Append %s × 1 KiB in batches of %s", commas(int64(p.n)), commas(int64(p.batch)))
	case wKiBDurable:
		return fmt.Sprintf("Append %s × 1 KiB in batches of %s, fsync before acknowledgement, against the disk's bandwidth", commas(int64(p.n)), commas(int64(p.batch)))
	case wDefaults:
		return fmt.Sprintf("Kafka produce of %s × %d B with franz-go's default producer settings", commas(int64(p.n)), p.size)
	case wAcks1:
		return fmt.Sprintf("acks=all produce of %s × %d B to 1 partition, windows of %s", commas(int64(p.n)), p.size, commas(int64(p.manyWindow())))
	case wAcksMany:
		return fmt.Sprintf("acks=all produce of %s × %d B over %s partitions, windows of %s", commas(int64(p.n)), p.size, commas(int64(p.partitions)), commas(int64(p.manyWindow())))
	case wOpenSmall, wOpenLarge:
		return fmt.Sprintf("Open of passbook serve over %s partitions, after a clean stop", commas(int64(p.openPartitions(w))))
	}
	return "?"
}

// params size every workload.
type params struct {
	n           int           // records per append and replay workload
	size        int           // bytes per record (1 KiB for wKiB)
	batch       int           // records per batch / window of unacknowledged records
	maxTime     time.Duration // a measurement stops after this long; its rate is records done / time taken
	rate        int           // wLatency: records/s offered
	latencyTime time.Duration // wLatency: how long
	partitions  int           // wAcksMany: partitions of the topic
	openSizes   [2]int        // wOpenSmall, wOpenLarge: partitions of the data directory
}

// manyWindow is the window of unacknowledged records of the acks=all
// workloads, the same over 1 partition and over many: ten records a
// partition of the many.
func (p params) manyWindow() int { return max(10*p.partitions, p.batch) }

// openPartitions is the partition count an open workload opens.
func (p params) openPartitions(w workload) int {
	if w == wOpenLarge {
		return p.openSizes[1]
	}
	return p.openSizes[0]
}

// forWorkload is p as w runs it.
func (p params) forWorkload(w workload) params {
	if w == wKiB || w == wKiBDurable {
		p.size = 1024
	}
	return p
}

// measure is the outcome of one workload in one trial.
type measure struct {
	records int           // records appended, read or committed
	elapsed time.Duration // time taken
	lat     []time.Duration
	// The server's CPU time over the measurement and the record bytes
	// it moved (replay: the bytes fetched), where the harness can read
	// the server process.
	serverCPU time.Duration
	bytes     int64
}

func (m measure) rate() float64 { return float64(m.records) / m.elapsed.Seconds() }

// target is a started system.
type target interface {
	// run does one workload. A workload the system cannot do returns a
	// notApplicable error naming the reason.
	run(ctx context.Context, w workload, p params) (measure, error)
	close() error
}

// system is one side of the comparison in one configuration.
type system struct {
	key     string // what --peers names (several systems may share one)
	name    string // as the tables show it
	version string
	// durability says what an acknowledgement (or a commit) means on
	// this system for w; "" when w is not applicable (see skip).
	durability func(w workload) string
	// skip names why w is not run here, or "".
	skip func(w workload) string
	// start starts it for one trial, in a fresh directory under tmp.
	start func(ctx context.Context, tmp string) (target, error)
	// unavailable, when set, is why the system cannot run at all (not
	// installed): it is reported as skipped.
	unavailable string
	// variant marks a second configuration of a peer that runs only one
	// workload (fsync): the other tables leave it out.
	variant bool
}

// harness is one run's configuration.
type harness struct {
	p           params
	trials      int
	dir         string // where temporary directories go
	peers       map[string]bool
	workloads   []workload
	pythonLab   string
	natsServer  string
	natsSync    string // nats-server for the sync_interval: always row
	passbookBin string
	baselineBin string
	source      string
	mdOut       string
	pngOut      string
	quick       bool
	skipLimits  bool
	appenders   bool // run storage.Log vs tidwall/wal at 1 and 16 appenders
	stderr      io.Writer
	command     string
}

const peersUsage = `usage: bench [--peers LIST] [--n N] [flags]

Runs passbook (embedded, and "passbook serve" over the Kafka protocol with
franz-go) side by side with its peers on the same workloads, starting and
stopping each peer server itself on 127.0.0.1 with a fresh data directory.

`

var allPeers = []string{"wal", "kfake", "kafka", "nats", "redis", "rabbitmq"}

func runPeers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	h := harness{stderr: stderr}
	peers := fs.String("peers", "all", "peers to run beside passbook: all, or a comma-separated list of "+strings.Join(allPeers, ", "))
	wls := fs.String("workloads", "all", "workloads: all, or a comma-separated list of "+strings.Join(workloadKeys[:], ", ")+", "+appendersKey+" (storage.Log vs tidwall/wal, 1 and 16 InOS appenders)")
	fs.IntVar(&h.p.n, "n", 1_000_000, "records per append and replay workload")
	fs.IntVar(&h.p.batch, "batch", 1000, "records per batch (or window of unacknowledged records)")
	fs.DurationVar(&h.p.maxTime, "max-time", 10*time.Second, "a measurement stops after this long; its rate is the records done over the time taken")
	fs.IntVar(&h.p.rate, "rate", 10_000, "latency workload: records/s offered (below every system's saturation)")
	fs.DurationVar(&h.p.latencyTime, "latency-time", 5*time.Second, "latency workload: how long to produce")
	fs.IntVar(&h.p.partitions, "partitions", 1000, "acks-manyp workload: partitions of the topic (acks-1p has one; both produce --n records in windows of 10 × this)")
	openSizes := fs.String("open-partitions", "1000,10000", "open-small and open-large workloads: partitions of the data directory passbook serve opens")
	fs.BoolVar(&h.skipLimits, "skip-limits", false, "do not measure the machine's limits at the start")
	fs.IntVar(&h.trials, "trials", 3, "trials; each starts every system afresh")
	fs.StringVar(&h.dir, "dir", os.TempDir(), "directory for the temporary data directories (the disk under test)")
	fs.StringVar(&h.pythonLab, "python-lab", "", "the course's Python lab script, run with python3 in a fresh directory (not ours to commit)")
	fs.StringVar(&h.natsServer, "nats-server", "nats-server", "the nats-server binary")
	fs.StringVar(&h.natsSync, "nats-sync-server", "", "the nats-server binary for the sync_interval: always configuration, which needs 2.10 or later (default: --nats-server)")
	fs.StringVar(&h.passbookBin, "passbook", "", "the passbook binary for the Kafka-protocol runs (default: built from this repository with go build)")
	fs.StringVar(&h.source, "source", "", `what the report calls the passbook source under test, e.g. "commit abc1234 (git archive)" when run from an exported tree (default: the checkout's git HEAD, marked when it has uncommitted changes)`)
	fs.StringVar(&h.baselineBin, "baseline-passbook", "", "an older passbook binary (the old fetch path) whose server CPU per MB fetched the replay compares with")
	fs.StringVar(&h.mdOut, "md", "", "also write the report into this markdown file, replacing only its own section (e.g. ../docs/benchmarks.md)")
	fs.StringVar(&h.pngOut, "png", "", "also draw the bar chart into this PNG file (e.g. ../docs/benchmarks.png)")
	fs.BoolVar(&h.quick, "quick", false, "N = 10,000, one trial, short latency run: a smoke run of seconds (for CI)")
	fs.Usage = func() {
		fmt.Fprint(stderr, peersUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if h.quick {
		h.trials = 1
		if !isFlagSet(fs, "n") {
			h.p.n = 10_000
		}
		if !isFlagSet(fs, "max-time") {
			h.p.maxTime = 2 * time.Second
		}
		if !isFlagSet(fs, "rate") {
			h.p.rate = 2_000
		}
		if !isFlagSet(fs, "latency-time") {
			h.p.latencyTime = time.Second
		}
		if !isFlagSet(fs, "open-partitions") {
			*openSizes = "100,1000"
		}
	}
	if _, err := fmt.Sscanf(*openSizes, "%d,%d", &h.p.openSizes[0], &h.p.openSizes[1]); err != nil || h.p.openSizes[0] < 1 || h.p.openSizes[1] < 1 {
		return fmt.Errorf("--open-partitions %q: want two positive counts, e.g. 1000,10000", *openSizes)
	}
	h.p.size = recordBytes
	if h.natsSync == "" {
		h.natsSync = h.natsServer
	}
	if h.p.n < 1 || h.p.batch < 1 || h.trials < 1 || h.p.rate < 1 || h.p.maxTime <= 0 || h.p.latencyTime <= 0 || h.p.partitions < 1 {
		return errors.New("--n, --batch, --trials, --rate, --max-time, --latency-time and --partitions must be positive")
	}
	h.peers = map[string]bool{}
	for _, k := range strings.Split(*peers, ",") {
		switch k = strings.TrimSpace(k); {
		case k == "all":
			for _, p := range allPeers {
				h.peers[p] = true
			}
		case k == "" || k == "none":
		case slices.Contains(allPeers, k):
			h.peers[k] = true
		default:
			return fmt.Errorf("unknown peer %q (want all or some of %s)", k, strings.Join(allPeers, ", "))
		}
	}
	for _, k := range strings.Split(*wls, ",") {
		k = strings.TrimSpace(k)
		if k == "all" {
			h.workloads = nil
			for w := range numWorkloads {
				h.workloads = append(h.workloads, w)
			}
			h.appenders = true
			break
		}
		if k == appendersKey {
			h.appenders = true
			continue
		}
		i := slices.Index(workloadKeys[:], k)
		if i < 0 {
			return fmt.Errorf("unknown workload %q (want all or some of %s, %s)", k, strings.Join(workloadKeys[:], ", "), appendersKey)
		}
		h.workloads = append(h.workloads, workload(i))
	}
	h.command = "go run -C bench . " + shellJoin(args)
	tmp, err := os.MkdirTemp(h.dir, "passbook-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	res, err := h.run(ctx, tmp)
	if err != nil {
		return err
	}
	report := res.markdown()
	fmt.Fprint(stdout, report)
	if h.mdOut != "" {
		if err := writeSection(h.mdOut, report); err != nil {
			return err
		}
	}
	if h.pngOut != "" {
		if err := res.chart(h.pngOut); err != nil {
			return err
		}
	}
	return nil
}

// shellJoin joins args as a shell would need them typed: an argument
// with a space or a shell metacharacter in single quotes.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`()[]{}*?;&|<>#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// cell is one system on one workload over the trials.
type cell struct {
	trials []measure
	errs   []string
	skip   string
	hidden bool // not a system this workload compares: no row in its table
}

// results is everything a run measured.
type results struct {
	h            *harness
	systems      []*system
	cells        map[string]map[workload]*cell // by system name
	started      time.Time
	took         time.Duration
	loadAvg      [2]string // before and after
	loadDuring   stats     // the 1-minute load average, sampled every 5 s
	machine      []string
	usage        map[string][]serverUsage // by system name, a trial each
	work         map[string]int           // records measured, by system name, over the trials
	limits       *limits                  // this machine's, measured at the start; nil if not
	limitsErr    string                   // why they could not be measured, or ""
	appenders    appenderResults          // storage.Log vs tidwall/wal, InOS, 1 and 16 appenders
	appendersErr string                   // why a trial of them failed, or ""
}

func (r *results) cell(s *system, w workload) *cell {
	m := r.cells[s.name]
	if m == nil {
		m = map[workload]*cell{}
		r.cells[s.name] = m
	}
	c := m[w]
	if c == nil {
		c = &cell{}
		m[w] = c
	}
	return c
}

func (h *harness) run(ctx context.Context, tmp string) (*results, error) {
	systems, err := h.systems(ctx, tmp)
	if err != nil {
		return nil, err
	}
	r := &results{h: h, systems: systems, cells: map[string]map[workload]*cell{}, started: time.Now(), machine: machine(h.dir),
		usage: map[string][]serverUsage{}, work: map[string]int{}, appenders: appenderResults{}}
	r.loadAvg[0] = loadAvg()
	if !h.skipLimits {
		fmt.Fprintf(h.stderr, "measuring this machine's limits in %s\n", h.dir)
		sz := limitSizesFor(h.quick)
		// A file system that cannot do one of them (fallocate, mmap)
		// costs the report its limits, not the run.
		if l, err := measureLimits(tmp, sz); err != nil {
			r.limitsErr = err.Error()
			fmt.Fprintf(h.stderr, "machine limits: %v\n", err)
		} else {
			l.dir = h.dir
			r.limits = l
			fmt.Fprint(h.stderr, l.markdown())
		}
	}
	// Sample the 1-minute load average while the run goes.
	sampling := make(chan struct{})
	sampled := make(chan []float64, 1)
	go func() {
		var xs []float64
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			if x, err := strconv.ParseFloat(strings.Split(loadAvg(), ",")[0], 64); err == nil {
				xs = append(xs, x)
			}
			select {
			case <-tick.C:
			case <-sampling:
				sampled <- xs
				return
			}
		}
	}()
	defer func() {
		close(sampling)
		r.loadDuring = summarize(<-sampled)
	}()
	for trial := range h.trials {
		if err := h.runTrial(ctx, r, trial, tmp); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.loadAvg[1] = loadAvg()
	r.took = time.Since(r.started)
	return r, nil
}

// started is a system started for a trial.
type started struct {
	s   *system
	t   target
	dir string
}

// runTrial starts every system, then runs each workload on all of them
// back to back, so that the figures a ratio compares were taken minutes
// apart at most, under the same load; then it stops them all. The order
// of the systems rotates from trial to trial, so that none always runs
// first on a quiet disk or last on a dirty one.
func (h *harness) runTrial(ctx context.Context, r *results, trial int, tmp string) error {
	order := slices.Clone(r.systems)
	k := trial % len(order)
	order = append(order[k:], order[:k]...)
	var up []started
	defer func() {
		for _, st := range up {
			if err := st.t.close(); err != nil {
				fmt.Fprintf(h.stderr, "trial %d: %s: close: %v\n", trial+1, st.s.name, err)
			}
			os.RemoveAll(st.dir)
		}
	}()
	for _, s := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		var todo []workload
		for _, w := range h.workloads {
			c := r.cell(s, w)
			switch {
			case !runsIssue21(s, w):
				c.skip, c.hidden = "not one of the systems issue 21 compares on this workload", true
			case s.unavailable != "":
				c.skip = s.unavailable
			case s.skip(w) != "":
				c.skip = s.skip(w)
			default:
				todo = append(todo, w)
			}
		}
		if len(todo) == 0 {
			continue
		}
		dir := filepath.Join(tmp, fmt.Sprintf("%s-t%d", strings.NewReplacer(" ", "-", "/", "-", "(", "", ")", "", ",", "", ":", "").Replace(s.name), trial))
		err := os.MkdirAll(dir, 0o755)
		var t target
		if err == nil {
			fmt.Fprintf(h.stderr, "trial %d: %s: starting\n", trial+1, s.name)
			t, err = s.start(ctx, dir)
		}
		if err != nil {
			for _, w := range todo {
				c := r.cell(s, w)
				c.errs = append(c.errs, "could not start: "+err.Error())
			}
			fmt.Fprintf(h.stderr, "trial %d: %s: could not start: %v\n", trial+1, s.name, err)
			os.RemoveAll(dir)
			continue
		}
		up = append(up, started{s, t, dir})
	}
	for _, w := range h.workloads {
		for _, st := range up {
			if err := ctx.Err(); err != nil {
				return err
			}
			if st.s.skip(w) != "" || !runsIssue21(st.s, w) {
				continue
			}
			h.measure(ctx, r, st, w, trial)
		}
	}
	if h.appenders && (h.peers["wal"]) {
		if err := h.runAppenders(ctx, r, trial, tmp); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.appendersErr = err.Error()
			fmt.Fprintf(h.stderr, "trial %d: appenders: %v\n", trial+1, err)
		}
	}
	// What each server process cost over the trial, read before it stops.
	for _, st := range up {
		u, ok := st.t.(usageReporter)
		if !ok {
			continue
		}
		if us, err := u.serverUsage(); err != nil {
			fmt.Fprintf(h.stderr, "trial %d: %s: resources: %v\n", trial+1, st.s.name, err)
		} else {
			r.usage[st.s.name] = append(r.usage[st.s.name], us)
		}
	}
	return nil
}

// measure runs w once on a started system and files the outcome.
func (h *harness) measure(ctx context.Context, r *results, st started, w workload, trial int) {
	s := st.s
	c := r.cell(s, w)
	// Start from a clean page cache: what the systems before wrote is
	// on the disk, not waiting to be written back during this run.
	syscall.Sync()
	began := time.Now()
	m, err := st.t.run(ctx, w, h.p.forWorkload(w))
	setup := roundDuration(time.Since(began) - m.elapsed)
	if reason, ok := isNA(err); ok {
		c.skip = reason
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			c.errs = append(c.errs, err.Error())
			fmt.Fprintf(h.stderr, "trial %d: %s: %s: %v\n", trial+1, s.name, w.key(), err)
		}
		return
	}
	c.trials = append(c.trials, m)
	if w != wOpenSmall && w != wOpenLarge { // their records are partitions opened by other processes
		r.work[s.name] += m.records
	}
	if w == wLatency {
		fmt.Fprintf(h.stderr, "trial %d: %s: %s: p50 %v p99 %v p99.9 %v (%s records)\n", trial+1, s.name, w.key(),
			percentile(m.lat, 0.5), percentile(m.lat, 0.99), percentile(m.lat, 0.999), commas(int64(len(m.lat))))
	} else {
		fmt.Fprintf(h.stderr, "trial %d: %s: %s: %s records/s (%s records in %v; %v more untimed)\n", trial+1, s.name, w.key(),
			commas(int64(m.rate())), commas(int64(m.records)), roundDuration(m.elapsed), setup)
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// percentile of a sample (sorted or not; it sorts a copy).
func percentile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(lat))
	return s[int(q*float64(len(s)-1)+0.5)]
}

// values returns n distinct-looking, incompressible values of size bytes
// (the same every run).
func values(n, size int) [][]byte {
	rng := rand.New(rand.NewChaCha8([32]byte{'p', 'a', 's', 's', 'b', 'o', 'o', 'k'}))
	buf := make([]byte, n*size)
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	return vs
}

// A pool of values: workloads cycle through it rather than hold N.
const valuePool = 4096

// deadlineCount runs step(i, k) for i = 0, k, 2k, … < n, each doing up to
// k records, until n are done or maxTime has passed; it returns the
// records done and the time taken.
func deadlineCount(ctx context.Context, n, k int, maxTime time.Duration, step func(i, k int) error) (measure, error) {
	start := time.Now()
	done := 0
	for done < n {
		if err := ctx.Err(); err != nil {
			return measure{}, err
		}
		kk := min(k, n-done)
		if err := step(done, kk); err != nil {
			return measure{}, fmt.Errorf("after %s records: %w", commas(int64(done)), err)
		}
		done += kk
		if time.Since(start) > maxTime {
			break
		}
	}
	return measure{records: done, elapsed: time.Since(start)}, nil
}

// epoch is the origin of the timestamps the latency workload puts in its
// records: monotonic time in this process.
var epoch = time.Now()

// latencyProbe paces records at a fixed rate and records, for each, the
// time from just before it was sent to when a tailing consumer saw it.
// A record's value starts with its sequence number and its send time.
type latencyProbe struct {
	lat   []time.Duration
	seen  []atomic.Bool
	got   atomic.Int64
	dups  atomic.Int64
	all   chan struct{}
	once  sync.Once
	total int
}

func newLatencyProbe(p params) *latencyProbe {
	total := int(float64(p.rate) * p.latencyTime.Seconds())
	return &latencyProbe{lat: make([]time.Duration, total), seen: make([]atomic.Bool, total), all: make(chan struct{}), total: total}
}

// observe is called by the consumer for each value it receives.
func (lp *latencyProbe) observe(v []byte) {
	now := time.Since(epoch)
	if len(v) < 16 {
		return
	}
	seq := int(binary.BigEndian.Uint64(v))
	sent := time.Duration(binary.BigEndian.Uint64(v[8:]))
	if seq < 0 || seq >= lp.total {
		return
	}
	if lp.seen[seq].Swap(true) {
		lp.dups.Add(1)
		return
	}
	lp.lat[seq] = now - sent
	if int(lp.got.Add(1)) == lp.total {
		lp.once.Do(func() { close(lp.all) })
	}
}

// run offers p.rate records/s for p.latencyTime: every millisecond, send
// gets the records due by then (usually a few), each stamped just
// before the call. Then it waits for the consumer to see them all.
func (lp *latencyProbe) run(ctx context.Context, p params, send func(vals [][]byte) error) (measure, error) {
	const tick = time.Millisecond
	perTick := float64(p.rate) * tick.Seconds()
	pool := values(valuePool, p.size)
	vals := make([][]byte, 0, 64)
	start := time.Now()
	sent := 0
	for sent < lp.total {
		if err := ctx.Err(); err != nil {
			return measure{}, err
		}
		due := min(int(perTick*float64(time.Since(start)/tick+1)), lp.total)
		vals = vals[:0]
		for ; sent < due; sent++ {
			v := slices.Clone(pool[sent%valuePool])
			binary.BigEndian.PutUint64(v, uint64(sent))
			binary.BigEndian.PutUint64(v[8:], uint64(time.Since(epoch)))
			vals = append(vals, v)
		}
		if len(vals) > 0 {
			if err := send(vals); err != nil {
				return measure{}, fmt.Errorf("send: %w", err)
			}
		}
		time.Sleep(time.Until(start.Add((time.Since(start)/tick + 1) * tick)))
	}
	offered := time.Since(start)
	select {
	case <-lp.all:
	case <-time.After(10*time.Second + p.latencyTime):
		return measure{}, fmt.Errorf("the consumer saw %s of %s records", commas(lp.got.Load()), commas(int64(lp.total)))
	case <-ctx.Done():
		return measure{}, ctx.Err()
	}
	if offered > p.latencyTime*3/2 {
		return measure{}, fmt.Errorf("fell behind: offering %s records took %v, not %v", commas(int64(lp.total)), offered, p.latencyTime)
	}
	return measure{records: lp.total, elapsed: offered, lat: lp.lat}, nil
}

// runsIssue21 reports whether s runs w: every system runs the workloads
// of issue 9, while issue 21's run only on passbook and the peers its
// targets name (kfake, in memory for produce, with SyncWrites for the
// 1 KiB fsync workload).
func runsIssue21(s *system, w workload) bool {
	switch w {
	case wKiBDurable:
		return s.name == pbEmbedded || s.name == pbKafka || s.name == kfakeDurableName
	case wDefaults, wAcks1, wAcksMany:
		return s.name == pbKafka || s.name == kfakeMemoryName
	case wOpenSmall, wOpenLarge:
		return s.name == pbKafka
	}
	return true
}

// onlyFor is a skip function for a configuration that runs only w.
func onlyFor(w workload, why string) func(workload) string {
	return func(x workload) string {
		if x == w {
			return ""
		}
		return why
	}
}
