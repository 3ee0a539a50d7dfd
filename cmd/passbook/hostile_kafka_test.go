package main

// Hostile Kafka clients against `passbook serve` run as a real process
// on 127.0.0.1: each case opens many raw connections that misbehave in
// one way, for a few seconds, and checks that the server's memory (peak
// RSS, VmHWM) and descriptors stay within a budget, that the limit's
// metric counts what it did, and that a normal franz-go client keeps
// producing and fetching meanwhile.
//
// The server is built without -race, whatever the tests run with: the
// race detector multiplies memory, and the budgets are the ones a user
// gets. Set PASSBOOK_HOSTILE_LOG=1 to see the server's log.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	plainBinOnce sync.Once
	plainBinPath string
	plainBinErr  error
)

// plainBinary builds ./cmd/passbook without -race, once per test run.
func plainBinary(t testing.TB) string {
	t.Helper()
	plainBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "passbook-plain-")
		if err != nil {
			plainBinErr = err
			return
		}
		plainBinPath = filepath.Join(dir, "passbook")
		out, err := exec.Command("go", "build", "-o", plainBinPath, ".").CombinedOutput()
		if err != nil {
			plainBinErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if plainBinErr != nil {
		t.Fatal(plainBinErr)
	}
	return plainBinPath
}

// servedProc is a `passbook serve` process.
type servedProc struct {
	pid       int
	kafkaAddr string
	httpAddr  string
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n different loopback addresses whose ports were free
// a moment ago: all are held until all are picked, so that no two are
// the same.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// startServe starts `passbook serve` on a new data directory with extra
// flags, and stops it (SIGTERM, then SIGKILL) at the end of the test.
func startServe(t *testing.T, extra ...string) *servedProc {
	t.Helper()
	p, _, _ := launchServe(t, t.TempDir(), 20*time.Second, 15*time.Second, extra...)
	return p
}

// launchServe starts `passbook serve` (the binary built without -race) on
// the data directory dir with extra flags, on free loopback ports, and
// returns once both listeners accept (failing the test if it exits first
// or takes longer than listen), with a function that stops it — SIGTERM,
// then SIGKILL after grace — which also runs at the end of the test, and
// how long it took to listen (Open of every partition comes first). Its
// stderr goes to the test's when PASSBOOK_HOSTILE_LOG is set, and is shown
// if it exits early.
func launchServe(t *testing.T, dir string, listen, grace time.Duration, extra ...string) (*servedProc, func(), time.Duration) {
	t.Helper()
	ports := freePorts(t, 2)
	p := &servedProc{kafkaAddr: ports[0], httpAddr: ports[1]}
	args := append([]string{"--data", dir, "serve", "--kafka", p.kafkaAddr, "--http", p.httpAddr}, extra...)
	cmd := exec.Command(plainBinary(t), args...)
	cmd.Env = binaryEnv()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if os.Getenv("PASSBOOK_HOSTILE_LOG") != "" {
		cmd.Stderr = io.MultiWriter(stderr, os.Stderr)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid = cmd.Process.Pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(grace):
				cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(listen)
	for {
		if c, err := net.DialTimeout("tcp", p.kafkaAddr, time.Second); err == nil {
			c.Close()
			if c, err := net.DialTimeout("tcp", p.httpAddr, time.Second); err == nil {
				c.Close()
				return p, stop, time.Since(began)
			}
		}
		select {
		case <-exited:
			t.Fatalf("passbook serve exited: %v\n%s", cmd.ProcessState, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("passbook serve did not listen within %s", listen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status reads a field of /proc/PID/status in kB, as bytes.
func (p *servedProc) status(t testing.TB, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.pid)
	return 0
}

// peakRSS is the server's high-water mark of resident memory.
func (p *servedProc) peakRSS(t testing.TB) int64 { return p.status(t, "VmHWM") }

// fds counts the server's open file descriptors.
func (p *servedProc) fds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// metric reads one sample from /metrics, such as
// `passbook_kafka_connections_closed_total{reason="idle"}`.
func (p *servedProc) metric(t testing.TB, name string) float64 {
	t.Helper()
	return scrapeMetric(t, http.DefaultClient, "http://"+p.httpAddr, name)
}

// scrapeMetric reads one sample from base's /metrics with hc.
func scrapeMetric(t testing.TB, hc *http.Client, base, name string) float64 {
	t.Helper()
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics (status %s)", name, resp.Status)
	return 0
}

// waitMetric waits up to 15 s for a metric to reach at least want.
func (p *servedProc) waitMetric(t testing.TB, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := p.metric(t, name)
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after 15 s, want at least %v", name, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func closedMetric(reason string) string {
	return `passbook_kafka_connections_closed_total{reason="` + reason + `"}`
}

// normalClient is a well-behaved franz-go producer and consumer.
type normalClient struct {
	addr, topic string
	produced    int
	cl          *kgo.Client
}

func newNormalClient(t *testing.T, addr, topic string) *normalClient {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequestRetries(20), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &normalClient{addr: addr, topic: topic, cl: cl}
}

// round produces ten records and fetches them back with a new consumer.
func (n *normalClient) round(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "normal %d", n.produced+i)})
	}
	if err := n.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	first := recs[0].Offset
	n.produced += len(recs)
	cons, err := kgo.NewClient(kgo.SeedBrokers(n.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{n.topic: {0: kgo.NewOffset().At(first)}}))
	if err != nil {
		return err
	}
	defer cons.Close()
	got := 0
	for got < len(recs) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("fetch: %d of %d records: %w", got, len(recs), err)
		}
		for _, e := range fs.Errors() {
			return fmt.Errorf("fetch: %w", e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= first && r.Offset < first+int64(len(recs)) {
				got++
			}
		})
	}
	return nil
}

// keepsWorking runs rounds of the normal client until stop is closed,
// and returns how many succeeded, or the first error.
func (n *normalClient) keepsWorking(stop <-chan struct{}) (rounds int, err error) {
	for {
		if err := n.round(context.Background()); err != nil {
			return rounds, err
		}
		rounds++
		select {
		case <-stop:
			return rounds, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// during runs the normal client while attack holds the server, for hold,
// and fails the test unless every round of it succeeded.
func (n *normalClient) during(t *testing.T, hold time.Duration) {
	t.Helper()
	stop := make(chan struct{})
	type result struct {
		rounds int
		err    error
	}
	res := make(chan result, 1)
	go func() {
		r, err := n.keepsWorking(stop)
		res <- result{r, err}
	}()
	time.Sleep(hold)
	close(stop)
	r := <-res
	if r.err != nil {
		t.Fatalf("the normal client failed after %d rounds: %v", r.rounds, r.err)
	}
	t.Logf("the normal client produced and fetched 10 records %d times meanwhile", r.rounds)
}

// dialMany opens n loopback connections to addr, closed at the end of
// the test.
func dialMany(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	return conns
}

// closedByPeer reports whether the server closed c within wait.
func closedByPeer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c)
	return err == nil || errors.Is(err, syscall.ECONNRESET)
}

const mib = 1 << 20

func budget(t *testing.T, what string, got, limit int64) {
	t.Helper()
	t.Logf("%s: %s MiB (budget %s MiB)", what, thousands.Int(got/mib), thousands.Int(limit/mib))
	if got > limit {
		t.Errorf("%s is %s MiB, over the budget of %s MiB", what, thousands.Int(got/mib), thousands.Int(limit/mib))
	}
}

func fdBudget(t *testing.T, what string, got, limit int) {
	t.Helper()
	t.Logf("%s: %s descriptors (budget %s)", what, thousands.Int(int64(got)), thousands.Int(int64(limit)))
	if got > limit {
		t.Errorf("%s: %s descriptors, over the budget of %s", what, thousands.Int(int64(got)), thousands.Int(int64(limit)))
	}
}

// TestHostile_Slowloris: connections that start a request and send it a
// byte a second are closed at the request timeout; a normal client is
// served meanwhile.
func TestHostile_Slowloris(t *testing.T) {
	p := startServe(t, "--request-timeout", "2s")
	n := newNormalClient(t, p.kafkaAddr, "slow")
	if err := n.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := p.fds(t)
	const count = 200
	conns := dialMany(t, p.kafkaAddr, count)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			// A 1,000-byte request, then a byte a second, for 5 s.
			if _, err := c.Write([]byte{0, 0, 3, 232}); err != nil {
				return
			}
			for range 5 {
				time.Sleep(time.Second)
				if _, err := c.Write([]byte{0}); err != nil {
					return
				}
			}
		})
	}
	n.during(t, 3*time.Second)
	p.waitMetric(t, closedMetric("slow_request"), count)
	wg.Wait()
	for i, c := range conns {
		if !closedByPeer(c, 5*time.Second) {
			t.Fatalf("slow connection %d still open", i)
		}
	}
	budget(t, "peak RSS", p.peakRSS(t), 300*mib)
	fdBudget(t, "descriptors after", p.fds(t), base+20)
}

// TestHostile_IdleFlood: idle connections up to max.connections do not
// lock a new client out — the longest-idle one makes room — and a
// connection idle for connections.max.idle.ms is closed.
func TestHostile_IdleFlood(t *testing.T) {
	const limit = 300
	p := startServe(t, "--max-connections", strconv.Itoa(limit), "--max-connections-per-ip", "10000", "--connections-max-idle", "4s")
	base := p.fds(t)
	conns := dialMany(t, p.kafkaAddr, limit)
	time.Sleep(1500 * time.Millisecond) // idle long enough to be closed for room
	n := newNormalClient(t, p.kafkaAddr, "idle")
	n.during(t, 2*time.Second)
	if got := p.metric(t, closedMetric("evicted")); got < 1 {
		t.Errorf("evicted = %v, want at least 1", got)
	}
	fdBudget(t, "descriptors at the limit", p.fds(t), base+limit+30)
	// Every flood connection is closed once idle for 4 s.
	p.waitMetric(t, closedMetric("idle"), float64(limit)-p.metric(t, closedMetric("evicted")))
	for i, c := range conns {
		if !closedByPeer(c, 10*time.Second) {
			t.Fatalf("idle connection %d still open", i)
		}
	}
	// The normal client, active, is still served.
	if err := n.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	budget(t, "peak RSS", p.peakRSS(t), 300*mib)
}

// TestHostile_PerIPLimit: connections from one address past
// max.connections.per.ip are refused while none of them is idle.
func TestHostile_PerIPLimit(t *testing.T) {
	const limit = 50
	p := startServe(t, "--max-connections-per-ip", strconv.Itoa(limit))
	conns := dialMany(t, p.kafkaAddr, limit)
	for _, c := range conns {
		c.Write([]byte{0, 0, 3, 232}) // a request of 1,000 bytes started: not idle
	}
	// Every one of them accepted and busy (its 1,000 bytes charged to the
	// request budget) before the extra dial, whatever the machine's load:
	// otherwise the extra could be accepted first, or evict one still idle.
	p.waitMetric(t, "passbook_kafka_request_bytes_in_flight", limit*1000)
	extra := dialMany(t, p.kafkaAddr, 1)[0]
	if !closedByPeer(extra, 5*time.Second) {
		t.Fatal("a connection past max.connections.per.ip was kept open")
	}
	if got := p.metric(t, closedMetric("per_ip_limit")); got < 1 {
		t.Errorf("per_ip_limit = %v, want at least 1", got)
	}
}

// TestHostile_OversizedFrames: 2,000 connections each declare a 100 MiB
// request and send 10 bytes of it; memory grows with the bytes that
// arrive, not with what is declared. A frame declared over
// socket.request.max.bytes closes its connection.
func TestHostile_OversizedFrames(t *testing.T) {
	p := startServe(t, "--max-connections-per-ip", "5000", "--request-timeout", "30s")
	n := newNormalClient(t, p.kafkaAddr, "frames")
	if err := n.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := p.fds(t)
	const count = 2000
	conns := dialMany(t, p.kafkaAddr, count)
	for i, c := range conns {
		b := binary.BigEndian.AppendUint32(nil, 100<<20)
		if _, err := c.Write(append(b, make([]byte, 10)...)); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	n.during(t, 3*time.Second)
	budget(t, "peak RSS", p.peakRSS(t), 300*mib)
	fdBudget(t, "descriptors", p.fds(t), base+count+20)
	if got := p.metric(t, "passbook_kafka_request_bytes_in_flight"); got > 64*mib {
		t.Errorf("request bytes in flight = %v, want the bytes received (a few KiB each)", got)
	}

	big := dialMany(t, p.kafkaAddr, 1)[0]
	big.Write(binary.BigEndian.AppendUint32(nil, 100<<20+1))
	if !closedByPeer(big, 5*time.Second) {
		t.Fatal("a frame over socket.request.max.bytes did not close its connection")
	}
	p.waitMetric(t, closedMetric("too_large"), 1)
}

// TestHostile_OversizedFetches: eight connections fetch with max_bytes
// and partition max_bytes of 2 GiB, again and again, from a topic with
// 64 MiB of records: each response is cut to fetch.max.bytes (2 MiB
// here, and a batch may pass it: the first is always whole), memory
// stays within a budget, and a normal consumer still gets its records.
func TestHostile_OversizedFetches(t *testing.T) {
	p := startServe(t, "--fetch-max-bytes", strconv.Itoa(2*mib))
	n := newNormalClient(t, p.kafkaAddr, "big")
	// 64 MiB of records, in 64 KiB values.
	value := make([]byte, 64<<10)
	for range 8 {
		var recs []*kgo.Record
		for range 128 {
			recs = append(recs, &kgo.Record{Value: value})
		}
		if err := n.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n.produced = 8 * 128
	before := p.status(t, "VmRSS")
	t.Logf("RSS with the topic written: %s MiB", thousands.Int(before/mib))

	const count = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	largest, responses := 0, 0
	for _, c := range dialMany(t, p.kafkaAddr, count) {
		wg.Go(func() {
			f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile"))
			req := kmsg.NewPtrFetchRequest()
			req.Version = 11
			req.ReplicaID = -1
			req.MaxWaitMillis = 100
			req.MaxBytes = math.MaxInt32
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "big"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = math.MaxInt32
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			for corr := int32(1); ; corr++ {
				select {
				case <-stop:
					return
				default:
				}
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
					t.Errorf("hostile fetch: %v", err)
					return
				}
				var size [4]byte
				if _, err := io.ReadFull(c, size[:]); err != nil {
					t.Errorf("hostile fetch: %v", err)
					return
				}
				k, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
				if err != nil {
					t.Errorf("hostile fetch: %v", err)
					return
				}
				mu.Lock()
				largest, responses = max(largest, int(k)), responses+1
				mu.Unlock()
			}
		})
	}
	n.during(t, 4*time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%s hostile fetch responses, the largest %s bytes", thousands.Int(int64(responses)), thousands.Int(int64(largest)))
	if responses == 0 {
		t.Fatal("no hostile fetch was answered")
	}
	if largest > 3*mib {
		t.Errorf("a fetch response of %s bytes, over fetch.max.bytes (2 MiB) and a batch (1 MiB)", thousands.Int(int64(largest)))
	}
	if got := p.metric(t, "passbook_kafka_fetch_bytes_capped_total"); got < count {
		t.Errorf("fetch bytes capped = %v, want at least %d", got, count)
	}
	budget(t, "peak RSS", p.peakRSS(t), 400*mib)
}

// TestServe_LimitFlags: a limit that cannot work is refused before the
// server starts, with exit 2 and what is wrong.
func TestServe_LimitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queued-max-request-bytes", "1000"}, "queued.max.request.bytes 1,000 is under socket.request.max.bytes 104,857,600"},
		{[]string{"--fetch-max-bytes", "10"}, "fetch.max.bytes 10 is under 1,024"},
		{[]string{"--max-connections-per-ip", "-1"}, "max.connections.per.ip -1 is negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(plainBinary(t), append([]string{"--data", t.TempDir(), "serve", "--kafka", "127.0.0.1:0"}, tc.args...)...)
			cmd.Env = binaryEnv()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q, want %q in it", out, tc.want)
			}
		})
	}
}
