package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
)

func newTopicCmd(e *env) *cobra.Command {
	cmd := group(&cobra.Command{Use: "topic", Short: "Create, list, describe, grow, trim and delete topics"})
	cmd.AddCommand(newTopicCreateCmd(e), newTopicListCmd(e), newTopicDescribeCmd(e), newTopicDeleteCmd(e), newTopicCompactCmd(e),
		newTopicAlterCmd(e), newTopicTrimCmd(e), // topicalter.go
		newTopicConfigCmd(e)) // topicconfig.go
	return cmd
}

func newTopicCreateCmd(e *env) *cobra.Command {
	var (
		cfg        passbook.TopicConfig
		durability string
		internal   int64
		b          *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `Create a topic. Names are Kafka's: 1 to 249 of [a-zA-Z0-9._-], not starting
with "__" (Kafka's internal topics, such as __consumer_offsets) or "-" (it
would read as a flag).

--segment-bytes is at least 1 MiB (1048576), Kafka 4's floor for
segment.bytes: every segment keeps three files open (its log, index and
time index) for as long as it exists, so tiny segments would spend the
process's file descriptors a few records at a time. The same rule holds for
topics created through the HTTP API, Kafka's CreateTopics and the Go API.
--max-message-bytes is in [1, 268435456] (256 MiB).

Every value is checked before anything is created: a bad one exits 2 and
leaves the data directory as it was.`,
		Example: `  passbook topic create orders
  passbook topic create clicks --partitions 6 --retention 168h --retention-bytes 1073741824
  passbook topic create prices --cleanup-policy compact --max-message-bytes 65536`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if err := passbook.ValidNewTopicName(args[0]); err != nil {
				return usageError{err}
			}
			if durability != "" {
				d, err := storage.ParseDurability(durability)
				if err != nil {
					return usageError{err}
				}
				cfg.Durability = d
			}
			if err := checkTopicFlags(cmd, cfg); err != nil {
				return err
			}
			if cfg.TimestampAfterMax < 0 {
				cfg.TimestampAfterMax = passbook.NoTimestampLimit
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicCreate(cmd.Context(), e, b, cmd, args[0], cfg)
			}
			o := &passbook.Options{}
			if cmd.Flags().Changed("internal-segment-bytes") {
				if cmd.Flags().Changed("segment-bytes") || internal < 1 {
					return usagef("--internal-segment-bytes %d: want 1 or more, without --segment-bytes", internal)
				}
				cfg.SegmentBytes, o.MinSegmentBytes = internal, -1
			}
			db, err := e.openWith(o)
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			t, err := db.CreateTopic(args[0], cfg)
			if errors.Is(err, passbook.ErrInvalidConfig) || errors.Is(err, passbook.ErrInvalidName) {
				return usageError{err} // every value came from the command line
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "created topic %s with %s\n", t.Name(), plural(t.Partitions(), "partition"))
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	f := cmd.Flags()
	f.IntVar(&cfg.Partitions, "partitions", 1, "number of partitions, 1 to 10,000")
	f.DurationVar(&cfg.RetentionAge, "retention", 0, "delete segments whose newest record is older than this (0: keep forever)")
	f.Int64Var(&cfg.RetentionBytes, "retention-bytes", 0, "per partition, delete the oldest segments past this size (0: no limit)")
	f.Int64Var(&cfg.SegmentBytes, "segment-bytes", 0, "roll segments at this size, 1048576 to 2147483648 (default 128 MiB)")
	f.DurationVar(&cfg.SegmentAge, "segment-age", 0, "roll a segment this long after its first record, at least 1ms (default 168h; Kafka's segment.ms)")
	f.IntVar(&cfg.MaxRecordBytes, "max-message-bytes", 0, "largest record (key + value + headers), 1 to 268435456 (default 1 MiB; Kafka's max.message.bytes)")
	f.Int64Var(&internal, "internal-segment-bytes", 0, "segment bytes below the floor, for tests and demonstrations (Kafka's internal.segment.bytes)")
	f.MarkHidden("internal-segment-bytes")
	f.StringVar(&durability, "durability", "", "what an acknowledged append survives: os (process crash), fsync (power loss) or interval")
	f.StringVar(&cfg.CleanupPolicy, "cleanup-policy", "", "delete (default), compact or compact,delete")
	f.DurationVar(&cfg.DeleteRetention, "delete-retention", 0, "on a compacted topic, keep tombstones this long after compaction first sees them (default 24h)")
	f.DurationVar(&cfg.TimestampBeforeMax, "message-timestamp-before-max", 0, "refuse records stamped more than this before the server's clock (default: no limit; Kafka's message.timestamp.before.max.ms)")
	f.DurationVar(&cfg.TimestampAfterMax, "message-timestamp-after-max", 0, "refuse records stamped more than this after the server's clock; -1s: no limit (default 1h; Kafka's message.timestamp.after.max.ms)")
	return cmd
}

// checkTopicFlags refuses what topic create would otherwise accept and
// silently change or ignore: a usage error (exit 2) naming the flag.
func checkTopicFlags(cmd *cobra.Command, cfg passbook.TopicConfig) error {
	f := cmd.Flags()
	set := f.Changed
	switch {
	case set("partitions") && (cfg.Partitions < 1 || cfg.Partitions > passbook.MaxPartitions):
		return usagef("--partitions %d: want 1 to %s", cfg.Partitions, thousands.Int(passbook.MaxPartitions))
	case cfg.RetentionAge < 0:
		return usagef("--retention %v: want a duration of 0 (keep forever) or more", cfg.RetentionAge)
	case cfg.RetentionBytes < 0:
		return usagef("--retention-bytes %d: want 0 (no limit) or more", cfg.RetentionBytes)
	case set("segment-bytes") && (cfg.SegmentBytes < passbook.MinSegmentBytes || cfg.SegmentBytes > 2<<30):
		return usagef("--segment-bytes %d: want %s to %s (each segment keeps 3 files open: see --help)", cfg.SegmentBytes,
			thousands.Int(passbook.MinSegmentBytes), thousands.Int(2<<30))
	case set("segment-age") && cfg.SegmentAge < time.Millisecond:
		return usagef("--segment-age %v: want 1ms or more", cfg.SegmentAge)
	case set("max-message-bytes") && (cfg.MaxRecordBytes < 1 || cfg.MaxRecordBytes > passbook.MaxMaxRecordBytes):
		return usagef("--max-message-bytes %d: want 1 to %s", cfg.MaxRecordBytes, thousands.Int(passbook.MaxMaxRecordBytes))
	case set("delete-retention") && cfg.DeleteRetention <= 0:
		return usagef("--delete-retention %v: want a positive duration", cfg.DeleteRetention)
	case set("message-timestamp-before-max") && cfg.TimestampBeforeMax < time.Millisecond:
		return usagef("--message-timestamp-before-max %v: want 1ms or more", cfg.TimestampBeforeMax)
	case set("message-timestamp-after-max") && cfg.TimestampAfterMax >= 0 && cfg.TimestampAfterMax < time.Millisecond:
		return usagef("--message-timestamp-after-max %v: want 1ms or more, or a negative duration for no limit", cfg.TimestampAfterMax)
	}
	compacted := cfg.Compacted()
	if set("delete-retention") && !compacted {
		return usagef("--delete-retention applies only to a compacted topic (--cleanup-policy compact or compact,delete)")
	}
	if cfg.CleanupPolicy == passbook.CleanupCompact && (cfg.RetentionAge > 0 || cfg.RetentionBytes > 0) {
		return usagef("--retention and --retention-bytes do nothing with --cleanup-policy compact, which keeps every key's newest record (use compact,delete for both)")
	}
	return nil
}

func newTopicListCmd(e *env) *cobra.Command {
	var asJSON bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicList(cmd.Context(), e, b, asJSON)
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			var infos []passbook.TopicInfo
			for _, t := range db.Topics() {
				infos = append(infos, t.Describe())
			}
			return printTopicList(e, infos, asJSON)
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newTopicDescribeCmd(e *env) *cobra.Command {
	var asJSON bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's settings and each partition's start, head and size",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicDescribe(cmd.Context(), e, b, args[0], asJSON)
			}
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			return printTopicDescribe(e, t.Describe(), "", asJSON)
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printTopicList prints topic list's table (or JSON) of infos. A
// partition's Bytes below 0 is unknown (over Kafka, a broker without
// DescribeLogDirs): shown as "-".
func printTopicList(e *env, infos []passbook.TopicInfo, asJSON bool) error {
	if asJSON {
		return writeJSON(e, infos)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tRECORDS\tBYTES\t")
	for _, info := range infos {
		var recs, bytes int64
		for _, p := range info.Partitions {
			recs += p.Records
			if p.Bytes < 0 || bytes < 0 {
				bytes = -1
			} else {
				bytes += p.Bytes
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", info.Name, thousands.Int(len(info.Partitions)), thousands.Int(recs), known(bytes))
	}
	return tw.Flush()
}

// known is n with thousands separators, or "-" for a count below 0: one
// the Kafka protocol does not tell.
func known[T int | int64](n T) string {
	if n < 0 {
		return "-"
	}
	return thousands.Int(n)
}

// printTopicDescribe prints topic describe's settings and table (or
// JSON). durability overrides the shown durability ("" shows the
// topic's): over Kafka it is the server's, which the protocol does not
// tell.
func printTopicDescribe(e *env, info passbook.TopicInfo, durability string, asJSON bool) error {
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
	if durability == "" {
		durability = c.Durability.String()
		if c.Durability == storage.DefaultDurability {
			durability = "os (the default: an acknowledged append survives a process crash)"
		}
	}
	policy := c.CleanupPolicy
	if c.Compacted() {
		keep := "24h0m0s"
		if c.DeleteRetention > 0 {
			keep = c.DeleteRetention.String()
		}
		policy += " (tombstones kept " + keep + ")"
	}
	fmt.Fprintf(e.stdout, "topic %s\n  partitions:     %d\n  retention:      %s\n  cleanup policy: %s\n  durability:     %s\n\n",
		info.Name, len(info.Partitions), retention, policy, durability)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PARTITION\tSTART\tHEAD\tRECORDS\tBYTES\tSEGMENTS\t")
	for _, p := range info.Partitions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", p.Partition, thousands.Int(p.StartOffset), thousands.Int(p.Head),
			thousands.Int(p.Records), known(p.Bytes), known(p.Segments))
	}
	return tw.Flush()
}

func newTopicDeleteCmd(e *env) *cobra.Command {
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic, its records and every consumer's offsets on it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicDelete(cmd.Context(), e, b, args[0])
			}
			db, err := e.open()
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			if err := db.DeleteTopic(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted topic %s\n", args[0])
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	return cmd
}

func newTopicCompactCmd(e *env) *cobra.Command {
	var asJSON bool
	var b *brokerFlags
	cmd := &cobra.Command{
		Use:   "compact NAME",
		Short: "Compact a topic now: keep the newest record of each key in closed segments",
		Long: `Compact every partition of a topic whose cleanup policy is compact or
compact,delete, whatever its dirty ratio: closed segments are rewritten
keeping the newest record of each key, and tombstones kept longer than the
topic's delete retention since compaction first saw them are removed.
Offsets do not change: readers cross the gaps. The active segment is never
compacted. A background cleaner does the same whenever half of a
partition's closed bytes are new since the last compaction.`,
		Example: `  passbook topic create prices --cleanup-policy compact
  passbook topic compact prices`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			if ok, err := b.remote(cmd); err != nil {
				return err
			} else if ok {
				return usagef("topic compact works on a data directory: a server compacts a topic with cleanup.policy compact by itself (its cleaner runs when half of a partition's closed bytes are new); give --data to compact a data directory")
			}
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			began := time.Now()
			stats, err := t.Compact(cmd.Context())
			if err != nil {
				return err
			}
			el := time.Since(began)
			if asJSON {
				return writeJSON(e, stats)
			}
			var total storage.CompactStats
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "PARTITION\tBYTES BEFORE\tBYTES AFTER\tRECORDS REMOVED\tTOMBSTONES REMOVED\tKEYS\tSEGMENTS\tCLEANED TO\t")
			for p, st := range stats {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d → %d\t%s\t\n", p, thousands.Int(st.BytesBefore), thousands.Int(st.BytesAfter),
					thousands.Int(st.RecordsRemoved), thousands.Int(st.TombstonesRemoved), thousands.Int(st.Keys), st.Segments, st.SegmentsAfter, thousands.Int(st.CleanedTo))
				total.BytesBefore += st.BytesBefore
				total.BytesAfter += st.BytesAfter
				total.RecordsRemoved += st.RecordsRemoved
				total.TombstonesRemoved += st.TombstonesRemoved
				total.Keys += st.Keys
				total.Segments += st.Segments
				total.SegmentsAfter += st.SegmentsAfter
			}
			if len(stats) > 1 {
				fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t%s\t%d → %d\t\t\n", thousands.Int(total.BytesBefore), thousands.Int(total.BytesAfter),
					thousands.Int(total.RecordsRemoved), thousands.Int(total.TombstonesRemoved), thousands.Int(total.Keys), total.Segments, total.SegmentsAfter)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "compacted %s in %s: %s bytes of closed segments now %s (%s bytes/s)\n", t.Name(), el.Round(time.Millisecond),
				thousands.Int(total.BytesBefore), thousands.Int(total.BytesAfter), thousands.Float(float64(total.BytesBefore)/el.Seconds()))
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	b.hide(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each partition's compaction statistics as JSON")
	return cmd
}

func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
