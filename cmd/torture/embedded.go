package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/storage"
)

// sink receives what a workload does; the ledger is one, and a child
// process's sink writes it to its parent.
type sink interface {
	Sent(value, key, hdr string, part int32)
	Acked(part int32, off int64, durable bool, values ...string)
	Started(name string, d delivery, start map[int32]int64)
	Processed(name string, p int32, off int64, value string) bool
	Committed(name string, p int32, next int64)
}

// The consumers of every workload, one per delivery mode.
var deliveries = []struct {
	name   string
	commit consumer.Commit
	d      delivery
}{
	{"after", consumer.CommitAfter, delivery{name: "at-least-once (commit after)", dupWindow: 1}},
	{"every", consumer.CommitEvery, delivery{name: "at-least-once (commit every 10)", dupWindow: 10}},
	{"before", consumer.CommitBefore, delivery{name: "at-most-once (commit before)", skipWindow: 1}},
}

const (
	topicName  = "torture"
	partitions = 3
)

// topicConfig is the workload's topic: small segments, so that rolls
// happen and closed segments exist.
var topicConfig = passbook.TopicConfig{Partitions: partitions, SegmentBytes: 8 << 10}

// embedded describes one run of the embedded workload.
type embedded struct {
	db        *passbook.DB
	sink      sink
	tag       string  // names the run in the values it writes
	producers int     // appending goroutines
	fsync     float64 // share of appends with Fsync durability
	// durableReads makes consumers wait for a record to be fsync'd before
	// processing it (so that a power loss cannot take a processed one).
	durableReads bool
	rng          *rand.Rand
	errs         chan error
}

var errFault = errors.New("torture: the fault struck")

// run runs producers and consumers until ctx is done, then stops them
// cleanly (consumers commit what they processed) and returns the first
// unexpected error.
func (w *embedded) run(ctx context.Context) error {
	t, err := w.db.Topic(topicName)
	if err != nil {
		if t, err = w.db.CreateTopic(topicName, topicConfig); err != nil {
			return err
		}
	}
	w.errs = make(chan error, 16)
	var wg sync.WaitGroup
	for i := range w.producers {
		seed := w.rng.Uint64()
		wg.Go(func() { w.produce(ctx, t, i, rand.New(rand.NewPCG(seed, uint64(i)))) })
	}
	for _, d := range deliveries {
		wg.Go(func() { w.consume(ctx, t, d.name, d.commit, d.d) })
	}
	wg.Wait()
	select {
	case err := <-w.errs:
		return err
	default:
		return nil
	}
}

func (w *embedded) fail(err error) {
	select {
	case w.errs <- err:
	default:
	}
}

func (w *embedded) produce(ctx context.Context, t *passbook.Topic, id int, rng *rand.Rand) {
	for seq := 0; ctx.Err() == nil; {
		p := int32(rng.IntN(t.Partitions()))
		n := 1 + rng.IntN(5)
		recs := make([]passbook.Record, n)
		values := make([]string, n)
		for i := range recs {
			body := fmt.Sprintf("%s-w%d-s%d-%s", w.tag, id, seq, strings.Repeat("x", rng.IntN(120)))
			v, k, h := makeValue(body), fmt.Sprintf("k%d", seq%32), strconv.Itoa(seq)
			recs[i] = passbook.Record{Key: []byte(k), Value: v, Headers: []passbook.Header{{Key: "seq", Value: []byte(h)}}}
			values[i] = string(v)
			w.sink.Sent(string(v), k, h, p)
			seq++
		}
		d := storage.InOS
		if rng.Float64() < w.fsync {
			d = storage.Fsync
		}
		off, err := t.AppendTo(p, recs, d)
		if err != nil {
			// A failed disk refuses this partition's appends from now on;
			// the others go on.
			if ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			continue
		}
		w.sink.Acked(p, off, d == storage.Fsync, values...)
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
		}
	}
}

func (w *embedded) consume(ctx context.Context, t *passbook.Topic, name string, commit consumer.Commit, d delivery) {
	c, err := consumer.New(ctx, t, w.db.Offsets(), consumer.Options{Name: name, Commit: commit, EveryN: 10})
	if err != nil {
		if ctx.Err() == nil {
			w.fail(fmt.Errorf("consumer %s: %w", name, err))
		}
		return
	}
	defer c.Close()
	w.sink.Started(name, d, c.Positions())
	err = c.Run(ctx, func(ctx context.Context, m consumer.Message) error {
		if w.durableReads {
			l, err := t.Partition(m.Partition)
			if err != nil {
				return err
			}
			if err := l.WaitDurable(m.Offset+1, storage.Fsync); err != nil {
				return err
			}
		}
		if !w.sink.Processed(name, m.Partition, m.Offset, string(m.Value)) {
			return errFault
		}
		return nil
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, errFault) && !isDiskFault(err) {
		w.fail(fmt.Errorf("consumer %s: %w", name, err))
	}
}
