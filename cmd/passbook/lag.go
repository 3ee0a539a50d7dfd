package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

// noSuchConsumer is the error for a consumer name with no committed
// offset (on topic, if given), listing the names there are.
func noSuchConsumer(ctx context.Context, db *passbook.DB, name, topic string) error {
	all, err := db.Offsets().List(ctx, offsets.Filter{Topic: topic})
	if err != nil {
		return err
	}
	return noSuchConsumerAmong(name, topic, consumerNames(all))
}

// noSuchConsumerAmong is noSuchConsumer's error given the names of the
// consumers that have committed (on topic, if given).
func noSuchConsumerAmong(name, topic string, known []string) error {
	where := ""
	if topic != "" {
		where = " on topic " + topic
	}
	if len(known) == 0 {
		return fmt.Errorf("no consumer named %s: no consumer has committed an offset%s", name, where)
	}
	return fmt.Errorf("no consumer named %s has committed an offset%s (consumers: %s)", name, where, strings.Join(known, ", "))
}

// consumerNames lists the distinct consumers of entries, sorted.
func consumerNames(entries []offsets.Entry) []string {
	var names []string
	for _, en := range entries {
		if !slices.Contains(names, en.Consumer) {
			names = append(names, en.Consumer)
		}
	}
	slices.Sort(names)
	return names
}

func newLagCmd(e *env) *cobra.Command {
	var name, topic string
	var asJSON bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Show how far each consumer is behind the head, per partition",
		Long: `Show every consumer's committed offset, the head and the lag (head minus
committed) per partition. MISSED counts records retention deleted before the
consumer read them.

--consumer and --topic must name a consumer that has committed an offset
and a topic that exists: a name that matches nothing is an error (exit 1)
that lists the names there are, not an empty table.

Like every command that opens the data directory, lag refuses while
another process (passbook serve, a consume) has it open, naming its pid:
ask the running server instead with --brokers (its Kafka address), which
shows every consumer group as kafka-consumer-groups --describe does (the
committed offset, the log end offset and the lag per partition) — and works
against any Kafka cluster.

--json prints an array of objects with snake_case keys: consumer, topic,
partition, committed (the next offset to read; -1: nothing committed),
start (the log start offset), head, lag and missed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteLag(cmd.Context(), e, b, name, topic, asJSON)
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			ctx := cmd.Context()
			if topic != "" {
				if _, err := db.Topic(topic); err != nil {
					return fmt.Errorf("%w (passbook topic list shows the topics)", err)
				}
			}
			entries, err := db.Offsets().List(ctx, offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
			}
			if name != "" && len(entries) == 0 {
				return noSuchConsumer(ctx, db, name, topic)
			}
			type pair struct{ consumer, topic string }
			var pairs []pair
			seen := map[pair]bool{}
			for _, en := range entries {
				p := pair{en.Consumer, en.Topic}
				if !seen[p] {
					seen[p] = true
					pairs = append(pairs, p)
				}
			}
			var rows []consumer.PartitionLag
			for _, p := range pairs {
				t, err := db.Topic(p.topic)
				if err != nil {
					continue // offsets of a deleted topic
				}
				lag, err := consumer.Lag(ctx, db.Offsets(), t, p.consumer)
				if err != nil {
					return err
				}
				rows = append(rows, lag...)
			}
			return printLag(e, rows, asJSON)
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringVar(&name, "consumer", "", "only this consumer")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printLag prints lag's table (or JSON) of rows.
func printLag(e *env, rows []consumer.PartitionLag, asJSON bool) error {
	if asJSON {
		if rows == nil {
			rows = []consumer.PartitionLag{}
		}
		return writeJSON(e, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no consumer has committed an offset yet")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CONSUMER\tTOPIC\tPARTITION\tCOMMITTED\tHEAD\tLAG\tMISSED\t")
	for _, r := range rows {
		committed := "-"
		if r.Committed >= 0 {
			committed = thousands.Int(r.Committed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", r.Consumer, r.Topic, r.Partition, committed,
			thousands.Int(r.Head), thousands.Int(r.Lag), thousands.Int(r.Missed))
	}
	return tw.Flush()
}
