package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// passbookKafka is `passbook serve` in its own process, driven by the
// franz-go client over the Kafka protocol.
func passbookKafka(ctx context.Context, bin string, buildErr error) *system {
	s := &system{
		key:  "passbook",
		name: "passbook (Kafka protocol)",
		durability: func(w workload) string {
			switch w {
			case wDurable, wKiBDurable, wAcks1, wAcksMany:
				return "acks=all: fsync'd before the acknowledgement (group commit)"
			case wDefaults:
				return "franz-go's defaults: idempotent, acks=all (fsync'd before the acknowledgement), 10 ms linger"
			case wOpenSmall, wOpenLarge:
				return "exec → a Metadata answer listing every partition, after a clean stop"
			case wReplay:
				return "franz-go consumer, Fetch from offset 0"
			case wLatency:
				return "acks=1 (in the OS); franz-go consumer long-polling Fetch"
			case wCommit:
				return "commit = OffsetCommit of each record, one round trip (the server keeps it in its SQLite offset store)"
			}
			return "acks=1: in the OS when acknowledged (survives a server kill)"
		},
		skip: func(workload) string { return "" },
		start: func(ctx context.Context, dir string) (target, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			began := time.Now()
			p, err := startProc("passbook serve", filepath.Join(dir, "serve.log"), nil,
				bin, "serve", "--data", filepath.Join(dir, "data"), "--kafka", addr)
			if err != nil {
				return nil, err
			}
			if err := p.waitReady(ctx, 30*time.Second, dialable(addr)); err != nil {
				p.stop(5 * time.Second)
				return nil, err
			}
			t := &kafkaTarget{addr: addr, stopServer: func() error { p.stop(30 * time.Second); return nil }, filled: map[string]int{}, bin: bin, tmp: dir}
			return t, t.started(ctx, p, began)
		},
	}
	if buildErr != nil {
		s.unavailable = "no passbook binary: " + buildErr.Error()
	}
	return s
}

// buildPassbook builds cmd/passbook from the module this harness uses
// (the repository, through the replace directive) into dir.
func buildPassbook(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/passbook-log/passbook").Output()
	if err != nil {
		return "", fmt.Errorf("find the passbook module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "passbook")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/passbook")
	build.Dir = root
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/passbook in %s: %v: %s", root, err, msg)
	}
	return bin, nil
}

// kfakeSystem is franz-go's fake Kafka cluster, in a process of its own
// (this program's _kfake command, so that its heap is not the harness's):
// in memory, or (durable) writing to a directory with an fsync per batch.
func kfakeSystem(durable bool) *system {
	if durable {
		return &system{
			key:  "kfake",
			name: kfakeDurableName,
			durability: func(workload) string {
				return "acks=all, DataDir with SyncWrites: fsync per produced batch"
			},
			skip: func(w workload) string {
				if w == wDurable || w == wKiBDurable {
					return ""
				}
				return "kfake's fsync configuration runs only the fsync workloads; see the in-memory row"
			},
			variant: true,
			start:   func(ctx context.Context, dir string) (target, error) { return startKfake(ctx, dir, true) },
		}
	}
	return &system{
		key:  "kfake",
		name: kfakeMemoryName,
		durability: func(w workload) string {
			switch w {
			case wReplay:
				return "franz-go consumer, Fetch from offset 0"
			case wCommit:
				return "OffsetCommit per record (kept in memory)"
			case wAcks1, wAcksMany:
				return "acks=all, in memory only (lost with the process)"
			case wDefaults:
				return "franz-go's defaults (idempotent, acks=all, 10 ms linger), in memory only"
			case wLatency:
				return "acks=1, in memory; franz-go consumer long-polling Fetch"
			}
			return "acks=1, in memory only (lost with the process)"
		},
		skip: func(w workload) string {
			if w == wDurable {
				return "in memory: nothing to fsync (see the DataDir, SyncWrites row)"
			}
			return ""
		},
		start: func(ctx context.Context, dir string) (target, error) { return startKfake(ctx, dir, false) },
	}
}

const (
	kfakeMemoryName  = "franz-go kfake (in memory)"
	kfakeDurableName = "franz-go kfake (DataDir, SyncWrites)"
)

// kfakeCommand is the child process that serves a kfake cluster.
const kfakeCommand = "_kfake"

func startKfake(ctx context.Context, dir string, durable bool) (target, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "addr")
	began := time.Now()
	p, err := startProc("kfake", filepath.Join(dir, "kfake.log"), nil, exe, kfakeCommand, "-addr-file", addrFile,
		"-data", filepath.Join(dir, "kfake"), fmt.Sprintf("-durable=%t", durable))
	if err != nil {
		return nil, err
	}
	var addr string
	err = p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error {
		b, err := os.ReadFile(addrFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return errors.New("no address yet")
		}
		addr = strings.TrimSpace(string(b))
		return dialable(addr)(ctx)
	})
	if err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	t := &kafkaTarget{addr: addr, stopServer: func() error { p.stop(10 * time.Second); return nil }, filled: map[string]int{}}
	return t, t.started(ctx, p, began)
}

// runKfake is the _kfake child: serve a cluster until SIGTERM.
func runKfake(args []string) error {
	fs := flag.NewFlagSet(kfakeCommand, flag.ContinueOnError)
	addrFile := fs.String("addr-file", "", "write the listen address here")
	data := fs.String("data", "", "data directory (with -durable)")
	durable := fs.Bool("durable", false, "DataDir and SyncWrites")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if *durable {
		opts = append(opts, kfake.DataDir(*data), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := os.WriteFile(*addrFile, []byte(c.ListenAddrs()[0]+"\n"), 0o644); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

// kafkaTarget drives a Kafka-protocol broker with franz-go.
type kafkaTarget struct {
	addr       string
	stopServer func() error
	filled     map[string]int
	server     *serverProc // nil for a server the harness did not start
	bin        string      // passbook serve's binary (the open workloads start their own), or ""
	tmp        string      // passbook serve's trial directory, or ""
}

func (t *kafkaTarget) close() error { return t.stopServer() }

func (t *kafkaTarget) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(t.addr),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1 << 20),
		// No lingering: a record goes out at once, or with the records
		// produced while the previous request was in flight.
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(16 << 20),
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
	}
	return kgo.NewClient(append(base, opts...)...)
}

// createTopic creates a one-partition topic.
func (t *kafkaTarget) createTopic(ctx context.Context, cl *kgo.Client, name string) error {
	return createTopicN(ctx, cl, name, 1)
}

// createTopicN creates a topic of n partitions.
func createTopicN(ctx context.Context, cl *kgo.Client, name string, n int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(n), 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 120_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	return nil
}

func acks(w workload) kgo.Acks {
	if w == wDurable || w == wKiBDurable {
		return kgo.AllISRAcks()
	}
	return kgo.LeaderAck()
}

// produceWindow produces vals and waits for every acknowledgement.
func produceWindow(ctx context.Context, cl *kgo.Client, topic string, vals [][]byte) error {
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	wg.Add(len(vals))
	for _, v := range vals {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				first.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}

func (t *kafkaTarget) appendRun(ctx context.Context, w workload, p params, k int) (measure, error) {
	cl, err := t.client(kgo.RequiredAcks(acks(w)))
	if err != nil {
		return measure{}, err
	}
	defer cl.Close()
	topic := w.key()
	if err := t.createTopic(ctx, cl, topic); err != nil {
		return measure{}, err
	}
	pool := values(valuePool, p.size)
	// Warm up: metadata and the connection.
	if err := produceWindow(ctx, cl, topic, pool[:1]); err != nil {
		return measure{}, err
	}
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		if k == 1 {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: pool[j]}).FirstErr()
		}
		return produceWindow(ctx, cl, topic, pool[j:j+k])
	})
}

// fill produces n records to topic, untimed, unless it holds them.
func (t *kafkaTarget) fill(ctx context.Context, topic string, n, size int) error {
	if t.filled[topic] >= n {
		return nil
	}
	cl, err := t.client(kgo.RequiredAcks(kgo.LeaderAck()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := t.createTopic(ctx, cl, topic); err != nil {
		return err
	}
	pool := values(valuePool, size)
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		if err := produceWindow(ctx, cl, topic, pool[:k]); err != nil {
			return err
		}
	}
	t.filled[topic] = n
	return nil
}

func (t *kafkaTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, w, p, 1)
	case wBatch, wDurable, wKiB, wKiBDurable:
		return t.appendRun(ctx, w, p, p.batch)
	case wReplay:
		if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		cl, err := t.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"replay": {0: kgo.NewOffset().At(0)}}))
		if err != nil {
			return measure{}, err
		}
		defer cl.Close()
		// The server's CPU around the replay alone (the fill is done).
		cpu0, cpuErr := t.serverCPU()
		m, err := pollCount(ctx, cl, p.n, p.maxTime)
		if cpu1, err1 := t.serverCPU(); err == nil && cpuErr == nil && err1 == nil {
			m.serverCPU, m.bytes = cpu1-cpu0, int64(m.records)*int64(p.size)
		} else if err == nil {
			fmt.Fprintf(os.Stderr, "replay: the server's CPU: %v\n", errors.Join(cpuErr, err1))
		}
		return m, err
	case wDefaults:
		return t.defaultsRun(ctx, p)
	case wAcks1:
		return t.acksAllRun(ctx, p, 1)
	case wAcksMany:
		return t.acksAllRun(ctx, p, p.partitions)
	case wOpenSmall, wOpenLarge:
		return t.openRun(ctx, p.openPartitions(w))
	case wCommit:
		return t.commitRun(ctx, p)
	case wLatency:
		return t.latency(ctx, p)
	}
	return measure{}, na("not implemented")
}

// pollCount consumes until n records or maxTime.
func pollCount(ctx context.Context, cl *kgo.Client, n int, maxTime time.Duration) (measure, error) {
	start := time.Now()
	got := 0
	pctx, cancel := context.WithTimeout(ctx, maxTime+30*time.Second)
	defer cancel()
	for got < n && time.Since(start) < maxTime {
		fs := cl.PollFetches(pctx)
		if err := pctx.Err(); err != nil {
			return measure{}, fmt.Errorf("consumed %d of %d: %w", got, n, err)
		}
		if err := fs.Err0(); err != nil {
			return measure{}, err
		}
		got += fs.NumRecords()
	}
	return measure{records: got, elapsed: time.Since(start)}, nil
}

// commitRun consumes the replay topic and commits each record's next
// offset with a synchronous OffsetCommit for a group with no members
// (generation −1), as a consumer committing after every record does.
func (t *kafkaTarget) commitRun(ctx context.Context, p params) (measure, error) {
	if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
		return measure{}, err
	}
	// OffsetCommit v10 names topics by ID; the harness names them by
	// name, so it speaks the protocol of Kafka 3.9 (OffsetCommit v9).
	cl, err := t.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"replay": {0: kgo.NewOffset().At(0)}}),
		kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		return measure{}, err
	}
	defer cl.Close()
	if why := t.lacksKey(ctx, cl, int16(kmsg.OffsetCommit)); why != "" {
		return measure{}, na("%s", why)
	}
	commit := func(off int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "bench", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "replay"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, off, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return err
				}
			}
		}
		return nil
	}
	start := time.Now()
	got := 0
	for got < p.n && time.Since(start) < p.maxTime {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return measure{}, err
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if err := commit(r.Offset + 1); err != nil {
				return measure{}, fmt.Errorf("commit offset %d: %w", r.Offset+1, err)
			}
			got++
			if got%100 == 0 && time.Since(start) > p.maxTime {
				break
			}
		}
	}
	return measure{records: got, elapsed: time.Since(start)}, nil
}

// lacksKey says why the broker cannot serve an API key, or "".
func (t *kafkaTarget) lacksKey(ctx context.Context, cl *kgo.Client, key int16) string {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return ""
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return ""
		}
	}
	name := kmsg.NameForKey(key)
	return fmt.Sprintf("the broker does not serve %s (API key %d): no Kafka-protocol consumer-group commits yet", name, key)
}

func (t *kafkaTarget) latency(ctx context.Context, p params) (measure, error) {
	const topic = "latency"
	prod, err := t.client(kgo.RequiredAcks(kgo.LeaderAck()))
	if err != nil {
		return measure{}, err
	}
	defer prod.Close()
	if err := t.createTopic(ctx, prod, topic); err != nil {
		return measure{}, err
	}
	cons, err := t.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(time.Second))
	if err != nil {
		return measure{}, err
	}
	defer cons.Close()
	lp := newLatencyProbe(p)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	polled := make(chan error, 1)
	go func() {
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				break
			}
			if err := fs.Err0(); err != nil {
				polled <- err
				return
			}
			fs.EachRecord(func(r *kgo.Record) { lp.observe(r.Value) })
		}
		polled <- nil
	}()
	// Let the consumer connect and start its first long poll.
	time.Sleep(200 * time.Millisecond)
	var failed atomic.Pointer[error]
	m, err := lp.run(ctx, p, func(vals [][]byte) error {
		if e := failed.Load(); e != nil {
			return *e
		}
		for _, v := range vals {
			prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
		return nil
	})
	cancel()
	if perr := <-polled; err == nil && perr != nil {
		err = perr
	}
	return m, err
}

// passbookBinary finds or builds the passbook binary.
func passbookBinary(ctx context.Context, given, dir string) (string, error) {
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			return "", err
		}
		return given, nil
	}
	return buildPassbook(ctx, dir)
}
