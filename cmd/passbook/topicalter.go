package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topic alter and topic trim: Kafka's CreatePartitions and DeleteRecords,
// on a data directory or with --brokers.

func newTopicAlterCmd(e *env) *cobra.Command {
	var (
		partitions int
		b          *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "alter NAME --partitions N",
		Short: "Add partitions to a topic",
		Long: `Grow a topic to N partitions (Kafka's CreatePartitions, kafka-topics --alter
--partitions). The partitions it has keep their records and offsets; the new
ones are numbered on from the last and start empty. Partitions are never
removed: N must be above the topic's count, and at most 10,000.

Records with a key go to the partition Kafka's partitioner picks for the
new count from then on, so a key's records before and after may sit in
different partitions, as in Kafka. Consumer groups see the new partitions
at their next metadata refresh and rebalance onto them.

The change is durable when the command returns, and all or nothing: a crash
midway leaves the topic with its old count.`,
		Example: `  passbook topic alter orders --partitions 12
  passbook topic alter orders --partitions 12 --brokers localhost:9092`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			name := args[0]
			if err := passbook.ValidTopicName(name); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("partitions") {
				return usagef("--partitions: give the topic's new partition count")
			}
			if partitions < 1 || partitions > passbook.MaxPartitions {
				return usagef("--partitions %d: want 1 to %s", partitions, thousands.Int(passbook.MaxPartitions))
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicAlter(cmd.Context(), e, b, name, partitions)
			}
			db, t, err := e.topic(name)
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			was := t.Partitions()
			if _, err := db.AddPartitions(cmd.Context(), name, partitions); errors.Is(err, passbook.ErrInvalidPartitions) {
				return usageError{err}
			} else if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "topic %s has %s (was %s)\n", name, plural(partitions, "partition"), thousands.Int(was))
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().IntVar(&partitions, "partitions", 0, "the topic's new partition count, above its count and at most 10,000")
	return cmd
}

func remoteTopicAlter(ctx context.Context, e *env, b *brokerFlags, name string, partitions int) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ext, err := c.extent(ctx, name)
	if err != nil {
		return err
	}
	rs, err := c.adm.UpdatePartitions(ctx, partitions, name)
	if err != nil {
		return fmt.Errorf("add partitions to topic %s: %w", name, err)
	}
	r := rs[name]
	switch {
	case errors.Is(r.Err, kerr.InvalidPartitions):
		return usagef("%s: %s", r.Err, r.ErrMessage)
	case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
		return unknownTopic(name)
	case r.Err != nil && r.ErrMessage != "":
		return fmt.Errorf("add partitions to topic %s: %w: %s", name, r.Err, r.ErrMessage)
	case r.Err != nil:
		return fmt.Errorf("add partitions to topic %s: %w", name, r.Err)
	}
	fmt.Fprintf(e.stdout, "topic %s has %s (was %s)\n", name, plural(partitions, "partition"), thousands.Int(ext.partitions))
	return nil
}

func newTopicTrimCmd(e *env) *cobra.Command {
	var (
		partition int32
		before    string
		b         *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "trim NAME --partition P --before OFFSET",
		Short: "Delete a partition's records below an offset",
		Long: `Delete partition P's records below OFFSET (Kafka's DeleteRecords,
kafka-delete-records): its log start offset moves there for good. --before
head deletes every record it holds now. Offsets never change: the records
kept keep theirs, and new ones go on from the head.

A consumer whose committed offset is below the new start is told when it
next reads, as after retention, and its reset policy (earliest or latest)
applies. Segments wholly below the start are deleted; the rest of the one
that holds it stays on disk, hidden, until retention or a later trim passes
its end. The new start is fsync'd when the command returns.

A topic with cleanup policy compact refuses it (compaction deletes its
records, key by key); compact,delete allows it, as in Kafka.`,
		Example: `  passbook topic trim orders --partition 0 --before 1000
  passbook topic trim orders --partition 3 --before head --brokers localhost:9092`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			name := args[0]
			if err := passbook.ValidTopicName(name); err != nil {
				return usageError{err}
			}
			switch {
			case !cmd.Flags().Changed("partition"):
				return usagef("--partition: give the partition to trim")
			case partition < 0:
				return usagef("--partition %d: want 0 or more", partition)
			case before == "":
				return usagef("--before: give an offset, or head")
			}
			offset := int64(passbook.HighWatermark)
			if before != "head" {
				n, err := strconv.ParseInt(before, 10, 64)
				if err != nil || n < 0 {
					return usagef("--before %q: want an offset (0 or more) or head", before)
				}
				offset = n
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicTrim(cmd.Context(), e, b, name, partition, offset)
			}
			db, t, err := e.topic(name)
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			l, err := t.Partition(partition)
			if errors.Is(err, passbook.ErrUnknownPartition) {
				return usageError{err}
			} else if err != nil {
				return err
			}
			was := l.StartOffset()
			start, err := t.DeleteRecords(partition, offset)
			switch {
			case errors.Is(err, storage.ErrOutOfRange):
				return usagef("--before %s: past partition %d's head, %s (give at most %s; head deletes every record it holds)", before, partition,
					thousands.Int(l.Head()), thousands.Int(l.Head()))
			case errors.Is(err, passbook.ErrCompactOnly):
				return usageError{err}
			case err != nil:
				return err
			}
			printTrimmed(e, name, partition, was, start, l.Head())
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	f := cmd.Flags()
	f.Int32Var(&partition, "partition", 0, "the partition to trim")
	f.StringVar(&before, "before", "", "delete the records below this offset; head: all of them")
	return cmd
}

func printTrimmed(e *env, name string, p int32, was, start, head int64) {
	if start <= was {
		fmt.Fprintf(e.stdout, "topic %s partition %d starts at %s already: nothing deleted (%s kept)\n",
			name, p, thousands.Int(start), pluralInt(head-start, "record"))
		return
	}
	fmt.Fprintf(e.stdout, "topic %s partition %d starts at %s: %s deleted, %s kept\n",
		name, p, thousands.Int(start), pluralInt(start-was, "record"), thousands.Int(head-start))
}

func remoteTopicTrim(ctx context.Context, e *env, b *brokerFlags, name string, p int32, offset int64) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ext, err := c.extent(ctx, name)
	if err != nil {
		return err
	}
	if int(p) >= ext.partitions {
		return usagef("%s: topic %s has no partition %d (it has %d)", passbook.ErrUnknownPartition, name, p, ext.partitions)
	}
	was, head := ext.start[p], ext.head[p]
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: name, Partition: p, At: offset})
	rs, err := c.adm.DeleteRecords(ctx, os)
	if err != nil {
		return fmt.Errorf("delete records of topic %s partition %d: %w", name, p, err)
	}
	r, _ := rs.Lookup(name, p)
	switch {
	case errors.Is(r.Err, kerr.OffsetOutOfRange):
		return usagef("--before %d: past partition %d's head (high watermark), %s (give at most %s; head deletes every record it holds)", offset, p, thousands.Int(head), thousands.Int(head))
	case errors.Is(r.Err, kerr.PolicyViolation):
		return usagef("topic %s: %v (a topic with cleanup.policy compact keeps its records until compaction)", name, r.Err)
	case r.Err != nil:
		return fmt.Errorf("delete records of topic %s partition %d: %w", name, p, r.Err)
	}
	printTrimmed(e, name, p, was, r.LowWatermark, max(head, r.LowWatermark))
	return nil
}
