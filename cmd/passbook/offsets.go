package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

func newOffsetsCmd(e *env) *cobra.Command {
	cmd := group(&cobra.Command{Use: "offsets", Short: "List, set and delete committed offsets"})
	cmd.AddCommand(newOffsetsListCmd(e), newOffsetsSetCmd(e), newOffsetsDeleteCmd(e))
	return cmd
}

func newOffsetsListCmd(e *env) *cobra.Command {
	var name, topic string
	var asJSON bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List committed offsets (the next offset each consumer will read)",
		Long: `List committed offsets: per consumer, topic and partition, the next offset
the consumer will read, and when it was committed.

--json prints an array of objects with snake_case keys: consumer, topic,
partition, committed (the next offset to read), metadata (Kafka's commit
metadata, "" if none) and updated_at (RFC 3339, UTC).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteOffsetsList(cmd.Context(), e, b, name, topic, asJSON)
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			entries, err := db.Offsets().List(cmd.Context(), offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
			}
			return printOffsets(e, entries, asJSON)
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringVar(&name, "consumer", "", "only this consumer")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printOffsets prints offsets list's table (or JSON) of entries. A zero
// UpdatedAt is unknown (Kafka's OffsetFetch does not say when an offset
// was committed): "-", and "" in JSON.
func printOffsets(e *env, entries []offsets.Entry, asJSON bool) error {
	updated := func(en offsets.Entry, layout, none string) string {
		if en.UpdatedAt.IsZero() {
			return none
		}
		return en.UpdatedAt.UTC().Format(layout)
	}
	if asJSON {
		rows := make([]offsetJSON, 0, len(entries))
		for _, en := range entries {
			rows = append(rows, offsetJSON{en.Consumer, en.Topic, en.Partition, en.Offset, en.Metadata,
				updated(en, time.RFC3339Nano, "")})
		}
		return writeJSON(e, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tTOPIC\tPARTITION\tCOMMITTED\tUPDATED")
	for _, en := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", en.Consumer, en.Topic, en.Partition, thousands.Int(en.Offset), updated(en, time.RFC3339, "-"))
	}
	return tw.Flush()
}

// offsetJSON is one committed offset in offsets list --json.
type offsetJSON struct {
	Consumer  string `json:"consumer"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	Metadata  string `json:"metadata"`
	UpdatedAt string `json:"updated_at"`
}

func newOffsetsSetCmd(e *env) *cobra.Command {
	var name, topic string
	var partition int32
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "set OFFSET --consumer NAME --topic TOPIC [--partition P]",
		Short: "Set a consumer's committed offset on one partition",
		Long: `Set a consumer's committed offset on one partition: OFFSET is the next
offset it will read (the last one it processed + 1), 0 or more, within the
partition's [log start, head].

A committed offset is never negative. An argument such as -3 reads as a
flag; it is refused with that said, and so is -3 passed after -- (the
usual way to give an argument that starts with '-').`,
		Example: `  passbook offsets set 1500 --consumer billing --topic orders --partition 2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			off, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usagef("offset %q: want a whole number, 0 or more", args[0])
			}
			if off < 0 {
				return usagef("offset %d: a committed offset can't be negative (it is the next offset to read: 0 or more)", off)
			}
			if name == "" || topic == "" {
				return usagef("--consumer and --topic are required")
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteOffsetsSet(cmd.Context(), e, b, name, topic, partition, off)
			}
			db, t, err := e.topic(topic)
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			if _, err := t.Partition(partition); err != nil {
				return usageError{fmt.Errorf("--partition: %w", err)}
			}
			moved, err := consumer.Seek(cmd.Context(), db.Offsets(), t, name, consumer.AtOffset(off), []int32{partition})
			if err != nil {
				return asUsage(err, "")
			}
			printSet(e, name, topic, partition, moved[partition])
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", 0, "partition")
	return cmd
}

func newOffsetsDeleteCmd(e *env) *cobra.Command {
	var name, topic string
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "delete --consumer NAME [--topic TOPIC]",
		Short: "Forget a consumer's committed offsets (it starts over from its --from next time)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if name == "" {
				return usagef("--consumer is required")
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteOffsetsDelete(cmd.Context(), e, b, name, topic)
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			n, err := db.Offsets().Delete(cmd.Context(), offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted %s of %s\n", pluralInt(int64(n), "committed offset"), name)
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	return cmd
}

// printSet is offsets set's line.
func printSet(e *env, name, topic string, partition int32, off int64) {
	fmt.Fprintf(e.stdout, "%s on %s/%d: committed offset %s\n", name, topic, partition, thousands.Int(off))
}
