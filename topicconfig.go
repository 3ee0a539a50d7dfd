package passbook

import (
	"context"
	"fmt"
	"maps"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/vfs"
)

// mergeKafkaConfig is mergeConfig for the settings Kafka's topic configs
// added: zero fields of c take d's.
func mergeKafkaConfig(c, d TopicConfig) TopicConfig {
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if c.MinCompactionLag == 0 {
		c.MinCompactionLag = d.MinCompactionLag
	}
	if c.MaxCompactionLag == 0 {
		c.MaxCompactionLag = d.MaxCompactionLag
	}
	if c.TimestampType == "" {
		c.TimestampType = d.TimestampType
	}
	if c.Compression == "" {
		c.Compression = d.Compression
	}
	if len(d.Other) > 0 {
		o := maps.Clone(d.Other)
		maps.Copy(o, c.Other)
		c.Other = o
	}
	return c
}

// AlterTopicConfig changes topic name's settings: alter gets a copy of
// the current ones and changes it. Partitions (see AddPartitions) and
// Durability cannot change. The new settings are checked as
// CreateTopic checks them; with validateOnly nothing more is done.
// Otherwise topic.json is replaced atomically (fsync'd, so the change
// survives a crash once AlterTopicConfig returns) and every partition
// takes the new settings live: the next append checks the new
// max.message.bytes and timestamp limits, the next retention pass and
// cleaning use the new retention and compaction settings, the active
// segment rolls at the new size and age. A failure changes nothing. It
// returns the settings as they are now.
//
// A *Topic obtained before keeps reporting the old settings from Config;
// DB.Topic returns one with the new.
func (db *DB) AlterTopicConfig(ctx context.Context, name string, validateOnly bool, alter func(*TopicConfig) error) (TopicConfig, error) {
	if err := ctx.Err(); err != nil {
		return TopicConfig{}, err
	}
	db.alterMu.Lock()
	defer db.alterMu.Unlock()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return TopicConfig{}, ErrClosed
	}
	t, ok := db.topics[name]
	if !ok {
		if err := ValidTopicName(name); err != nil {
			return TopicConfig{}, err
		}
		return TopicConfig{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	cur := t.Config()
	cfg := cur
	if err := alter(&cfg); err != nil {
		return cur, err
	}
	if cfg.Partitions != cur.Partitions {
		return cur, fmt.Errorf("%w: topic %s: the partition count changes with AddPartitions (CreatePartitions), not as a setting", ErrInvalidConfig, name)
	}
	if cfg.Durability != cur.Durability {
		return cur, fmt.Errorf("%w: topic %s: durability is fixed when the topic is created", ErrInvalidConfig, name)
	}
	if len(cfg.Other) == 0 {
		cfg.Other = nil
	}
	if err := cfg.validate(); err != nil {
		return cur, err
	}
	if err := cfg.validateNew(db.o.MinSegmentBytes); err != nil {
		return cur, err
	}
	so := cfg.storageOptions()
	if err := so.Validate(); err != nil {
		return cur, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if validateOnly {
		return cfg, nil
	}
	if err := vfs.WriteFileAtomic(db.fs, db.topicDir(name), layout.TopicFile, encodeTopic(cfg, t.id)); err != nil {
		return cur, fmt.Errorf("passbook: alter topic %s: %w", name, err)
	}
	for p, l := range t.parts {
		if l == nil { // fenced: it takes topic.json's settings when repaired and reopened
			continue
		}
		if err := l.Reconfigure(so); err != nil {
			// Only a partition closed under us: topic.json has the new
			// settings, which the next Open applies.
			return cfg, fmt.Errorf("passbook: alter topic %s partition %d: %w", name, p, err)
		}
	}
	nt := &Topic{name: t.name, id: t.id, cfg: cfg, parts: t.parts, fenced: maps.Clone(t.fenced)}
	nt.next.Store(t.next.Load())
	db.topics[name] = nt
	db.o.Logger.Info("altered topic config", "topic", name)
	return cfg, nil
}

// DefaultTopicConfig is the configuration new topics start from
// (Options.Topic): what Kafka calls the broker's log.* defaults.
func (db *DB) DefaultTopicConfig() TopicConfig {
	c := db.o.Topic
	c.Other = maps.Clone(c.Other)
	return c
}
