package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

func newLagCmd(e *env) *cobra.Command {
	var name, topic string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Show how far each consumer is behind the head, per partition",
		Long: `Show every consumer's committed offset, the head and the lag (head minus
committed) per partition. MISSED counts records retention deleted before the
consumer read them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			ctx := cmd.Context()
			entries, err := db.Offsets().List(ctx, offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
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
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "only this consumer")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
