package kafka

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/leakcheck"
	"github.com/twmb/franz-go/pkg/kgo"
)

// childEnv makes the test binary, re-executed, serve the data directory
// it names instead of running tests (see TestMain).
const childEnv = "PASSBOOK_KAFKA_CHILD_DIR"

// childAdvertiseEnv, if set, is the address the child server tells
// clients to connect to (a proxy in front of it).
const childAdvertiseEnv = "PASSBOOK_KAFKA_CHILD_ADVERTISE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		serveChild(dir)
		return
	}
	if cfg := os.Getenv(fetchClientEnv); cfg != "" {
		fetchClient(cfg) // BenchmarkFetch_ServerCPU's client
		return
	}
	if cfg := os.Getenv(memberEnv); cfg != "" {
		memberChild(cfg)
		return
	}
	// Before any client: sarama reads it from its goroutines.
	sarama.Logger = log.New(io.Discard, "", 0)
	// And after the last test, no goroutine the tests started still runs.
	os.Exit(leakcheck.Run(m))
}

// serveChild serves dir on a free loopback port, prints "ADDR host:port",
// and runs until it is killed.
func serveChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	db, err := passbook.Open(dir, nil)
	if err != nil {
		fail(err)
	}
	if _, err := db.Topic("crash"); err != nil {
		if _, err := db.CreateTopic("crash", passbook.TopicConfig{Partitions: 2}); err != nil {
			fail(err)
		}
	}
	srv, err := NewServer(db, &Options{Advertise: os.Getenv(childAdvertiseEnv)})
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	fail(srv.Serve(context.Background(), ln))
}

// startChild starts a server process over dir and returns it and its
// address. env adds to its environment.
func startChild(t *testing.T, dir string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("child did not start: %q %v", line, err)
	}
	return cmd, addr
}

func TestKill9_AcknowledgedRecordsSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 20 server processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PASSBOOK_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with PASSBOOK_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()

	type pos struct {
		partition int32
		offset    int64
	}
	var (
		mu    sync.Mutex
		acked = map[pos]string{}
	)
	const rounds = 20
	for round := range rounds {
		cmd, addr := startChild(t, dir)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.MaxBufferedRecords(2000), kgo.ProducerLinger(time.Millisecond), kgo.RecordRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				v := fmt.Sprintf("round-%02d-record-%07d", round, i)
				cl.Produce(ctx, &kgo.Record{Topic: "crash", Key: []byte(strconv.Itoa(i % 16)), Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						return
					}
					mu.Lock()
					acked[pos{r.Partition, r.Offset}] = v
					mu.Unlock()
					once.Do(func() { close(first) })
				})
			}
		})
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: nothing acknowledged in 10s", round)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		cancel()
		wg.Wait()
		cl.Close()
	}

	// Every acknowledged record is where its acknowledgement said, and
	// each partition's offsets run 0, 1, 2, … with no gap.
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err := db.Topic("crash")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[pos]string{}
	total := 0
	for p := range int32(topic.Partitions()) {
		next := int64(0)
		for rec, err := range topic.Records(p, 0) {
			if err != nil {
				t.Fatalf("partition %d: %v", p, err)
			}
			if rec.Offset != next {
				t.Fatalf("partition %d: offset %d after %d: not dense", p, rec.Offset, next-1)
			}
			next++
			stored[pos{p, rec.Offset}] = string(rec.Value)
		}
		total += int(next)
	}
	missing := 0
	for at, v := range acked {
		if got, ok := stored[at]; got != v {
			if missing++; missing <= 5 {
				t.Errorf("acknowledged %q at partition %d offset %d; stored: %q (present %v)", v, at.partition, at.offset, got, ok)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged records missing or moved", missing, len(acked))
	}
	t.Logf("%d rounds: %d records acknowledged, %d stored, all acknowledged ones in place", rounds, len(acked), total)
}
