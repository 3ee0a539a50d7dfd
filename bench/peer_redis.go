package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisSystem is redis-server with the append-only file on, started by
// the harness, driven with go-redis. fsync is appendfsync: everysec (the
// default), or always, which runs only the fsync workload.
func redisSystem(always bool) *system {
	version, verr := redisVersion()
	s := &system{
		key:     "redis",
		name:    "Redis Streams (appendfsync everysec)",
		version: "redis-server " + version + ", go-redis " + moduleVersion("github.com/redis/go-redis/v9"),
		durability: func(w workload) string {
			switch w {
			case wSingle:
				return "XADD, one round trip each: in the AOF in the OS, fsync'd within a second"
			case wReplay:
				return "XRANGE, 10,000 entries a call"
			case wCommit:
				return "commit = XACK of each entry (one round trip), read with XREADGROUP; AOF everysec"
			case wLatency:
				return "pipelined XADD each millisecond; XREAD BLOCK tails"
			}
			return "pipelined XADD, one pipeline per batch: in the AOF in the OS, fsync'd within a second"
		},
		skip: func(w workload) string {
			if w == wDurable {
				return "everysec fsyncs once a second; see the appendfsync always row"
			}
			return ""
		},
		start: func(ctx context.Context, dir string) (target, error) { return startRedis(ctx, dir, "everysec") },
	}
	if always {
		s.name = "Redis Streams (appendfsync always)"
		s.durability = func(workload) string {
			return "pipelined XADD, one pipeline per batch: the AOF is fsync'd before the replies"
		}
		s.skip = onlyFor(wDurable, "this configuration runs only the fsync workload")
		s.start = func(ctx context.Context, dir string) (target, error) { return startRedis(ctx, dir, "always") }
		s.variant = true
	}
	if verr != nil {
		s.unavailable = verr.Error()
	}
	return s
}

func redisVersion() (string, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "", fmt.Errorf("redis-server is not installed (Debian: apt-get install redis-server)")
	}
	out, err := exec.Command("redis-server", "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redis-server --version: %v: %s", err, out)
	}
	if m := regexp.MustCompile(`v=(\S+)`).FindStringSubmatch(string(out)); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("redis-server --version printed %q", out)
}

func startRedis(ctx context.Context, dir, fsync string) (target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := startProc("redis-server", filepath.Join(dir, "redis.log"), nil, "redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--daemonize", "no",
		"--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--protected-mode", "no")
	if err != nil {
		return nil, err
	}
	cl := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 4, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	if err := p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error { return cl.Ping(ctx).Err() }); err != nil {
		cl.Close()
		p.stop(5 * time.Second)
		return nil, err
	}
	return &redisTarget{proc: p, cl: cl, filled: map[string]int{}}, nil
}

type redisTarget struct {
	proc   *proc
	cl     *redis.Client
	filled map[string]int
}

func (t *redisTarget) close() error {
	t.cl.Close()
	t.proc.stop(30 * time.Second)
	return nil
}

// xaddPipeline appends vals to stream in one pipeline.
func (t *redisTarget) xaddPipeline(ctx context.Context, stream string, vals [][]byte) error {
	pipe := t.cl.Pipeline()
	for _, v := range vals {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: "*", Values: []any{"v", v}})
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (t *redisTarget) appendRun(ctx context.Context, stream string, p params, k int) (measure, error) {
	pool := values(valuePool, p.size)
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		if k == 1 {
			return t.cl.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: "*", Values: []any{"v", pool[j]}}).Err()
		}
		return t.xaddPipeline(ctx, stream, pool[j:j+k])
	})
}

func (t *redisTarget) fill(ctx context.Context, stream string, n, size int) error {
	if t.filled[stream] >= n {
		return nil
	}
	pool := values(valuePool, size)
	for done := 0; done < n; done += 1000 {
		if err := t.xaddPipeline(ctx, stream, pool[:min(1000, n-done)]); err != nil {
			return err
		}
	}
	t.filled[stream] = n
	return nil
}

func entryValue(m redis.XMessage) []byte {
	s, _ := m.Values["v"].(string)
	return []byte(s)
}

func (t *redisTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, "single", p, 1)
	case wBatch:
		return t.appendRun(ctx, "batch", p, p.batch)
	case wDurable:
		return t.appendRun(ctx, "fsync", p, p.batch)
	case wKiB:
		return t.appendRun(ctx, "kib", p, p.batch)
	case wReplay:
		if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		start := time.Now()
		got, from := 0, "-"
		for got < p.n && time.Since(start) < p.maxTime {
			ms, err := t.cl.XRangeN(ctx, "replay", from, "+", 10_000).Result()
			if err != nil {
				return measure{}, err
			}
			if len(ms) == 0 {
				return measure{}, fmt.Errorf("read %d of %d entries", got, p.n)
			}
			for _, m := range ms {
				if len(entryValue(m)) != p.size {
					return measure{}, fmt.Errorf("entry %s has %d bytes", m.ID, len(entryValue(m)))
				}
			}
			got += len(ms)
			from = "(" + ms[len(ms)-1].ID
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	case wCommit:
		if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		if err := t.cl.XGroupCreate(ctx, "replay", "bench", "0").Err(); err != nil {
			return measure{}, err
		}
		start := time.Now()
		got := 0
		for got < p.n && time.Since(start) < p.maxTime {
			ss, err := t.cl.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "bench", Consumer: "c", Streams: []string{"replay", ">"}, Count: 1000, Block: -1}).Result()
			if err != nil {
				return measure{}, fmt.Errorf("after %d entries: %w", got, err)
			}
			for _, m := range ss[0].Messages {
				if err := t.cl.XAck(ctx, "replay", "bench", m.ID).Err(); err != nil {
					return measure{}, err
				}
				got++
				if got%100 == 0 && time.Since(start) > p.maxTime {
					break
				}
			}
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	case wLatency:
		lp := newLatencyProbe(p)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		tail := redis.NewClient(&redis.Options{Addr: t.cl.Options().Addr, ReadTimeout: -1})
		defer tail.Close()
		done := make(chan error, 1)
		go func() {
			last := "0"
			for cctx.Err() == nil {
				ss, err := tail.XRead(cctx, &redis.XReadArgs{Streams: []string{"latency", last}, Count: 1000, Block: 0}).Result()
				if err != nil {
					if cctx.Err() == nil {
						done <- err
					}
					break
				}
				for _, m := range ss[0].Messages {
					lp.observe(entryValue(m))
					last = m.ID
				}
			}
			done <- nil
		}()
		time.Sleep(200 * time.Millisecond)
		m, err := lp.run(ctx, p, func(vals [][]byte) error { return t.xaddPipeline(ctx, "latency", vals) })
		cancel()
		tail.Close()
		if terr := <-done; err == nil && terr != nil {
			err = terr
		}
		return m, err
	}
	return measure{}, na("not implemented")
}
