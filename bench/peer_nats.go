package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsVersion runs `nats-server --version`: "2.9.10", or an error.
func natsVersion(bin string) (string, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return "", fmt.Errorf("%s is not installed (Debian: apt-get install nats-server)", bin)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", bin, err, out)
	}
	m := regexp.MustCompile(`v?(\d+\.\d+\.\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("%s --version printed %q", bin, out)
	}
	return m[1], nil
}

// atLeast reports whether version "a.b.c" is at least major.minor.
func atLeast(version string, major, minor int) bool {
	f := strings.Split(version, ".")
	if len(f) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}

// natsSystem is nats-server with JetStream file storage, started by the
// harness, driven with nats.go. With syncAlways the server fsyncs every
// write (sync_interval: always, from nats-server 2.10), and the
// configuration runs only the fsync workload.
func natsSystem(bin string, syncAlways bool) *system {
	version, verr := natsVersion(bin)
	s := &system{
		key:     "nats",
		name:    "NATS JetStream",
		version: "nats-server " + version + ", nats.go " + moduleVersion("github.com/nats-io/nats.go"),
		durability: func(w workload) string {
			switch w {
			case wReplay:
				return "ordered pull consumer from the first message"
			case wCommit:
				return "commit = DoubleAck of each message (the server confirms the ack) on a durable explicit-ack consumer"
			case wLatency:
				return "async publish; ordered consumer"
			case wSingle:
				return "Publish waits for each PubAck: stored in the file store, fsync'd every 2 min (the default sync_interval)"
			}
			return "PublishAsync, window of acks: stored in the file store, fsync'd every 2 min (the default sync_interval)"
		},
		skip: func(w workload) string {
			if w == wDurable {
				return "by default JetStream fsyncs every 2 minutes; see the sync_interval: always row"
			}
			return ""
		},
		start: func(ctx context.Context, dir string) (target, error) { return startNATS(ctx, bin, dir, false) },
	}
	if syncAlways {
		s.name = "NATS JetStream (sync_interval: always)"
		s.durability = func(workload) string {
			return "PublishAsync, window of acks; the server fsyncs every write before the PubAck"
		}
		s.skip = onlyFor(wDurable, "this configuration runs only the fsync workload")
		s.start = func(ctx context.Context, dir string) (target, error) { return startNATS(ctx, bin, dir, true) }
		s.variant = true
		if verr == nil && !atLeast(version, 2, 10) {
			verr = fmt.Errorf("nats-server %s (Debian 12's) has no sync_interval setting: it came in 2.10; pass --nats-sync-server with a 2.10 or later binary", version)
		}
	}
	if verr != nil {
		s.unavailable = verr.Error()
	}
	return s
}

func startNATS(ctx context.Context, bin, dir string, syncAlways bool) (target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	sync := ""
	if syncAlways {
		sync = "\n  sync_interval: always"
	}
	conf := fmt.Sprintf("listen: 127.0.0.1:%d\nmax_payload: 8MB\njetstream {\n  store_dir: %q\n  max_memory_store: 1GB\n  max_file_store: 100GB%s\n}\n",
		port, filepath.Join(dir, "jetstream"), sync)
	confFile := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p, err := startProc("nats-server", filepath.Join(dir, "nats.log"), nil, bin, "-c", confFile)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var nc *nats.Conn
	err = p.waitReady(ctx, 30*time.Second, func(context.Context) error {
		c, err := nats.Connect(url, nats.Timeout(time.Second))
		if err != nil {
			return err
		}
		js, err := jetstream.New(c)
		if err == nil {
			_, err = js.AccountInfo(ctx)
		}
		if err != nil {
			c.Close()
			return err
		}
		nc = c
		return nil
	})
	if err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	return &natsTarget{proc: p, nc: nc, filled: map[string]int{}}, nil
}

type natsTarget struct {
	proc   *proc
	nc     *nats.Conn
	filled map[string]int
}

func (t *natsTarget) close() error {
	t.nc.Close()
	t.proc.stop(30 * time.Second)
	return nil
}

// stream creates a file-storage stream named after the workload, on the
// subject of the same name.
func (t *natsTarget) stream(ctx context.Context, js jetstream.JetStream, name string) error {
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: strings.ToUpper(name), Subjects: []string{name}, Storage: jetstream.FileStorage})
	return err
}

// publishWindow publishes vals asynchronously and waits for every ack.
func publishWindow(ctx context.Context, js jetstream.JetStream, subj string, vals [][]byte) error {
	futures := make([]jetstream.PubAckFuture, 0, len(vals))
	for _, v := range vals {
		f, err := js.PublishAsync(subj, v)
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (t *natsTarget) js(p params) (jetstream.JetStream, error) {
	return jetstream.New(t.nc, jetstream.WithPublishAsyncMaxPending(max(p.batch, 256)))
}

func (t *natsTarget) appendRun(ctx context.Context, name string, p params, k int) (measure, error) {
	js, err := t.js(p)
	if err != nil {
		return measure{}, err
	}
	if err := t.stream(ctx, js, name); err != nil {
		return measure{}, err
	}
	pool := values(valuePool, p.size)
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		if k == 1 {
			_, err := js.Publish(ctx, name, pool[j])
			return err
		}
		return publishWindow(ctx, js, name, pool[j:j+k])
	})
}

func (t *natsTarget) fill(ctx context.Context, js jetstream.JetStream, name string, n, size int) error {
	if t.filled[name] >= n {
		return nil
	}
	if err := t.stream(ctx, js, name); err != nil {
		return err
	}
	pool := values(valuePool, size)
	for done := 0; done < n; done += 1000 {
		if err := publishWindow(ctx, js, name, pool[:min(1000, n-done)]); err != nil {
			return err
		}
	}
	t.filled[name] = n
	return nil
}

func (t *natsTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, "single", p, 1)
	case wBatch:
		return t.appendRun(ctx, "batch", p, p.batch)
	case wDurable:
		return t.appendRun(ctx, "fsync", p, p.batch)
	case wKiB:
		return t.appendRun(ctx, "kib", p, p.batch)
	}
	js, err := t.js(p)
	if err != nil {
		return measure{}, err
	}
	switch w {
	case wReplay:
		if err := t.fill(ctx, js, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		cons, err := js.OrderedConsumer(ctx, "REPLAY", jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		if err != nil {
			return measure{}, err
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(10_000))
		if err != nil {
			return measure{}, err
		}
		defer it.Stop()
		start := time.Now()
		got := 0
		for got < p.n {
			m, err := it.Next()
			if err != nil {
				return measure{}, fmt.Errorf("after %d messages: %w", got, err)
			}
			if len(m.Data()) != p.size {
				return measure{}, fmt.Errorf("message %d has %d bytes", got, len(m.Data()))
			}
			got++
			if got%10_000 == 0 && time.Since(start) > p.maxTime {
				break
			}
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	case wCommit:
		if err := t.fill(ctx, js, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		cons, err := js.CreateOrUpdateConsumer(ctx, "REPLAY", jetstream.ConsumerConfig{
			Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			return measure{}, err
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(1000))
		if err != nil {
			return measure{}, err
		}
		defer it.Stop()
		start := time.Now()
		got := 0
		for got < p.n && (got%100 != 0 || time.Since(start) < p.maxTime) {
			m, err := it.Next()
			if err != nil {
				return measure{}, fmt.Errorf("after %d messages: %w", got, err)
			}
			if err := m.DoubleAck(ctx); err != nil {
				return measure{}, fmt.Errorf("ack message %d: %w", got, err)
			}
			got++
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	case wLatency:
		// The latency run does not wait for acks: let them queue.
		js, err := jetstream.New(t.nc, jetstream.WithPublishAsyncMaxPending(1<<20))
		if err != nil {
			return measure{}, err
		}
		if err := t.stream(ctx, js, "latency"); err != nil {
			return measure{}, err
		}
		cons, err := js.OrderedConsumer(ctx, "LATENCY", jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		if err != nil {
			return measure{}, err
		}
		lp := newLatencyProbe(p)
		cc, err := cons.Consume(func(m jetstream.Msg) { lp.observe(m.Data()) })
		if err != nil {
			return measure{}, err
		}
		defer cc.Stop()
		time.Sleep(200 * time.Millisecond)
		return lp.run(ctx, p, func(vals [][]byte) error {
			for _, v := range vals {
				if _, err := js.PublishAsync("latency", v); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return measure{}, na("not implemented")
}
