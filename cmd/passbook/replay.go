package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/passbook-log/passbook"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
)

func newReplayCmd(e *env) *cobra.Command {
	var name, to, isolation string
	var partitions []int32
	var create bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "replay TOPIC --consumer NAME --to earliest|OFFSET|TIME",
		Short: "Move a consumer's committed offset back (or forward) so it re-reads from there",
		Long: `Move a consumer's committed offsets on a topic: to earliest (re-read
everything kept), to an offset, to the first record at or after an RFC 3339
time, or to latest (skip to the head). Other consumers are not touched. It
refuses while the consumer is running.

A consumer that has committed nothing on the topic is refused, with the
names of those that have, so that a typo does not start a new consumer:
pass --create to make it (it then starts where --to says).

--to latest is where the consumer's reads end: with --isolation
read_committed (the default) each partition's last stable offset, so that
the records of a transaction still open are read once it commits; with
--isolation read_uncommitted the head.

With --brokers the consumer is a consumer group: replay resets its offsets
as kafka-consumer-groups --reset-offsets --execute does, and refuses (exit
1) while the group has live members.`,
		Example: `  passbook replay orders --consumer analytics-v2 --to earliest
  passbook replay orders --consumer billing --to 2026-11-28T00:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if name == "" {
				return usagef("--consumer NAME is required")
			}
			if to == "" {
				return usagef("--to is required: earliest, latest, an offset or an RFC 3339 time")
			}
			target, err := consumer.ParseStart(to)
			if err != nil {
				return usageError{err}
			}
			iso, err := consumer.ParseIsolation(isolation)
			if err != nil {
				return usageError{err}
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteReplay(cmd.Context(), e, b, args[0], name, target, iso, partitions, create)
			}
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			ctx := cmd.Context()
			for _, p := range partitions {
				if _, err := t.Partition(p); err != nil {
					return usageError{fmt.Errorf("--partition: %w", err)}
				}
			}
			before := map[int32]int64{}
			for p := range t.Partitions() {
				off, err := db.Offsets().Committed(ctx, offsets.Key{Consumer: name, Topic: t.Name(), Partition: int32(p)})
				if err == nil {
					before[int32(p)] = off
				} else if !errors.Is(err, offsets.ErrNotFound) {
					return err
				}
			}
			if len(before) == 0 && !create {
				err := noSuchConsumer(ctx, db, name, t.Name())
				return fmt.Errorf("%w; to start a new consumer there, pass --create", err)
			}
			var moved map[int32]int64
			if target.String() == "latest" && iso == storage.ReadUncommitted {
				moved, err = seekHeads(ctx, db, t, name, partitions)
			} else {
				moved, err = consumer.Seek(ctx, db.Offsets(), t, name, target, partitions) // latest: the last stable offset
			}
			if err != nil {
				return asUsage(err, "--to")
			}
			printMoved(e, name, t.Name(), before, moved)
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	cmd.Flags().StringVar(&to, "to", "", "earliest, latest, an offset, or an RFC 3339 time (required)")
	cmd.Flags().Int32SliceVar(&partitions, "partition", nil, "only these partitions (default all)")
	cmd.Flags().StringVar(&isolation, "isolation", "read_committed", "where --to latest is: read_committed (the last stable offset) or read_uncommitted (the head)")
	cmd.Flags().BoolVar(&create, "create", false, "make the consumer if it has committed nothing on the topic yet")
	return cmd
}

// seekHeads moves consumer name to the head of each partition (all, or
// those given): --to latest read uncommitted, past the records of open
// transactions. The partitions were checked; each move is consumer.Seek's.
func seekHeads(ctx context.Context, db *passbook.DB, t *passbook.Topic, name string, partitions []int32) (map[int32]int64, error) {
	if partitions == nil {
		for p := range t.Partitions() {
			partitions = append(partitions, int32(p))
		}
	}
	moved := map[int32]int64{}
	for _, p := range partitions {
		l, err := t.Partition(p)
		if err != nil {
			return moved, err
		}
		m, err := consumer.Seek(ctx, db.Offsets(), t, name, consumer.AtOffset(l.Head()), []int32{p})
		if err != nil {
			return moved, err
		}
		moved[p] = m[p]
	}
	return moved, nil
}

// printMoved is replay's lines: each partition moved, from where to where.
func printMoved(e *env, name, topic string, before, moved map[int32]int64) {
	for _, p := range sortedPartitions(moved) {
		from := "nothing committed"
		if off, ok := before[p]; ok {
			from = thousands.Int(off)
		}
		fmt.Fprintf(e.stdout, "%s on %s/%d: %s -> %s\n", name, topic, p, from, thousands.Int(moved[p]))
	}
}
