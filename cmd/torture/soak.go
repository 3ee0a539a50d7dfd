package main

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// soak runs producers and consumers against a `passbook serve` child at
// half the rate it sustains, for a long time, and prints the server's
// memory, goroutines and open files and the latencies every interval:
// they must stay flat.
func soak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("torture -soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", 10*time.Minute, "how long to run at the soak rate")
	interval := fs.Duration("interval", 10*time.Second, "how often to sample")
	producers := fs.Int("producers", 8, "producing clients")
	consumers := fs.Int("consumers", 8, "members of the consumer group")
	rate := fs.Int("rate", 0, "records per second in all (0: half the rate measured in a 15 s probe)")
	size := fs.Int("size", 200, "bytes per record value")
	bin := fs.String("passbook", "", "the passbook binary (default: go build it)")
	data := fs.String("data", "", "data directory (default: a new temporary one)")
	retention := fs.Int64("retention-bytes", 256<<20, "retention.bytes of each of the topic's partitions (segments are an eighth of it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "passbook-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if *bin == "" {
		if *bin, err = buildPassbook(tmp); err != nil {
			return err
		}
	}
	if *data == "" {
		*data = tmp + "/data"
	}
	kaddr, err := freeAddr()
	if err != nil {
		return err
	}
	haddr, err := freeAddr()
	if err != nil {
		return err
	}
	srv := exec.Command(*bin, "serve", "--data", *data, "--kafka", kaddr, "--http", haddr)
	srv.Stderr = io.Discard
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	if err := waitListening(kaddr, haddr); err != nil {
		return err
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(kaddr))
	if err != nil {
		return err
	}
	defer adm.Close()
	// Retention keeps the disk bounded at any rate (and deletes segments
	// all along, which the open-files count then watches).
	configs := map[string]*string{"retention.bytes": kmsgStr(strconv.FormatInt(*retention, 10)), "segment.bytes": kmsgStr(strconv.FormatInt(*retention/8, 10))}
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, int32(*consumers), 1, configs, "soak"); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	// Values are random bytes, which no codec compresses: the disk sees
	// what the clients send.
	noise := make([]byte, 1<<20)
	crand.Read(noise)
	s := &soaker{addr: kaddr, noise: noise, size: *size}
	if *rate == 0 {
		fmt.Fprintf(stdout, "probing the sustained rate of %d producers (acks=all) for 15 s…\n", *producers)
		max := s.probe(ctx, *producers, 15*time.Second)
		*rate = max / 2
		fmt.Fprintf(stdout, "sustained %s records/s; soaking at half: %s records/s\n", thousands.Int(max), thousands.Int(*rate))
	}
	clients, stop := context.WithCancel(ctx) // they stop after the last sample
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration+*interval/2)
	defer cancel()
	var wg sync.WaitGroup
	for i := range *producers {
		wg.Go(func() { s.produce(clients, float64(*rate)/float64(*producers), i) })
	}
	for range *consumers {
		wg.Go(func() { s.consume(clients) })
	}
	fmt.Fprintf(stdout, "%8s %10s %8s %10s %6s %11s %11s %11s %11s %11s\n", "ELAPSED", "RECORDS/S", "RSS MIB", "GOROUTINES", "FDS", "PRODUCE P50", "PRODUCE P99", "PRODUCE MAX", "E2E P50", "E2E P99")
	began := time.Now()
	var rows []soakRow
	t := time.NewTicker(*interval)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			r := s.sample(srv.Process.Pid, haddr, time.Since(began), *interval)
			rows = append(rows, r)
			fmt.Fprintf(stdout, "%8s %10s %8.1f %10d %6d %11s %11s %11s %11s %11s\n", r.elapsed.Round(time.Second), thousands.Int(r.rate),
				r.rssMiB, r.goroutines, r.fds, ms(r.p50), ms(r.p99), ms(r.max), ms(r.e2e50), ms(r.e2e99))
		}
	}
	stop()
	wg.Wait()
	return verdict(stdout, rows)
}

func kmsgStr(s string) *string { return &s }

func waitListening(addrs ...string) error {
	for _, a := range addrs {
		ok := false
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if c, err := net.Dial("tcp", a); err == nil {
				c.Close()
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("passbook serve did not listen on %s", a)
		}
	}
	return nil
}

// soaker holds the clients' shared counters.
type soaker struct {
	addr     string
	noise    []byte // values are slices of it
	size     int
	acked    atomic.Int64
	consumed atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration // produce latencies since the last sample
	e2e      []time.Duration // end-to-end latencies since the last sample
	lastAck  int64
}

// probe produces as fast as acks=all allows and returns records/s.
func (s *soaker) probe(ctx context.Context, producers int, d time.Duration) int {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := s.acked.Load()
	var wg sync.WaitGroup
	for i := range producers {
		wg.Go(func() { s.produce(ctx, 0, i) })
	}
	wg.Wait()
	s.mu.Lock()
	s.lat, s.e2e = nil, nil
	s.mu.Unlock()
	s.lastAck = s.acked.Load()
	return int(float64(s.acked.Load()-start) / d.Seconds())
}

// produce sends records at perSecond (0: as fast as acknowledgements come).
func (s *soaker) produce(ctx context.Context, perSecond float64, id int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic("soak"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1000))
	if err != nil {
		s.failed.Add(1)
		return
	}
	defer cl.Close()
	const tick = 10 * time.Millisecond
	owed := 0.0
	next := time.Now()
	for n := 0; ctx.Err() == nil; n++ {
		if perSecond > 0 {
			owed += perSecond * tick.Seconds()
			next = next.Add(tick)
			time.Sleep(time.Until(next))
		} else {
			owed = 1
		}
		for ; owed >= 1; owed-- {
			sent := time.Now()
			at := (id*7919 + n*104729) % (len(s.noise) - s.size)
			rec := &kgo.Record{Key: []byte(strconv.Itoa(id*1_000_000 + n)), Value: s.noise[at : at+s.size], Timestamp: sent}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					if ctx.Err() == nil {
						s.failed.Add(1)
					}
					return
				}
				s.acked.Add(1)
				s.mu.Lock()
				s.lat = append(s.lat, time.Since(sent))
				s.mu.Unlock()
			})
		}
	}
}

// consume is one member of the soak group, committing as it goes.
func (s *soaker) consume(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ConsumerGroup("soak"), kgo.ConsumeTopics("soak"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		s.failed.Add(1)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1000)
		now := time.Now()
		recs := fs.Records()
		s.consumed.Add(int64(len(recs)))
		s.mu.Lock()
		for _, r := range recs {
			s.e2e = append(s.e2e, now.Sub(r.Timestamp))
		}
		s.mu.Unlock()
	}
}

// soakRow is one sample.
type soakRow struct {
	elapsed                 time.Duration
	rate                    int64
	rssMiB                  float64
	goroutines, fds         int
	p50, p99, max           time.Duration
	e2e50, e2e99            time.Duration
	acked, consumed, failed int64
}

func (s *soaker) sample(pid int, haddr string, elapsed, interval time.Duration) soakRow {
	s.mu.Lock()
	lat, e2e := s.lat, s.e2e
	s.lat, s.e2e = nil, nil
	s.mu.Unlock()
	acked := s.acked.Load()
	r := soakRow{elapsed: elapsed, rate: int64(float64(acked-s.lastAck) / interval.Seconds()), acked: acked, consumed: s.consumed.Load(), failed: s.failed.Load()}
	s.lastAck = acked
	r.p50, r.p99, r.max = pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1)
	r.e2e50, r.e2e99 = pct(e2e, 0.5), pct(e2e, 0.99)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				r.rssMiB = float64(kb) / 1024
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		r.fds = len(fds)
	}
	r.goroutines = scrapeGauge("http://"+haddr+"/metrics", "go_goroutines")
	return r
}

func scrapeGauge(url, name string) int {
	res, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[int(math.Min(float64(len(d)-1), p*float64(len(d))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// verdict compares the end of the run with its start (after the first
// minute, once caches and buffers are warm): memory, goroutines and open
// files must not grow. It compares the medians of the first and the last
// third of the samples after the warm-up, not two single samples, so that
// a passing bump does not count as growth: every 5 minutes each franz-go
// client refreshes its metadata on a new connection, which the server
// holds for about a minute (two goroutines and a file each).
func verdict(w io.Writer, rows []soakRow) error {
	if len(rows) < 6 {
		return fmt.Errorf("too few samples (%d)", len(rows))
	}
	after := rows[min(len(rows)/4, 6):]
	third := max(len(after)/3, 1)
	start, end := medians(after[:third]), medians(after[len(after)-third:])
	last := rows[len(rows)-1]
	maxRSS, maxG, maxFD := 0.0, 0, 0
	for _, r := range after {
		maxRSS, maxG, maxFD = math.Max(maxRSS, r.rssMiB), max(maxG, r.goroutines), max(maxFD, r.fds)
	}
	fmt.Fprintf(w, "acknowledged %s, consumed %s, failed %s\n", thousands.Int(last.acked), thousands.Int(last.consumed), thousands.Int(last.failed))
	fmt.Fprintf(w, "medians, first third → last third after the warm-up (%s): RSS %.1f → %.1f MiB (max %.1f), goroutines %d → %d (max %d), open files %d → %d (max %d)\n",
		after[0].elapsed.Round(time.Second), start.rssMiB, end.rssMiB, maxRSS, start.goroutines, end.goroutines, maxG, start.fds, end.fds, maxFD)
	var problems []string
	if end.rssMiB > start.rssMiB*1.25+8 {
		problems = append(problems, "memory grew")
	}
	if end.goroutines > start.goroutines+10 {
		problems = append(problems, "goroutines grew")
	}
	if end.fds > start.fds+10 {
		problems = append(problems, "open files grew")
	}
	if last.failed > 0 {
		problems = append(problems, "produces failed")
	}
	if len(problems) > 0 {
		return fmt.Errorf("not flat: %s", strings.Join(problems, ", "))
	}
	fmt.Fprintln(w, "flat: memory, goroutines and open files did not grow")
	return nil
}

// medians returns a row holding the median of each gauge of rows.
func medians(rows []soakRow) soakRow {
	rss := make([]float64, len(rows))
	g, fd := make([]int, len(rows)), make([]int, len(rows))
	for i, r := range rows {
		rss[i], g[i], fd[i] = r.rssMiB, r.goroutines, r.fds
	}
	slices.Sort(rss)
	slices.Sort(g)
	slices.Sort(fd)
	m := len(rows) / 2
	return soakRow{rssMiB: rss[m], goroutines: g[m], fds: fd[m]}
}
