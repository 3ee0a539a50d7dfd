package passbook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// CheckAddPartitions reports why AddPartitions(name, total) would fail
// before touching anything, or nil: an unknown topic (ErrUnknownTopic), or
// a total not above the topic's count or above MaxPartitions
// (ErrInvalidPartitions). It is Kafka's CreatePartitions with
// validate_only.
func (db *DB) CheckAddPartitions(name string, total int) error {
	t, err := db.Topic(name)
	if err != nil {
		return err
	}
	return t.checkGrow(total)
}

func (t *Topic) checkGrow(total int) error {
	switch n := len(t.parts); {
	case total == n:
		return fmt.Errorf("%w: topic %s already has %s partitions", ErrInvalidPartitions, t.name, thousands.Int(int64(n)))
	case total < n:
		return fmt.Errorf("%w: topic %s has %s partitions; %s would not be an increase (partitions are never removed)",
			ErrInvalidPartitions, t.name, thousands.Int(int64(n)), thousands.Int(int64(total)))
	case total > MaxPartitions:
		return fmt.Errorf("%w: %s partitions: a topic has at most %s", ErrInvalidPartitions, thousands.Int(int64(total)), thousands.Int(MaxPartitions))
	}
	return nil
}

// AddPartitions grows topic name to total partitions, numbered on from
// its last; the records and offsets of those it has do not change. It is
// Kafka's CreatePartitions. Keyed records map to partitions by the new
// count from then on, as in Kafka (a key's records before and after may
// sit in different partitions).
//
// It is durable when it returns, and all or nothing across a crash: the
// new partitions are made first, and topic.json, replaced atomically
// (fsync'd), is what makes them part of the topic. A crash before that
// leaves directories past the topic's count that Open ignores (passbook
// verify notes them) and the next AddPartitions removes and makes anew.
//
// Appends and reads go on meanwhile. The *Topic returned, and every later
// DB.Topic, has the new count; a *Topic obtained before keeps its count.
func (db *DB) AddPartitions(ctx context.Context, name string, total int) (*Topic, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	db.alterMu.Lock()
	defer db.alterMu.Unlock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil, ErrClosed
	}
	t, ok := db.topics[name]
	if !ok {
		db.mu.Unlock()
		if err := ValidTopicName(name); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if err := t.checkGrow(total); err != nil {
		db.mu.Unlock()
		return nil, err
	}
	// Close waits for this (building) before closing the topics.
	db.building.Add(1)
	db.mu.Unlock()
	nt, err := db.grow(t, total)
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.building.Done()
	if err != nil {
		return nil, err
	}
	db.topics[name] = nt
	db.o.Logger.Info("added partitions", "topic", name, "from", len(t.parts), "to", total)
	return nt, nil
}

// grow makes partitions len(t.parts) … total−1 of t, then the topic.json
// that counts them, and returns the grown topic.
func (db *DB) grow(t *Topic, total int) (*Topic, error) {
	from := len(t.parts)
	cfg := t.cfg
	cfg.Partitions = total
	d := cfg.Durability
	if d == storage.DefaultDurability {
		d = db.o.Durability
	}
	added := make([]*storage.Log, total-from)
	errs := make([]error, total-from)
	parallel(total-from, func(i int) {
		p := from + i
		dir := layout.PartitionDir(db.dir, t.name, p)
		// Left by an AddPartitions a crash cut short: never part of
		// the topic, so nothing in it was acknowledged.
		if err := vfs.RemoveAll(db.fs, dir); err != nil {
			errs[i] = fmt.Errorf("remove unfinished partition %d: %w", p, err)
			return
		}
		o := cfg.storageOptions()
		o.FS, o.Durability, o.Now, o.Logger = db.fs, d, db.o.Now, db.o.Logger.With("topic", t.name, "partition", p)
		o.Files, o.Syncer, o.CallerLocked = db.files, db.syncer, true
		added[i], errs[i] = storage.Open(dir, &o)
	})
	undo := func() {
		for i, l := range added {
			if l != nil {
				l.Close()
			}
			vfs.RemoveAll(db.fs, layout.PartitionDir(db.dir, t.name, from+i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		undo()
		return nil, fmt.Errorf("passbook: add partitions to topic %s: %w", t.name, err)
	}
	if err := vfs.WriteFileAtomic(db.fs, db.topicDir(t.name), layout.TopicFile, encodeTopic(cfg, t.id)); err != nil {
		// The rename may have happened; a topic.json that counts
		// partitions whose directories are gone would fence them at
		// the next Open, so put back the old one, then remove them.
		if werr := vfs.WriteFileAtomic(db.fs, db.topicDir(t.name), layout.TopicFile, encodeTopic(t.cfg, t.id)); werr != nil {
			for _, l := range added {
				l.Close()
			}
			return nil, fmt.Errorf("passbook: add partitions to topic %s: %w (and putting back its topic.json: %w)", t.name, err, werr)
		}
		undo()
		return nil, fmt.Errorf("passbook: add partitions to topic %s: %w", t.name, err)
	}
	nt := &Topic{name: t.name, id: t.id, cfg: cfg, parts: append(slices.Clip(t.parts), added...), fenced: maps.Clone(t.fenced)}
	nt.next.Store(t.next.Load())
	return nt, nil
}
