package main

import (
	"fmt"
	"slices"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

func newReplayCmd(e *env) *cobra.Command {
	var name, to string
	var partitions []int32
	cmd := &cobra.Command{
		Use:   "replay TOPIC --consumer NAME --to earliest|OFFSET|TIME",
		Short: "Move a consumer's committed offset back (or forward) so it re-reads from there",
		Long: `Move a consumer's committed offsets on a topic: to earliest (re-read
everything kept), to an offset, to the first record at or after an RFC 3339
time, or to latest (skip to the head). Other consumers are not touched. It
refuses while the consumer is running.`,
		Example: `  passbook replay orders --consumer analytics-v2 --to earliest
  passbook replay orders --consumer billing --to 2026-11-28T00:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			ctx := cmd.Context()
			before := map[int32]int64{}
			for p := range t.Partitions() {
				if off, err := db.Offsets().Committed(ctx, offsets.Key{Consumer: name, Topic: t.Name(), Partition: int32(p)}); err == nil {
					before[int32(p)] = off
				}
			}
			moved, err := consumer.Seek(ctx, db.Offsets(), t, name, target, partitions)
			if err != nil {
				return err
			}
			ps := make([]int32, 0, len(moved))
			for p := range moved {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			for _, p := range ps {
				from := "nothing committed"
				if off, ok := before[p]; ok {
					from = thousands.Int(off)
				}
				fmt.Fprintf(e.stdout, "%s on %s/%d: %s -> %s\n", name, t.Name(), p, from, thousands.Int(moved[p]))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "consumer", "", "consumer name (required)")
	cmd.Flags().StringVar(&to, "to", "", "earliest, latest, an offset, or an RFC 3339 time (required)")
	cmd.Flags().Int32SliceVar(&partitions, "partition", nil, "only these partitions (default all)")
	return cmd
}
