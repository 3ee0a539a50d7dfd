package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/kafka"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTopicConfigCmd is passbook topic config: a topic's Kafka configs,
// and changing them, in a data directory or over Kafka.
func newTopicConfigCmd(e *env) *cobra.Command {
	var (
		sets, dels []string
		asJSON     bool
		b          *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "config NAME [--set KEY=VALUE ...] [--delete KEY ...]",
		Short: "Show a topic's Kafka configs, or change them (live, and durable when it returns)",
		Long: `Show every Kafka topic config of a topic with its value and source
(default, or set for the topic), or change some: --set KEY=VALUE sets one,
--delete KEY puts one back to its default; the others keep their values.
Values are checked as Kafka checks them, and a bad one changes nothing.
Configs marked "no effect" mean nothing on one broker: they are kept and
reported (docs/kafka.md says why each does nothing).`,
		Example: `  passbook topic config orders
  passbook topic config orders --set retention.ms=86400000 --set cleanup.policy=compact,delete
  passbook topic config orders --delete retention.ms --brokers 127.0.0.1:9092`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			name := args[0]
			set := map[string]string{}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--set %q: want KEY=VALUE", kv)
				}
				if _, dup := set[k]; dup || slices.Contains(dels, k) {
					return usagef("--set %s: given twice", k)
				}
				if err := kafka.CheckTopicConfig(k, v); err != nil {
					return usageError{err}
				}
				set[k] = v
			}
			for _, k := range dels {
				if err := kafka.CheckTopicConfig(k, ""); err != nil && strings.Contains(err.Error(), "Unknown topic config") {
					return usageError{err}
				}
			}
			if ok, err := b.remote(cmd); ok || err != nil {
				if err != nil {
					return err
				}
				return remoteTopicConfig(cmd.Context(), e, b, name, set, dels, asJSON)
			}
			db, t, err := e.topic(name)
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			cfg := t.Config()
			if len(set)+len(dels) > 0 {
				if cfg, err = db.AlterTopicConfig(cmd.Context(), name, false, func(c *passbook.TopicConfig) error {
					return kafka.AlterTopicConfig(c, set, dels)
				}); err != nil {
					return err
				}
			}
			return printTopicConfig(e, kafka.TopicConfigEntries(cfg), asJSON)
		},
	}
	b = addBrokerFlags(cmd, e)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "set a Kafka topic config, KEY=VALUE (repeat for more)")
	cmd.Flags().StringArrayVar(&dels, "delete", nil, "put a Kafka topic config back to its default (repeat for more)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// remoteTopicConfig is topic config over Kafka: IncrementalAlterConfigs,
// then DescribeConfigs.
func remoteTopicConfig(ctx context.Context, e *env, b *brokerFlags, name string, set map[string]string, dels []string, asJSON bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(set)+len(dels) > 0 {
		var alters []kadm.AlterConfig
		for _, k := range dels {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
		for k, v := range set {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
		}
		rs, err := c.adm.AlterTopicConfigs(ctx, alters, name)
		if err != nil {
			return fmt.Errorf("alter the configs of topic %s: %w", name, err)
		}
		for _, r := range rs {
			if r.Err != nil {
				if r.ErrMessage != "" {
					return fmt.Errorf("alter the configs of topic %s: %w: %s", name, r.Err, r.ErrMessage)
				}
				return fmt.Errorf("alter the configs of topic %s: %w", name, r.Err)
			}
		}
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return fmt.Errorf("describe the configs of topic %s: %w", name, err)
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return unknownTopic(name)
		}
		return fmt.Errorf("describe the configs of topic %s: %w", name, err)
	}
	var entries []kafka.TopicConfigEntry
	for _, cf := range rc.Configs {
		entries = append(entries, kafka.TopicConfigEntry{Name: cf.Key, Value: cf.MaybeValue(),
			Default: cf.Source != kmsg.ConfigSourceDynamicTopicConfig, NoEffect: kafka.TopicConfigNoEffect(cf.Key)})
	}
	slices.SortFunc(entries, func(a, b kafka.TopicConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return printTopicConfig(e, entries, asJSON)
}

func printTopicConfig(e *env, entries []kafka.TopicConfigEntry, asJSON bool) error {
	if asJSON {
		return writeJSON(e, entries)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CONFIG\tVALUE\tSOURCE\t")
	for _, en := range entries {
		src := "topic"
		if en.Default {
			src = "default"
		}
		note := ""
		if en.NoEffect {
			note = "no effect on one broker"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", en.Name, en.Value, src, note)
	}
	return w.Flush()
}
