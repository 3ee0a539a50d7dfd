package main

import (
	"errors"
	"fmt"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

func newReplayCmd(e *env) *cobra.Command {
	var name, to string
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
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteReplay(cmd.Context(), e, b, args[0], name, target, partitions, create)
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
			moved, err := consumer.Seek(ctx, db.Offsets(), t, name, target, partitions)
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
	cmd.Flags().BoolVar(&create, "create", false, "make the consumer if it has committed nothing on the topic yet")
	return cmd
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
