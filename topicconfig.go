package passbook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/vfs"
)

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

// DefaultTopicConfig is the configuration new topics start from: the
// defaults set while running (SetDefaultTopicConfig), over
// Options.Topic — what Kafka calls the broker's log.* defaults.
func (db *DB) DefaultTopicConfig() TopicConfig {
	db.mu.RLock()
	c := mergeConfig(db.defaults, db.o.Topic)
	db.mu.RUnlock()
	c.Other = maps.Clone(c.Other)
	return c
}

// SetTopicDefaults are the defaults SetDefaultTopicConfig set: zero fields
// were not set, and take Options.Topic's.
func (db *DB) SetTopicDefaults() TopicConfig {
	db.mu.RLock()
	defer db.mu.RUnlock()
	c := db.defaults
	c.Other = maps.Clone(c.Other)
	return c
}

// SetDefaultTopicConfig changes the defaults new topics start from, over
// Options.Topic, as Kafka's dynamic broker configs (log.retention.ms, …)
// do: alter gets a copy of those set so far (zero fields are not set) and
// changes them. They are checked as CreateTopic checks a topic's; with
// validateOnly nothing more is done. Otherwise they are written to
// topic-defaults.json in the data directory (atomically, fsync'd) and
// apply to every topic created from then on, across restarts; the topics
// that exist keep their settings (passbook writes a topic's settings
// whole into its topic.json when it is created). Partitions and
// Durability cannot be set this way.
func (db *DB) SetDefaultTopicConfig(ctx context.Context, validateOnly bool, alter func(*TopicConfig) error) (TopicConfig, error) {
	if err := ctx.Err(); err != nil {
		return TopicConfig{}, err
	}
	db.alterMu.Lock()
	defer db.alterMu.Unlock()
	cur := db.SetTopicDefaults()
	next := cur
	next.Other = maps.Clone(cur.Other)
	if err := alter(&next); err != nil {
		return cur, err
	}
	if next.Partitions != cur.Partitions || next.Durability != cur.Durability {
		return cur, fmt.Errorf("%w: the default partition count and durability are serve's flags", ErrInvalidConfig)
	}
	if len(next.Other) == 0 {
		next.Other = nil
	}
	merged := mergeConfig(next, db.o.Topic)
	if err := merged.validate(); err != nil {
		return cur, err
	}
	if err := merged.validateNew(db.o.MinSegmentBytes); err != nil {
		return cur, err
	}
	if validateOnly {
		return next, nil
	}
	b, _ := json.MarshalIndent(topicDefaultsFile{Format: 1, Config: next}, "", "  ")
	if err := vfs.WriteFileAtomic(db.fs, db.dir, layout.TopicDefaults, append(b, '\n')); err != nil {
		return cur, fmt.Errorf("passbook: set topic defaults: %w", err)
	}
	db.mu.Lock()
	db.defaults = next
	db.mu.Unlock()
	db.o.Logger.Info("set topic defaults")
	return next, nil
}

// topicDefaultsFile is topic-defaults.json.
type topicDefaultsFile struct {
	Format int         `json:"format"`
	Config TopicConfig `json:"config"`
}

// loadTopicDefaults reads topic-defaults.json, if there is one.
func (db *DB) loadTopicDefaults() error {
	b, err := vfs.ReadFile(db.fs, filepath.Join(db.dir, layout.TopicDefaults))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("passbook: read %s: %w", layout.TopicDefaults, err)
	}
	var f topicDefaultsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("passbook: read %s: %w", layout.TopicDefaults, err)
	}
	if f.Format != 1 {
		return fmt.Errorf("passbook: read %s: unknown format %d", layout.TopicDefaults, f.Format)
	}
	db.defaults = f.Config
	return nil
}
