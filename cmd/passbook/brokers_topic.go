package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The topic commands over the Kafka protocol: CreateTopics, Metadata,
// ListOffsets, DescribeConfigs, DescribeLogDirs and DeleteTopics.

// unknownTopic is the error for a topic the cluster does not have, as
// the data directory's (passbook.ErrUnknownTopic) with the same hint.
func unknownTopic(name string) error {
	return fmt.Errorf("%w: %s (create it with: passbook topic create %s)", passbook.ErrUnknownTopic, name, name)
}

// topicExtent is a topic's partitions, each one's log start offset and
// head, as ListOffsets answers.
type topicExtent struct {
	name        string
	partitions  int
	start, head []int64
}

// extent looks a topic up: an unknown topic is unknownTopic, a name no
// topic can have a usage error (as on a data directory).
func (c *cluster) extent(ctx context.Context, name string) (*topicExtent, error) {
	if err := passbook.ValidTopicName(name); err != nil {
		return nil, usageError{err}
	}
	exts, err := c.extents(ctx, name)
	if err != nil {
		return nil, err
	}
	ext, ok := exts[name]
	if !ok {
		return nil, unknownTopic(name)
	}
	return ext, nil
}

// extents looks topics up with one Metadata and two ListOffsets
// requests in all; a topic the cluster does not have is left out.
func (c *cluster) extents(ctx context.Context, names ...string) (map[string]*topicExtent, error) {
	md, err := c.adm.Metadata(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := map[string]*topicExtent{}
	var found []string
	for _, name := range names {
		td, ok := md.Topics[name]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", name, td.Err)
		}
		n := len(td.Partitions)
		out[name] = &topicExtent{name: name, partitions: n, start: make([]int64, n), head: make([]int64, n)}
		found = append(found, name)
	}
	if len(found) == 0 {
		return out, nil
	}
	for _, l := range []struct {
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		into func(*topicExtent) []int64
	}{
		{c.adm.ListStartOffsets, func(e *topicExtent) []int64 { return e.start }},
		{c.adm.ListEndOffsets, func(e *topicExtent) []int64 { return e.head }},
	} {
		lo, err := l.list(ctx, found...)
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list offsets: %w", err)
		}
		for _, ext := range out {
			into := l.into(ext)
			for p := range into {
				o, ok := lo.Lookup(ext.name, int32(p))
				if !ok {
					return nil, fmt.Errorf("list offsets of %s: no answer for partition %d", ext.name, p)
				}
				into[p] = o.Offset
			}
		}
	}
	return out, nil
}

// offsetForTime is, per partition, the first offset whose record is
// stamped at or after t; the head where there is none (as on a data
// directory).
func (c *cluster) offsetForTime(ctx context.Context, ext *topicExtent, t time.Time) ([]int64, error) {
	lo, err := c.adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), ext.name)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s after %s: %w", ext.name, t.Format(time.RFC3339), err)
	}
	out := make([]int64, ext.partitions)
	for p := range out {
		out[p] = ext.head[p]
		if o, ok := lo.Lookup(ext.name, int32(p)); ok && o.Offset >= 0 {
			out[p] = o.Offset
		}
	}
	return out, nil
}

// info is what topic list and describe show of a topic over Kafka: its
// config (from DescribeConfigs), its partitions' extents from ListOffsets,
// their sizes from DescribeLogDirs where the cluster answers it (else
// −1: shown as "-"). Segments are not in the protocol: −1.
func info(ext *topicExtent, cfg passbook.TopicConfig, sizes map[int32]int64) passbook.TopicInfo {
	info := passbook.TopicInfo{Name: ext.name}
	cfg.Partitions = ext.partitions
	info.Config = cfg
	for p := range ext.partitions {
		size, ok := sizes[int32(p)]
		if !ok {
			size = -1
		}
		info.Partitions = append(info.Partitions, passbook.PartitionInfo{
			Partition: int32(p), StartOffset: ext.start[p], Head: ext.head[p],
			Records: ext.head[p] - ext.start[p], Bytes: size, Segments: -1,
		})
	}
	return info
}

// sizes is each partition's bytes by DescribeLogDirs (the largest over
// the replicas), or nil when the cluster does not answer it. Every
// partition is named: a topic without partitions asks for none.
func (c *cluster) sizes(ctx context.Context, exts ...*topicExtent) map[string]map[int32]int64 {
	set := kadm.TopicsSet{}
	for _, ext := range exts {
		for p := range ext.partitions {
			set.Add(ext.name, int32(p))
		}
	}
	dirs, err := c.adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil
	}
	out := map[string]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if out[p.Topic] == nil {
				out[p.Topic] = map[int32]int64{}
			}
			if cur, ok := out[p.Topic][p.Partition]; !ok || p.Size > cur {
				out[p.Topic][p.Partition] = p.Size
			}
		})
	})
	return out
}

// topicConfig reads a topic's settings by DescribeConfigs.
func (c *cluster) topicConfig(ctx context.Context, name string) (passbook.TopicConfig, error) {
	cfgs, err := c.topicConfigs(ctx, name)
	return cfgs[name], err
}

// topicConfigs reads topics' settings by one DescribeConfigs into
// passbook.TopicConfigs (Durability is the server's: not in the protocol).
func (c *cluster) topicConfigs(ctx context.Context, names ...string) (map[string]passbook.TopicConfig, error) {
	rcs, err := c.adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("topic configs: %w", err)
	}
	out := map[string]passbook.TopicConfig{}
	for _, name := range names {
		rc, err := rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, fmt.Errorf("configs of %s: %w", name, err)
		}
		out[name] = topicConfigOf(rc.Configs)
	}
	return out, nil
}

// topicConfigOf reads Kafka's topic configs into a passbook.TopicConfig.
func topicConfigOf(configs []kadm.Config) passbook.TopicConfig {
	var cfg passbook.TopicConfig
	ms := func(v int64) time.Duration {
		if v < 0 || v > math.MaxInt64/int64(time.Millisecond) {
			return 0
		}
		return time.Duration(v) * time.Millisecond
	}
	cfg.CleanupPolicy = passbook.CleanupDelete
	for _, kv := range configs {
		if kv.Value == nil {
			continue
		}
		v := *kv.Value
		n, _ := strconv.ParseInt(v, 10, 64)
		switch kv.Key {
		case "cleanup.policy":
			cfg.CleanupPolicy = v
		case "retention.ms":
			cfg.RetentionAge = ms(n)
		case "retention.bytes":
			cfg.RetentionBytes = max(n, 0)
		case "segment.bytes":
			cfg.SegmentBytes = n
		case "segment.ms":
			cfg.SegmentAge = ms(n)
		case "max.message.bytes":
			cfg.MaxRecordBytes = int(n)
		case "delete.retention.ms":
			cfg.DeleteRetention = ms(n)
		case "message.timestamp.before.max.ms":
			cfg.TimestampBeforeMax = ms(n)
		case "message.timestamp.after.max.ms":
			if n == math.MaxInt64 {
				cfg.TimestampAfterMax = passbook.NoTimestampLimit
			} else {
				cfg.TimestampAfterMax = ms(n)
			}
		}
	}
	return cfg
}

// serverDurability is what topic describe shows as a topic's durability
// over Kafka, which has no such setting.
const serverDurability = "the server's (not told over the Kafka protocol)"

func remoteTopicList(ctx context.Context, e *env, b *brokerFlags, asJSON bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	names, err := c.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var sorted []string
	for _, t := range names.Sorted() {
		if !t.IsInternal {
			sorted = append(sorted, t.Topic)
		}
	}
	var infos []passbook.TopicInfo
	if len(sorted) > 0 {
		exts, err := c.extents(ctx, sorted...)
		if err != nil {
			return err
		}
		sorted = slices.DeleteFunc(sorted, func(name string) bool { return exts[name] == nil }) // deleted since the list
		cfgs, err := c.topicConfigs(ctx, sorted...)
		if err != nil {
			return err
		}
		listed := make([]*topicExtent, 0, len(sorted))
		for _, name := range sorted {
			listed = append(listed, exts[name])
		}
		sizes := c.sizes(ctx, listed...)
		for _, name := range sorted {
			infos = append(infos, info(exts[name], cfgs[name], sizes[name]))
		}
	}
	return printTopicList(e, infos, asJSON)
}

func remoteTopicDescribe(ctx context.Context, e *env, b *brokerFlags, name string, asJSON bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ext, err := c.extent(ctx, name)
	if err != nil {
		return err
	}
	cfg, err := c.topicConfig(ctx, name)
	if err != nil {
		return err
	}
	return printTopicDescribe(e, info(ext, cfg, c.sizes(ctx, ext)[name]), serverDurability, asJSON)
}

func remoteTopicDelete(ctx context.Context, e *env, b *brokerFlags, name string) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.extent(ctx, name); errors.Is(err, passbook.ErrUnknownTopic) {
		return fmt.Errorf("%w: %s", passbook.ErrUnknownTopic, name)
	} else if err != nil {
		return err
	}
	resp, err := c.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("%w: %s", passbook.ErrUnknownTopic, name)
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	fmt.Fprintf(e.stdout, "deleted topic %s\n", name)
	return nil
}

// remoteTopicCreate creates a topic by CreateTopics with Kafka's names
// for the flags' settings (checked already, as on a data directory).
func remoteTopicCreate(ctx context.Context, e *env, b *brokerFlags, cmd *cobra.Command, name string, cfg passbook.TopicConfig) error {
	set := cmd.Flags().Changed
	for _, f := range []string{"durability", "internal-segment-bytes"} {
		if set(f) {
			return usagef("--%s has no Kafka topic setting: it applies on a data directory (with --brokers the server decides)", f)
		}
	}
	configs := map[string]*string{}
	put := func(k string, v int64) {
		s := strconv.FormatInt(v, 10)
		configs[k] = &s
	}
	if cfg.RetentionAge > 0 {
		put("retention.ms", cfg.RetentionAge.Milliseconds())
	}
	if cfg.RetentionBytes > 0 {
		put("retention.bytes", cfg.RetentionBytes)
	}
	if set("segment-bytes") {
		put("segment.bytes", cfg.SegmentBytes)
	}
	if set("segment-age") {
		put("segment.ms", cfg.SegmentAge.Milliseconds())
	}
	if set("max-message-bytes") {
		put("max.message.bytes", int64(cfg.MaxRecordBytes))
	}
	if cfg.CleanupPolicy != "" {
		configs["cleanup.policy"] = &cfg.CleanupPolicy
	}
	if set("delete-retention") {
		put("delete.retention.ms", cfg.DeleteRetention.Milliseconds())
	}
	if set("message-timestamp-before-max") {
		put("message.timestamp.before.max.ms", cfg.TimestampBeforeMax.Milliseconds())
	}
	if set("message-timestamp-after-max") {
		put("message.timestamp.after.max.ms", passbook.TimestampLimitMs(cfg.TimestampAfterMax))
	}
	partitions := int32(max(cfg.Partitions, 1))
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.adm.CreateTopic(ctx, partitions, -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return fmt.Errorf("%w: %s", passbook.ErrTopicExists, name)
	case errors.Is(err, kerr.InvalidConfig), errors.Is(err, kerr.InvalidPartitions), errors.Is(err, kerr.InvalidTopicException),
		errors.Is(err, kerr.PolicyViolation), errors.Is(err, kerr.InvalidReplicationFactor):
		msg := resp.ErrMessage
		if msg == "" {
			msg = err.Error()
		}
		return usagef("create topic %s: %s", name, msg) // every value came from the command line
	case err != nil:
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	n := resp.NumPartitions
	if n <= 0 {
		n = partitions
	}
	fmt.Fprintf(e.stdout, "created topic %s with %s\n", name, plural(int(n), "partition"))
	return nil
}

// sortedPartitions is the keys of m, in order.
func sortedPartitions[V any](m map[int32]V) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
