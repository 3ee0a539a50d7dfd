// Command kafkaetl is the lab's Part 2 over Kafka: a consume-transform-
// produce program between two topics of a running `passbook serve` (or
// any Kafka cluster), written as a user of franz-go writes one, that can
// be killed at a chosen input offset in the gap between its work and its
// commit.
//
// It reads topic --in as consumer group --group and, for each record,
// writes one record to --out: key the input offset, value "processed "
// and the input value. --commit says how its input offsets are committed:
//
//	after  the work (ProduceSync, acknowledged), then the commit of that
//	       one record's offset (CommitRecords): at-least-once. Killed
//	       after the work of --crash-at, the restart does that record
//	       again: one duplicate in --out.
//	tx     the work and the offsets in one Kafka transaction (franz-go's
//	       GroupTransactSession: a transactional producer whose offsets
//	       go in through TxnOffsetCommit, committed by EndTxn with the
//	       outputs; the group's offsets fetched stable, KIP-447).
//	       Killed inside the transaction that holds --crash-at's
//	       output, the restart's InitProducerID fences it and it is
//	       aborted: a read_committed reader of --out sees every input
//	       record once.
//
// With --crash-at OFFSET it prints "at the crash point" on stdout once the
// work of that input offset is on the brokers (and, with tx, before the
// transaction ends), and waits to be killed. Without it, it runs until it
// has processed every record the input had when it started, then prints a
// summary line and exits 0.
//
//	passbook serve --data ./data &
//	passbook produce orders --brokers 127.0.0.1:9092 < orders.txt
//	go run ./lab/kafkaetl --brokers 127.0.0.1:9092 --commit tx --crash-at 59999 &
//	kill -9 %2    # once it says "at the crash point"
//	go run ./lab/kafkaetl --brokers 127.0.0.1:9092 --commit tx
//	passbook consume orders-out --consumer check --brokers 127.0.0.1:9092
//
// cmd/passbook's TestBinary_LabKafka runs exactly this, with SIGKILL, for
// both commit modes and counts --out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	brokers, in, out, group, commit string
	crashAt                         int64
	session                         time.Duration
	verbose                         bool
}

func main() {
	var c config
	flag.StringVar(&c.brokers, "brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	flag.StringVar(&c.in, "in", "orders", "input topic (read from partition 0's start)")
	flag.StringVar(&c.out, "out", "orders-out", "output topic")
	flag.StringVar(&c.group, "group", "orders-etl", "consumer group; with --commit tx also the transactional id")
	flag.StringVar(&c.commit, "commit", "tx", "after (work, then commit each offset: at-least-once) or tx (work and offsets in one transaction)")
	flag.Int64Var(&c.crashAt, "crash-at", -1, "input offset after whose work (before its commit) to stop and wait to be killed; -1: none")
	flag.DurationVar(&c.session, "session-timeout", 3*time.Second, "the group's session timeout: how soon a killed member's partitions go to its successor")
	flag.BoolVar(&c.verbose, "v", false, "log what the Kafka client does, on stderr")
	flag.Parse()
	if flag.NArg() > 0 || (c.commit != "after" && c.commit != "tx") {
		fmt.Fprintf(os.Stderr, "kafkaetl: --commit %q: want after or tx (and no arguments)\n", c.commit)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkaetl:", err)
		os.Exit(1)
	}
	fmt.Printf("processed %d records, committed with --commit %s\n", n, c.commit)
}

// opts are the client options both modes share.
func (c config) opts() []kgo.Opt {
	var log []kgo.Opt
	if c.verbose {
		log = append(log, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	return append(log,
		kgo.SeedBrokers(strings.Split(c.brokers, ",")...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(c.session),
		kgo.HeartbeatInterval(c.session/5),
		kgo.DefaultProduceTopic(c.out),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), // everything to partition 0, in input order
	)
}

// end is where the input stops for this run: its end when the run starts.
func end(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list the end of %s: %w", topic, err)
	}
	o, ok := listed.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("topic %s has no partition 0", topic)
	}
	return o.Offset, nil
}

func output(r *kgo.Record) *kgo.Record {
	return &kgo.Record{Partition: 0, Key: strconv.AppendInt(nil, r.Offset, 10), Value: append([]byte("processed "), r.Value...)}
}

// crashed says so and waits for the kill.
func crashed(ctx context.Context) error {
	fmt.Println("at the crash point")
	<-ctx.Done()
	return errors.New("stopped at the crash point")
}

func run(ctx context.Context, c config) (int, error) {
	if c.commit == "tx" {
		return runTx(ctx, c)
	}
	return runAfter(ctx, c)
}

// runAfter is commit-after: each record's output acknowledged, then its
// offset committed, one at a time.
func runAfter(ctx context.Context, c config) (int, error) {
	cl, err := kgo.NewClient(append(c.opts(), kgo.DisableAutoCommit())...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	stopAt, err := end(ctx, cl, c.in)
	if err != nil {
		return 0, err
	}
	n, next := 0, int64(0)
	for next < stopAt {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, fmt.Errorf("poll: %w", err)
		}
		for _, r := range fs.Records() {
			if err := cl.ProduceSync(ctx, output(r)).FirstErr(); err != nil {
				return n, fmt.Errorf("produce the output of offset %d: %w", r.Offset, err)
			}
			n++
			if r.Offset == c.crashAt {
				return n, crashed(ctx)
			}
			if err := cl.CommitRecords(ctx, r); err != nil {
				return n, fmt.Errorf("commit offset %d: %w", r.Offset+1, err)
			}
			next = r.Offset + 1
		}
	}
	return n, nil
}

// runTx is the transactional consumer: every poll's outputs and input
// offsets in one transaction.
func runTx(ctx context.Context, c config) (int, error) {
	s, err := kgo.NewGroupTransactSession(append(c.opts(),
		kgo.TransactionalID(c.group),
		kgo.TransactionTimeout(10*time.Second))...) // franz-go asks for stable offsets (KIP-447) by itself
	if err != nil {
		return 0, err
	}
	defer s.Close()
	stopAt, err := end(ctx, s.Client(), c.in)
	if err != nil {
		return 0, err
	}
	n, next := 0, int64(0)
	for next < stopAt {
		fs := s.PollRecords(ctx, 1000)
		if err := fs.Err0(); err != nil {
			return n, fmt.Errorf("poll: %w", err)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return n, fmt.Errorf("begin: %w", err)
		}
		var (
			mu   sync.Mutex
			perr error
		)
		last := int64(-1)
		for _, r := range recs {
			s.Produce(ctx, output(r), func(_ *kgo.Record, err error) {
				mu.Lock()
				if err != nil && perr == nil {
					perr = err
				}
				mu.Unlock()
			})
			last = r.Offset
			if r.Offset == c.crashAt {
				// The work is on the brokers, inside the open
				// transaction; the kill comes before End.
				if err := s.Client().Flush(ctx); err != nil {
					return n, err
				}
				return n, crashed(ctx)
			}
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			return n, fmt.Errorf("end the transaction: %w", err)
		}
		mu.Lock()
		err = perr
		mu.Unlock()
		if err != nil {
			return n, fmt.Errorf("produce: %w", err)
		}
		if committed {
			n += len(recs)
			next = last + 1
		}
		// Not committed (a rebalance): aborted, and the session
		// fetches from the committed offsets again.
	}
	return n, nil
}
