package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/storage"
)

// passbookEmbedded is passbook linked into the harness: a DB in a fresh
// directory, one topic of one partition per workload.
func passbookEmbedded() *system {
	return &system{
		key:  "passbook",
		name: "passbook (embedded)",
		durability: func(w workload) string {
			switch w {
			case wDurable, wKiBDurable:
				return "Fsync: fdatasync before Append returns (group commit)"
			case wCommit:
				return "commit = SQLite UPSERT, WAL, synchronous=NORMAL: survives a process kill"
			case wReplay:
				return "Records iterator, CRC-checked batches"
			case wLatency:
				return "InOS appends; Log.Follow tails the head"
			}
			return "InOS: in the OS when Append returns (survives a process kill)"
		},
		skip: func(workload) string { return "" },
		start: func(ctx context.Context, dir string) (target, error) {
			db, err := passbook.Open(dir, nil)
			if err != nil {
				return nil, err
			}
			return &passbookTarget{db: db, filled: map[string]int{}}, nil
		},
	}
}

type passbookTarget struct {
	db     *passbook.DB
	filled map[string]int
}

func (t *passbookTarget) close() error { return t.db.Close() }

func (t *passbookTarget) topic(name string) (*passbook.Topic, error) {
	tp, err := t.db.Topic(name)
	if errors.Is(err, passbook.ErrUnknownTopic) {
		return t.db.CreateTopic(name, passbook.TopicConfig{Partitions: 1})
	}
	return tp, err
}

func records(vals [][]byte) []passbook.Record {
	rs := make([]passbook.Record, len(vals))
	for i, v := range vals {
		rs[i].Value = v
	}
	return rs
}

func (t *passbookTarget) appendRun(ctx context.Context, topic string, p params, k int, d storage.Durability) (measure, error) {
	tp, err := t.topic(topic)
	if err != nil {
		return measure{}, err
	}
	pool := records(values(valuePool, p.size))
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		_, err := tp.AppendTo(0, pool[j:j+k], d)
		return err
	})
}

// fill appends n records to topic, untimed, unless it holds them.
func (t *passbookTarget) fill(topic string, n, size int) (*passbook.Topic, error) {
	tp, err := t.topic(topic)
	if err != nil || t.filled[topic] >= n {
		return tp, err
	}
	pool := records(values(valuePool, size))
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		if _, err := tp.AppendTo(0, pool[:k], storage.InOS); err != nil {
			return nil, err
		}
	}
	t.filled[topic] = n
	return tp, nil
}

func (t *passbookTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, "single", p, 1, storage.InOS)
	case wBatch:
		return t.appendRun(ctx, "batch", p, p.batch, storage.InOS)
	case wKiB:
		return t.appendRun(ctx, "kib", p, p.batch, storage.InOS)
	case wDurable:
		return t.appendRun(ctx, "fsync", p, p.batch, storage.Fsync)
	case wKiBDurable:
		return t.appendRun(ctx, "kib-fsync", p, p.batch, storage.Fsync)
	case wReplay:
		tp, err := t.fill("replay", p.n, p.size)
		if err != nil {
			return measure{}, err
		}
		start := time.Now()
		got := 0
		for rec, err := range tp.Records(0, 0) {
			if err != nil {
				return measure{}, err
			}
			if len(rec.Value) != p.size {
				return measure{}, fmt.Errorf("record %d has %d bytes", got, len(rec.Value))
			}
			got++
			if got%10_000 == 0 && time.Since(start) > p.maxTime {
				break
			}
		}
		if got < min(p.n, 10_000) {
			return measure{}, fmt.Errorf("read %d of %d records", got, p.n)
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	case wCommit:
		tp, err := t.fill("replay", p.n, p.size)
		if err != nil {
			return measure{}, err
		}
		c, err := consumer.New(ctx, tp, t.db.Offsets(), consumer.Options{Name: "bench", Commit: consumer.CommitAfter})
		if err != nil {
			return measure{}, err
		}
		defer c.Close()
		start := time.Now()
		got := 0
		err = c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
			got++
			if got%100 == 0 && time.Since(start) > p.maxTime {
				return consumer.Stop
			}
			return nil
		})
		el := time.Since(start)
		if err != nil {
			return measure{}, err
		}
		if next := c.Positions()[0]; next != int64(got) {
			return measure{}, fmt.Errorf("handled %d records but the committed position is %d", got, next)
		}
		return measure{records: got, elapsed: el}, nil
	case wLatency:
		tp, err := t.topic("latency")
		if err != nil {
			return measure{}, err
		}
		part, err := tp.Partition(0)
		if err != nil {
			return measure{}, err
		}
		lp := newLatencyProbe(p)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		follow := make(chan error, 1)
		go func() {
			for rec, err := range part.Follow(cctx, 0) {
				if err != nil {
					follow <- err
					return
				}
				lp.observe(rec.Value)
			}
			follow <- nil
		}()
		m, err := lp.run(ctx, p, func(vals [][]byte) error {
			for _, v := range vals {
				if _, err := tp.AppendTo(0, []passbook.Record{{Value: v}}, storage.InOS); err != nil {
					return err
				}
			}
			return nil
		})
		cancel()
		if ferr := <-follow; ferr != nil && !errors.Is(ferr, context.Canceled) {
			// The follower's own error says more than "saw n of m".
			return measure{}, fmt.Errorf("Log.Follow: %w", ferr)
		}
		return m, err
	}
	return measure{}, na("not implemented")
}
