package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumers over the Kafka protocol: a consumer name is a consumer group
// id; its committed offsets are the group's (OffsetFetch, OffsetCommit),
// and moving them is refused while the group has live members, as
// kafka-consumer-groups --reset-offsets refuses.

// errLiveMembers is why replay, offsets set and offsets delete refuse a
// group that has members.
var errLiveMembers = errors.New("the consumer group has live members")

// unknownPartition is the data directory's error for a partition the
// topic does not have.
func unknownPartition(ext *topicExtent, p int32) error {
	return fmt.Errorf("%w: topic %s has no partition %d (it has %d)", passbook.ErrUnknownPartition, ext.name, p, ext.partitions)
}

// committed is every committed offset of group (all groups when ""), on
// topic (all when ""), sorted by consumer, topic and partition.
// UpdatedAt is zero: OffsetFetch does not tell it.
func (c *cluster) committed(ctx context.Context, group, topic string) ([]offsets.Entry, error) {
	var groups []string
	if group != "" {
		groups = []string{group}
	} else {
		listed, err := c.adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list consumer groups: %w", err)
		}
		groups = listed.Groups()
	}
	if len(groups) == 0 {
		return nil, nil
	}
	fetched := c.adm.FetchManyOffsets(ctx, groups...)
	var out []offsets.Entry
	for _, g := range groups {
		r, ok := fetched[g]
		if !ok {
			continue
		}
		if errors.Is(r.Err, kerr.GroupIDNotFound) {
			continue
		}
		if r.Err != nil {
			return nil, fmt.Errorf("committed offsets of %s: %w", g, r.Err)
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 || (topic != "" && o.Topic != topic) {
				return
			}
			out = append(out, offsets.Entry{
				Key:    offsets.Key{Consumer: g, Topic: o.Topic, Partition: o.Partition},
				Offset: o.At, Metadata: o.Metadata,
			})
		})
	}
	slices.SortFunc(out, func(a, b offsets.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// refuseLive refuses to move group's offsets while it has members, of
// the classic protocol or of KIP-848's (which DescribeGroups shows as
// Dead: ConsumerGroupDescribe describes them).
func (c *cluster) refuseLive(ctx context.Context, group, what string) error {
	dg, err := c.adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe consumer group %s: %w", group, err)
	}
	g, ok := dg[group]
	if !ok || errors.Is(g.Err, kerr.GroupIDNotFound) || len(g.Members) == 0 {
		return c.refuseLiveConsumer(ctx, group, what)
	}
	if g.Err != nil {
		return fmt.Errorf("describe consumer group %s: %w", group, g.Err)
	}
	var who []string
	for _, m := range g.Members {
		who = append(who, m.ClientID+"@"+strings.TrimPrefix(m.ClientHost, "/"))
	}
	return fmt.Errorf("%w: %s has %s (%s, %s); %s changes a group's offsets only while it is empty, as kafka-consumer-groups --reset-offsets does: stop its consumers first",
		errLiveMembers, group, plural(len(g.Members), "member"), g.State, strings.Join(who, ", "), what)
}

// refuseLiveConsumer refuses to move a KIP-848 group's offsets while it
// has members; a cluster without ConsumerGroupDescribe has none.
func (c *cluster) refuseLiveConsumer(ctx context.Context, group, what string) error {
	if !c.supports(ctx, kmsg.ConsumerGroupDescribe) {
		return nil
	}
	dg, err := c.adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe consumer group %s: %w", group, err)
	}
	g, ok := dg[group]
	if !ok || errors.Is(g.Err, kerr.GroupIDNotFound) || len(g.Members) == 0 {
		return nil
	}
	if g.Err != nil {
		return fmt.Errorf("describe consumer group %s: %w", group, g.Err)
	}
	var who []string
	for _, m := range g.Members {
		who = append(who, m.ClientID+"@"+strings.TrimPrefix(m.ClientHost, "/"))
	}
	return fmt.Errorf("%w: %s has %s (%s, consumer protocol, %s); %s changes a group's offsets only while it is empty, as kafka-consumer-groups --reset-offsets does: stop its consumers first",
		errLiveMembers, group, plural(len(g.Members), "member"), g.State, strings.Join(who, ", "), what)
}

// commit commits offs for group on topic as an admin (no generation:
// Kafka takes it only while the group has no members).
func (c *cluster) commit(ctx context.Context, group, topic string, offs map[int32]int64) error {
	to := kadm.Offsets{}
	for p, at := range offs {
		to.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	resp, err := c.adm.CommitOffsets(ctx, group, to)
	if err == nil {
		err = resp.Error()
	}
	switch {
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.RebalanceInProgress):
		return fmt.Errorf("%w: %s (a consumer joined it): %w", errLiveMembers, group, err)
	case err != nil:
		return fmt.Errorf("commit offsets of %s on %s: %w", group, topic, err)
	}
	return nil
}

// startParts takes a consumer.Start apart: its kind ("earliest",
// "latest", "offset", "time") and its offset or time.
func startParts(s consumer.Start) (kind string, off int64, t time.Time) {
	str := s.String()
	switch str {
	case "earliest", "latest":
		return str, 0, time.Time{}
	}
	if n, err := strconv.ParseInt(str, 10, 64); err == nil {
		return "offset", n, time.Time{}
	}
	t, _ = time.Parse(time.RFC3339Nano, str)
	return "time", 0, t
}

// targets finds where s points on each of parts (all when nil) of ext,
// before anything is moved: an offset outside a partition is a
// *consumer.RangeError, an unknown partition a usage error.
func (c *cluster) targets(ctx context.Context, ext *topicExtent, s consumer.Start, parts []int32) (map[int32]int64, error) {
	parts = ext.partsOf(parts)
	seen := map[int32]bool{}
	for _, p := range parts {
		if p < 0 || int(p) >= ext.partitions {
			return nil, usageError{fmt.Errorf("--partition: %w", unknownPartition(ext, p))}
		}
		if seen[p] {
			return nil, usageError{&consumer.PartitionError{Topic: ext.name, Partition: p, Partitions: ext.partitions, Duplicate: true}}
		}
		seen[p] = true
	}
	kind, off, t := startParts(s)
	var byTime []int64
	if kind == "time" {
		var err error
		if byTime, err = c.offsetForTime(ctx, ext, t); err != nil {
			return nil, err
		}
	}
	out := map[int32]int64{}
	for _, p := range parts {
		start, head := ext.start[p], ext.head[p]
		switch kind {
		case "earliest":
			out[p] = start
		case "latest":
			out[p] = head
		case "time":
			out[p] = byTime[p]
		default:
			if off < start || off > head {
				return nil, &consumer.RangeError{Topic: ext.name, Partition: p, Offset: off, Start: start, Head: head}
			}
			out[p] = off
		}
	}
	return out, nil
}

func remoteLag(ctx context.Context, e *env, b *brokerFlags, name, topic string, asJSON bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if topic != "" {
		if _, err := c.extent(ctx, topic); err != nil {
			if errors.Is(err, passbook.ErrUnknownTopic) {
				return fmt.Errorf("%w: %s (passbook topic list shows the topics)", passbook.ErrUnknownTopic, topic)
			}
			return err
		}
	}
	entries, err := c.committed(ctx, name, topic)
	if err != nil {
		return err
	}
	if name != "" && len(entries) == 0 {
		all, err := c.committed(ctx, "", topic)
		if err != nil {
			return err
		}
		return noSuchConsumerAmong(name, topic, consumerNames(all))
	}
	type pair struct{ consumer, topic string }
	var pairs []pair
	got := map[pair]map[int32]int64{}
	for _, en := range entries {
		p := pair{en.Consumer, en.Topic}
		if got[p] == nil {
			got[p] = map[int32]int64{}
			pairs = append(pairs, p)
		}
		got[p][en.Partition] = en.Offset
	}
	extents := map[string]*topicExtent{}
	var rows []consumer.PartitionLag
	for _, p := range pairs {
		ext, ok := extents[p.topic]
		if !ok {
			ext, err = c.extent(ctx, p.topic)
			if errors.Is(err, passbook.ErrUnknownTopic) {
				continue // offsets of a deleted topic
			}
			if err != nil {
				return err
			}
			extents[p.topic] = ext
		}
		for part := range ext.partitions {
			committed, ok := got[p][int32(part)]
			if !ok {
				committed = -1
			}
			rows = append(rows, consumer.NewPartitionLag(p.consumer, p.topic, int32(part), committed, ext.start[part], ext.head[part]))
		}
	}
	return printLag(e, rows, asJSON)
}

func remoteOffsetsList(ctx context.Context, e *env, b *brokerFlags, name, topic string, asJSON bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	entries, err := c.committed(ctx, name, topic)
	if err != nil {
		return err
	}
	return printOffsets(e, entries, asJSON)
}

func remoteOffsetsSet(ctx context.Context, e *env, b *brokerFlags, name, topic string, partition int32, off int64) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ext, err := c.extent(ctx, topic)
	if err != nil {
		return err
	}
	moved, err := c.targets(ctx, ext, consumer.AtOffset(off), []int32{partition})
	if err != nil {
		return asUsage(err, "")
	}
	if err := c.refuseLive(ctx, name, "offsets set"); err != nil {
		return err
	}
	if err := c.commit(ctx, name, topic, moved); err != nil {
		return err
	}
	printSet(e, name, topic, partition, moved[partition])
	return nil
}

func remoteReplay(ctx context.Context, e *env, b *brokerFlags, topic, name string, to consumer.Start, iso storage.Isolation, partitions []int32, create bool) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ext, err := c.extent(ctx, topic)
	if err != nil {
		return err
	}
	for _, p := range partitions {
		if p < 0 || int(p) >= ext.partitions {
			return usageError{fmt.Errorf("--partition: %w", unknownPartition(ext, p))}
		}
	}
	entries, err := c.committed(ctx, name, topic)
	if err != nil {
		return err
	}
	before := map[int32]int64{}
	for _, en := range entries {
		before[en.Partition] = en.Offset
	}
	if len(before) == 0 && !create {
		all, err := c.committed(ctx, "", topic)
		if err != nil {
			return err
		}
		return fmt.Errorf("%w; to start a new consumer there, pass --create", noSuchConsumerAmong(name, topic, consumerNames(all)))
	}
	moved, err := c.targets(ctx, ext, to, partitions)
	if err != nil {
		return asUsage(err, "--to")
	}
	if kind, _, _ := startParts(to); kind == "latest" {
		// Where the group's reads end for its isolation (the last
		// stable offset read committed), as on a data directory.
		ends, err := c.readable(ctx, ext, iso)
		if err != nil {
			return err
		}
		for p := range moved {
			moved[p] = ends[p]
		}
	}
	if err := c.refuseLive(ctx, name, "replay"); err != nil {
		return err
	}
	if err := c.commit(ctx, name, topic, moved); err != nil {
		return err
	}
	printMoved(e, name, topic, before, moved)
	return nil
}

// remoteOffsetsDelete deletes a group's committed offsets: the whole
// group by DeleteGroups when that is all of them, else the topic's by
// OffsetDelete (passbook serve and Kafka 2.4+ answer it; a server that
// does not is refused, saying what to do instead). Both refuse a group
// with members.
func remoteOffsetsDelete(ctx context.Context, e *env, b *brokerFlags, name, topic string) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	all, err := c.committed(ctx, name, "")
	if err != nil {
		return err
	}
	var mine []offsets.Entry
	for _, en := range all {
		if topic == "" || en.Topic == topic {
			mine = append(mine, en)
		}
	}
	if len(mine) > 0 {
		if err := c.refuseLive(ctx, name, "offsets delete"); err != nil {
			return err
		}
	}
	switch {
	case len(mine) == 0:
	case len(mine) == len(all):
		resp, err := c.adm.DeleteGroup(ctx, name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.NonEmptyGroup) {
			return fmt.Errorf("%w: %s (a consumer joined it)", errLiveMembers, name)
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("delete consumer group %s: %w", name, err)
		}
	default:
		if !c.supports(ctx, kmsg.OffsetDelete) {
			return fmt.Errorf("delete the offsets of %s on %s: these brokers do not answer OffsetDelete (Kafka's API key 47), which deletes one topic's offsets of a group that has others: delete the whole group (offsets delete without --topic), or move the offsets with offsets set", name, topic)
		}
		set := kadm.TopicsSet{}
		for _, en := range mine {
			set.Add(en.Topic, en.Partition)
		}
		resp, err := c.adm.DeleteOffsets(ctx, name, set)
		if err == nil {
			err = resp.Error()
		}
		if errors.Is(err, kerr.GroupSubscribedToTopic) || errors.Is(err, kerr.NonEmptyGroup) {
			return fmt.Errorf("%w: %s: %w", errLiveMembers, name, err)
		}
		if err != nil {
			return fmt.Errorf("delete the offsets of %s on %s: %w", name, topic, err)
		}
	}
	fmt.Fprintf(e.stdout, "deleted %s of %s\n", pluralInt(int64(len(mine)), "committed offset"), name)
	return nil
}

// supports reports whether every broker answers the API key.
func (c *cluster) supports(ctx context.Context, key kmsg.Key) bool {
	vs, err := c.adm.ApiVersions(ctx)
	if err != nil || len(vs) == 0 {
		return false
	}
	ok := true
	vs.Each(func(v kadm.BrokerApiVersions) {
		if _, has := v.KeyMaxVersion(int16(key)); !has {
			ok = false
		}
	})
	return ok
}
