package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
)

func newTopicCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "topic", Short: "Create, list, describe and delete topics"}
	cmd.AddCommand(newTopicCreateCmd(e), newTopicListCmd(e), newTopicDescribeCmd(e), newTopicDeleteCmd(e))
	return cmd
}

func newTopicCreateCmd(e *env) *cobra.Command {
	var (
		cfg        passbook.TopicConfig
		durability string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Example: `  passbook topic create orders
  passbook topic create clicks --partitions 6 --retention 168h --retention-bytes 1073741824`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := passbook.ValidTopicName(args[0]); err != nil {
				return usageError{err}
			}
			if durability != "" {
				d, err := storage.ParseDurability(durability)
				if err != nil {
					return usageError{err}
				}
				cfg.Durability = d
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			t, err := db.CreateTopic(args[0], cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "created topic %s with %d partition(s)\n", t.Name(), t.Partitions())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Partitions, "partitions", 1, "number of partitions")
	f.DurationVar(&cfg.RetentionAge, "retention", 0, "delete segments whose newest record is older than this (0: keep forever)")
	f.Int64Var(&cfg.RetentionBytes, "retention-bytes", 0, "per partition, delete the oldest segments past this size (0: no limit)")
	f.Int64Var(&cfg.SegmentBytes, "segment-bytes", 0, "roll segments at this size (default 128 MiB)")
	f.StringVar(&durability, "durability", "", "what an acknowledged append survives: os (process crash), fsync (power loss) or interval")
	f.StringVar(&cfg.CleanupPolicy, "cleanup-policy", "", "delete (default), compact or compact,delete")
	return cmd
}

func newTopicListCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			var infos []passbook.TopicInfo
			for _, t := range db.Topics() {
				infos = append(infos, t.Describe())
			}
			if asJSON {
				return writeJSON(e, infos)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tRECORDS\tBYTES\t")
			for _, info := range infos {
				var recs, bytes int64
				for _, p := range info.Partitions {
					recs += p.Records
					bytes += p.Bytes
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", info.Name, len(info.Partitions), thousands.Int(recs), thousands.Int(bytes))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newTopicDescribeCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's settings and each partition's start, head and size",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			info := t.Describe()
			if asJSON {
				return writeJSON(e, info)
			}
			c := info.Config
			retention := "forever"
			if c.RetentionAge > 0 {
				retention = c.RetentionAge.String()
			}
			if c.RetentionBytes > 0 {
				retention += ", at most " + thousands.Int(c.RetentionBytes) + " bytes per partition"
			}
			durability := c.Durability.String()
			if c.Durability == storage.DefaultDurability {
				durability = "os (the default: an acknowledged append survives a process crash)"
			}
			fmt.Fprintf(e.stdout, "topic %s\n  partitions:     %d\n  retention:      %s\n  cleanup policy: %s\n  durability:     %s\n\n",
				info.Name, len(info.Partitions), retention, c.CleanupPolicy, durability)
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "PARTITION\tSTART\tHEAD\tRECORDS\tBYTES\tSEGMENTS\t")
			for _, p := range info.Partitions {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t\n", p.Partition, thousands.Int(p.StartOffset), thousands.Int(p.Head),
					thousands.Int(p.Records), thousands.Int(p.Bytes), p.Segments)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newTopicDeleteCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic, its records and every consumer's offsets on it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := e.open()
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.DeleteTopic(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted topic %s\n", args[0])
			return nil
		},
	}
}

func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
