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
	cmd := &cobra.Command{Use: "offsets", Short: "List, set and delete committed offsets"}
	cmd.AddCommand(newOffsetsListCmd(e), newOffsetsSetCmd(e), newOffsetsDeleteCmd(e))
	return cmd
}

func newOffsetsListCmd(e *env) *cobra.Command {
	var name, topic string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List committed offsets (the next offset each consumer will read)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			entries, err := db.Offsets().List(cmd.Context(), offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
			}
			if asJSON {
				if entries == nil {
					entries = []offsets.Entry{}
				}
				return writeJSON(e, entries)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CONSUMER\tTOPIC\tPARTITION\tCOMMITTED\tUPDATED")
			for _, en := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", en.Consumer, en.Topic, en.Partition, thousands.Int(en.Offset), en.UpdatedAt.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "only this consumer")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newOffsetsSetCmd(e *env) *cobra.Command {
	var name, topic string
	var partition int32
	cmd := &cobra.Command{
		Use:   "set OFFSET --consumer NAME --topic TOPIC [--partition P]",
		Short: "Set a consumer's committed offset on one partition",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			off, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || off < 0 {
				return usagef("offset %q: want a whole number >= 0", args[0])
			}
			if name == "" || topic == "" {
				return usagef("--consumer and --topic are required")
			}
			db, t, err := e.topic(topic)
			if err != nil {
				return err
			}
			defer db.Close()
			moved, err := consumer.Seek(cmd.Context(), db.Offsets(), t, name, consumer.AtOffset(off), []int32{partition})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s on %s/%d: committed offset %s\n", name, topic, partition, thousands.Int(moved[partition]))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", 0, "partition")
	return cmd
}

func newOffsetsDeleteCmd(e *env) *cobra.Command {
	var name, topic string
	cmd := &cobra.Command{
		Use:   "delete --consumer NAME [--topic TOPIC]",
		Short: "Forget a consumer's committed offsets (it starts over from its --from next time)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return usagef("--consumer is required")
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			n, err := db.Offsets().Delete(cmd.Context(), offsets.Filter{Consumer: name, Topic: topic})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted %d committed offset(s) of %s\n", n, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	return cmd
}
