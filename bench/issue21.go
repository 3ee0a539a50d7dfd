package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Kafka-protocol workloads of issue 21: acks=all produce over one
// partition and over many, produce with franz-go's default producer
// settings, and the open time of passbook serve over a data directory
// of many partitions.

// serverCPU is the server process's CPU time so far: the time on CPU of
// each of its threads (/proc/PID/task/TID/schedstat, in nanoseconds),
// summed; where the kernel has no schedstat, user + system time from
// /proc/PID/stat, in ticks of 10 ms. A replay of 100 MB costs passbook
// serve a few tens of milliseconds, a few ticks: too coarse for a ratio.
// (A thread that exits takes its time with it; the Go runtime keeps its
// threads, and kfake's child is a Go process too.)
func (t *kafkaTarget) serverCPU() (time.Duration, error) {
	if t.server == nil {
		return 0, errors.New("no server process")
	}
	pid := t.server.p.pid()
	if cpu, err := threadsCPU(pid); err == nil {
		return cpu, nil
	}
	_, cpu, err := procUsage(pid)
	return cpu, err
}

// threadsCPU sums the first field of /proc/PID/task/*/schedstat: each
// thread's time on CPU, in nanoseconds.
func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited since the directory was read
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", dir, task.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, task.Name(), err)
		}
		sum += time.Duration(ns)
	}
	if sum == 0 {
		return 0, errors.New("schedstat counts no CPU time")
	}
	return sum, nil
}

// defaultsRun produces p.n records to a topic of one partition through a
// client with franz-go's default producer settings (idempotent, acks=all,
// 10 ms linger, snappy where it shrinks a batch, 50,000 buffered records),
// as fast as Produce takes them, and waits for every acknowledgement.
func (t *kafkaTarget) defaultsRun(ctx context.Context, p params) (measure, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.addr))
	if err != nil {
		return measure{}, err
	}
	defer cl.Close()
	const topic = "defaults"
	if err := t.createTopic(ctx, cl, topic); err != nil {
		return measure{}, err
	}
	// Warm up: metadata, the connection and the producer ID.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("warm-up")}).FirstErr(); err != nil {
		return measure{}, fmt.Errorf("warm-up: %w", err)
	}
	pool := values(valuePool, p.size)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	start := time.Now()
	n := 0
	for ; n < p.n; n++ {
		if n%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return measure{}, err
			}
			if failed.Load() != nil || time.Since(start) > p.maxTime {
				break
			}
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[n%valuePool]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if e := failed.Load(); e != nil {
		return measure{}, *e
	}
	return measure{records: n, elapsed: el}, nil
}

// acksAllRun produces p.n records with acks=all to a topic of the given
// partitions, round robin, in windows of p.manyWindow() records (the same
// window and total for one partition and for many), waiting for every
// acknowledgement of a window before the next.
func (t *kafkaTarget) acksAllRun(ctx context.Context, p params, partitions int) (measure, error) {
	// Batches no larger than Kafka's default max.message.bytes (and
	// franz-go's default), which passbook serve enforces too.
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1_000_012)}
	if partitions > 1 {
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	cl, err := t.client(opts...)
	if err != nil {
		return measure{}, err
	}
	defer cl.Close()
	topic := fmt.Sprintf("acks-all-%dp", partitions)
	if err := createTopicN(ctx, cl, topic, partitions); err != nil {
		return measure{}, err
	}
	k := p.manyWindow()
	pool := values(k, p.size)
	// Warm up, untimed: metadata, the connection, and a record to every
	// partition (which creates its files on a server that makes them
	// lazily).
	if err := produceWindow(ctx, cl, topic, pool[:partitions]); err != nil {
		return measure{}, fmt.Errorf("warm-up: %w", err)
	}
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		return produceWindow(ctx, cl, topic, pool[:k])
	})
}

// openRun times passbook serve's open of a data directory of n
// partitions after a clean stop: a first server creates a topic of n
// partitions, produces a record to each and stops on SIGTERM (its clean
// shutdown); then a second is started on the same directory and timed
// from exec until it answers a Metadata request listing all n partitions.
// The directory is filled once per run, beside the trials' directories,
// and opened again in every trial: each open ends in a clean stop too,
// checked, so the next trial opens after a clean stop as well.
func (t *kafkaTarget) openRun(ctx context.Context, n int) (measure, error) {
	if t.bin == "" || t.tmp == "" {
		return measure{}, na("only passbook serve's open is timed")
	}
	dir := filepath.Join(filepath.Dir(t.tmp), fmt.Sprintf("passbook-open-%d", n))
	data, filled := filepath.Join(dir, "data"), filepath.Join(dir, "filled")
	const topic = "open"

	if _, err := os.Stat(filled); err != nil {
		// Fill: the topic, a record in every partition, a clean stop.
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return measure{}, err
		}
		addr, p, err := t.startServe(ctx, dir, data, "fill")
		if err != nil {
			return measure{}, err
		}
		err = fillPartitions(ctx, addr, topic, n)
		p.stop(5 * time.Minute)
		if err != nil {
			return measure{}, fmt.Errorf("fill %s partitions: %w", commas(int64(n)), err)
		}
		if p.err != nil {
			return measure{}, fmt.Errorf("the filling server did not stop cleanly: %v: %s", p.err, p.logTail(3))
		}
		if err := os.WriteFile(filled, nil, 0o644); err != nil {
			return measure{}, err
		}
	}
	m, err := t.openOnce(ctx, dir, data, topic, n)
	if err != nil {
		// Whatever state it left, the next trial starts from a fresh fill.
		os.Remove(filled)
	}
	return m, err
}

// openOnce starts passbook serve on data, times it from exec until it
// answers a Metadata request listing n partitions of topic, and stops it
// cleanly (SIGTERM, exit status 0).
func (t *kafkaTarget) openOnce(ctx context.Context, dir, data, topic string, n int) (measure, error) {
	// Open: exec → a Metadata answer with every partition.
	port, err := freePort()
	if err != nil {
		return measure{}, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	began := time.Now()
	p, err := startProc("passbook serve", filepath.Join(dir, "open.log"), nil, t.bin, "serve", "--data", data, "--kafka", addr)
	if err != nil {
		return measure{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.stop(time.Minute)
		}
	}()
	for {
		if p.exited() {
			return measure{}, fmt.Errorf("passbook serve exited while opening (%v): %s", p.err, p.logTail(3))
		}
		if err := ctx.Err(); err != nil {
			return measure{}, err
		}
		if time.Since(began) > 5*time.Minute {
			return measure{}, fmt.Errorf("passbook serve not listening after %v", time.Since(began).Round(time.Second))
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		err := dialable(addr)(dctx)
		cancel()
		if err == nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	got, err := partitionCount(ctx, addr, topic)
	el := time.Since(began)
	if err != nil {
		return measure{}, err
	}
	if got != n {
		return measure{}, fmt.Errorf("after open, topic %s has %s partitions, want %s", topic, commas(int64(got)), commas(int64(n)))
	}
	p.stop(5 * time.Minute)
	stopped = true
	if p.err != nil {
		return measure{}, fmt.Errorf("the opened server did not stop cleanly: %v: %s", p.err, p.logTail(3))
	}
	return measure{records: n, elapsed: el}, nil
}

// startServe starts passbook serve on data, on a free port, and waits
// until it listens.
func (t *kafkaTarget) startServe(ctx context.Context, dir, data, name string) (string, *proc, error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := startProc("passbook serve", filepath.Join(dir, name+".log"), nil, t.bin, "serve", "--data", data, "--kafka", addr)
	if err != nil {
		return "", nil, err
	}
	if err := p.waitReady(ctx, 5*time.Minute, dialable(addr)); err != nil {
		p.stop(5 * time.Second)
		return "", nil, err
	}
	return addr, p, nil
}

// fillPartitions creates topic with n partitions and produces one record
// to each (acks=1), in one request.
func fillPartitions(ctx context.Context, addr, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(n+1),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopicN(ctx, cl, topic, n); err != nil {
		return err
	}
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Partition: int32(i), Value: []byte("opened")}
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// partitionCount asks addr for topic's metadata and counts its partitions.
func partitionCount(ctx context.Context, addr, topic string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	if len(resp.Topics) == 0 {
		return 0, fmt.Errorf("metadata has no topic %s", topic)
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	return len(t.Partitions), nil
}
