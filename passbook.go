package passbook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// Options configure a DB. A nil or zero Options is valid.
type Options struct {
	// Durability is the default for topics that do not set their own
	// (default InOS: an append survives the process being killed).
	Durability Durability
	// Offsets configures the offset store (default: synchronous NORMAL,
	// a commit survives the process being killed).
	Offsets offsets.Options
	// Topic is the configuration AutoCreate and CreateTopic start from.
	Topic TopicConfig
	// FS is the file system for the logs (default the OS; tests use
	// vfs.NewMem). The offset store always uses the OS.
	FS     vfs.FS
	Logger *slog.Logger
	Now    func() time.Time
	// NoCreate opens only an existing data directory, for commands that
	// read: Open fails with an error matching ErrNoDataDir where dir (or
	// its topics/ or offsets.db) does not exist, and creates nothing in
	// it — a topic whose creation a crash interrupted is skipped, not
	// removed, and a missing partition directory is an error, not made
	// anew. It still takes the directory's lock (a reader never reads
	// while another process writes) and recovers a crashed partition's
	// tail as every Open does. CreateTopic and DeleteTopic work as usual.
	NoCreate bool
	// MinSegmentBytes is the smallest TopicConfig.SegmentBytes that
	// CreateTopic accepts: zero means MinSegmentBytes (1 MiB, Kafka 4's
	// floor for segment.bytes). Every segment has three files (log,
	// index, time index); their descriptors are bounded by
	// MaxOpenSegmentFiles, but tiny segments still cost a directory
	// entry, an open on each cold read and a roll's fsyncs a few records
	// at a time. Tests that want many segments set it negative (no
	// floor), as Kafka's own tests use internal.segment.bytes.
	MinSegmentBytes int64
	// MaxOpenSegmentFiles bounds the file descriptors that segment files
	// (each segment's .log, .index and .timeindex) hold, across every
	// partition of the data directory: past it, the least recently used
	// files nobody is reading are closed and opened again on their next
	// use (storage.FileCache). Zero means storage.DefaultMaxOpenFiles
	// (1,000); negative means no bound (every segment keeps its files
	// open, as a Kafka broker does). Kafka has no such setting: it needs
	// a ulimit -n above three descriptors per segment.
	MaxOpenSegmentFiles int
}

// MinSegmentBytes is the default floor of a new topic's SegmentBytes: see
// Options.MinSegmentBytes.
const MinSegmentBytes = 1 << 20

// DB is an open data directory: topics and the offset store.
type DB struct {
	dir     string
	o       Options
	fs      vfs.FS
	lock    io.Closer
	offsets *offsets.SQLite
	files   *storage.FileCache // every partition's segment files
	syncer  *storage.Syncer    // every partition's group commit: one commit window fsyncs them all

	mu     sync.RWMutex
	topics map[string]*Topic
	closed bool
	// creating holds the names of topics being created or deleted
	// outside mu; building counts those, and Close waits for them.
	creating map[string]bool
	building sync.WaitGroup
	// alterMu serializes AddPartitions with each other and with
	// DeleteTopic (partitions.go).
	alterMu sync.Mutex
	// defaults are the topic defaults set while running (Kafka's dynamic
	// broker configs), kept in topic-defaults.json; under mu
	// (topicconfig.go).
	defaults TopicConfig
}

// Open opens (creating if needed) the data directory dir. One process at a
// time may have it open: a second gets an error naming the holder's pid.
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.FS == nil {
		o.FS = vfs.OS()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Durability == storage.DefaultDurability {
		o.Durability = storage.InOS
	}
	if o.MinSegmentBytes == 0 {
		o.MinSegmentBytes = MinSegmentBytes
	}
	if err := o.Topic.validate(); err != nil {
		return nil, err
	}
	switch {
	case o.MaxOpenSegmentFiles == 0:
		o.MaxOpenSegmentFiles = storage.DefaultMaxOpenFiles
	case o.MaxOpenSegmentFiles < 0:
		o.MaxOpenSegmentFiles = 0
	}
	db := &DB{dir: dir, o: o, fs: o.FS, topics: map[string]*Topic{}, creating: map[string]bool{},
		files: storage.NewFileCache(o.MaxOpenSegmentFiles), syncer: storage.NewSyncer(0)}
	if o.NoCreate {
		return db.openExisting()
	}
	// MkdirAll may create the data directory, and parents: their new
	// entries must survive a power loss like everything under them (the
	// partitions sync only their own).
	topics := layout.TopicsDir(dir)
	top := topics // the highest directory MkdirAll creates
	for p := filepath.Dir(top); p != top; p = filepath.Dir(top) {
		if _, err := db.fs.Stat(p); err == nil {
			break
		}
		top = p
	}
	if err := db.fs.MkdirAll(topics, 0o755); err != nil {
		return nil, fmt.Errorf("passbook: create %s: %w", dir, err)
	}
	for d := topics; ; d = filepath.Dir(d) {
		if err := db.fs.SyncDir(filepath.Dir(d)); err != nil {
			return nil, fmt.Errorf("passbook: create %s: %w", dir, err)
		}
		if d == top {
			break
		}
	}
	return db.load()
}

// openExisting is Open with Options.NoCreate.
func (db *DB) openExisting() (*DB, error) {
	for _, name := range []string{layout.Topics, layout.Offsets} {
		if _, err := db.fs.Stat(filepath.Join(db.dir, name)); errors.Is(err, fs.ErrNotExist) {
			if name == layout.Topics {
				return nil, fmt.Errorf("%w at %s", ErrNoDataDir, db.dir)
			}
			return nil, fmt.Errorf("%w at %s (it has topics/ but no offsets.db)", ErrNoDataDir, db.dir)
		} else if err != nil {
			return nil, fmt.Errorf("passbook: open %s: %w", db.dir, err)
		}
	}
	return db.load()
}

// load locks the data directory and opens the offset store and every
// topic.
func (db *DB) load() (*DB, error) {
	dir, o := db.dir, db.o
	lock, err := db.fs.Lock(layout.LockFile(dir))
	if err != nil {
		var le *vfs.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("passbook: data directory %s is in use by process %d; stop it, or reach it through its server (passbook serve) instead: %w", dir, le.PID, err)
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("passbook: data directory %s is not writable by this user: every command that opens it takes its lock (%s) and may recover a crashed partition, even to read; run as the directory's owner, or copy it (cp -a) and use the copy (passbook dump reads segment files without opening the directory): %w",
				dir, layout.LockFile(dir), err)
		}
		return nil, fmt.Errorf("passbook: open %s: %w", dir, err)
	}
	db.lock = lock
	oo := o.Offsets
	if oo.Now == nil {
		oo.Now = o.Now
	}
	if oo.OnUnavailable == nil {
		oo.OnUnavailable = func(err error) {
			o.Logger.Error("offset store unavailable: every commit is refused until a restart", "err", err)
		}
	}
	if db.offsets, err = offsets.Open(layout.OffsetsFile(dir), &oo); err != nil {
		lock.Close()
		return nil, fmt.Errorf("passbook: open offset store: %w", err)
	}
	if err := db.loadTopicDefaults(); err != nil { // topicconfig.go
		db.Close()
		return nil, err
	}
	names, err := db.fs.ReadDir(layout.TopicsDir(dir))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("passbook: list topics: %w", err)
	}
	var pending []*topicOpen
	for _, name := range names {
		_, err := db.fs.Stat(layout.TopicConfig(db.dir, name))
		if ValidTopicName(name) != nil || errors.Is(err, fs.ErrNotExist) {
			// A deletion or creation that a crash interrupted.
			if o.NoCreate {
				o.Logger.Warn("skipping unfinished topic directory", "dir", db.topicDir(name))
				continue
			}
			o.Logger.Warn("removing unfinished topic directory", "dir", db.topicDir(name))
			if err := vfs.RemoveAll(db.fs, db.topicDir(name)); err != nil {
				db.Close()
				return nil, fmt.Errorf("passbook: remove %s: %w", db.topicDir(name), err)
			}
			continue
		}
		to, err := db.prepareTopic(name, nil, TopicID{})
		if err != nil {
			db.Close()
			return nil, err
		}
		pending = append(pending, to)
	}
	db.openAllPartitions(pending) // open.go
	for i, to := range pending {
		t, err := db.finishTopic(to)
		if err != nil {
			closeOpened(pending[i+1:])
			db.Close()
			return nil, err
		}
		db.topics[t.name] = t
	}
	if !o.NoCreate {
		if err := db.bindTopics(); err != nil {
			db.Close()
			return nil, err
		}
		if err := db.clampCommitted(); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// bindTopics purges the committed offsets of topics that no longer exist
// or were created again since (a deletion cut short by a crash or a power
// loss), and binds every topic's offsets to its ID.
func (db *DB) bindTopics() error {
	ids := make(map[string]TopicID, len(db.topics))
	var known []string // topics bound in an offset store before
	for name, t := range db.topics {
		ids[name] = t.id
		if !t.idNew {
			known = append(known, name)
		}
	}
	bound, err := db.offsets.TopicIDs(context.Background())
	if err != nil {
		return fmt.Errorf("passbook: open offset store: %w", err)
	}
	if len(bound) == 0 && len(known) > 0 {
		// Every topic's ID went into the store when it was created (or
		// first opened with IDs): a store that knows none is not the one
		// they were bound in.
		sort.Strings(known)
		db.o.Logger.Error("the offset store is new, but the topics were bound in an earlier one: offsets.db was deleted, replaced or truncated, and every committed offset is lost; consumers start where their reset policy says (restore offsets.db from a backup, with the server stopped, to get them back)",
			"file", db.offsets.Path(), "topics", known)
	}
	purged, err := db.offsets.BindTopics(context.Background(), ids, true)
	if err != nil {
		return fmt.Errorf("passbook: open offset store: %w", err)
	}
	db.logPurged(purged, "a deleted topic")
	return nil
}

// clampCommitted sets every committed offset past its partition's head
// to the head, with a warning: a power loss took records out of the log
// that a consumer had already committed past (a commit can be more
// durable than the records it covers, and a Kafka consumer reads records
// before they are fsync'd). Left there, the consumer would skip, in
// silence, the records appended at those offsets from now on. It is what
// passbook repair does; the server does it on its own at every Open.
func (db *DB) clampCommitted() error {
	ctx := context.Background()
	all, err := db.offsets.List(ctx, offsets.Filter{})
	if errors.Is(err, offsets.ErrCorrupt) {
		return nil // verify reports it, repair deletes it; reads fail on it
	} else if err != nil {
		return fmt.Errorf("passbook: open offset store: %w", err)
	}
	var set []offsets.Entry
	for _, e := range all {
		t := db.topics[e.Topic]
		if t == nil {
			continue
		}
		l, err := t.Partition(e.Partition)
		if err != nil {
			continue // fenced, or a partition the topic does not have
		}
		if head := l.Head(); e.Offset > head {
			db.o.Logger.Warn("committed offset past the partition's head (a power loss took the records it covered out of the log): set to the head, so that the consumer reads the records appended from there",
				"consumer", e.Consumer, "topic", e.Topic, "partition", e.Partition, "committed", e.Offset, "head", head)
			e.Offset = head
			set = append(set, e)
		}
	}
	if len(set) == 0 {
		return nil
	}
	if err := db.offsets.CommitEntries(ctx, set); err != nil {
		return fmt.Errorf("passbook: set committed offsets past the head to it: %w", err)
	}
	return nil
}

// logPurged warns once per consumer and topic of committed offsets
// deleted because their topic is gone: those consumers start over.
func (db *DB) logPurged(purged []offsets.Entry, whose string) {
	for i := 0; i < len(purged); {
		j := i
		for j < len(purged) && purged[j].Consumer == purged[i].Consumer && purged[j].Topic == purged[i].Topic {
			j++
		}
		db.o.Logger.Warn("deleted committed offsets of "+whose+": the consumer starts this topic over",
			"consumer", purged[i].Consumer, "topic", purged[i].Topic, "partitions", j-i)
		i = j
	}
}

// Dir is the data directory.
func (db *DB) Dir() string { return db.dir }

// Offsets is the committed-offset store.
func (db *DB) Offsets() *offsets.SQLite { return db.offsets }

func (db *DB) topicDir(name string) string { return layout.TopicDir(db.dir, name) }

// openTopic opens an existing topic, or creates one with ID id when cfg
// is non-nil.
func (db *DB) openTopic(name string, cfg *TopicConfig, id TopicID) (*Topic, error) {
	to, err := db.prepareTopic(name, cfg, id)
	if err != nil {
		return nil, err
	}
	to.opened = db.openPartitions(name, to.t.cfg, to.d)
	return db.finishTopic(to)
}

// topicOpen is a topic between openTopic's steps: its configuration read
// (prepareTopic), its partitions opened (opened), fenced or refused and
// topic.json written (finishTopic). Open runs the steps for all topics at
// once, opening every partition through one pool (open.go).
type topicOpen struct {
	t      *Topic
	cfg    *TopicConfig // as openTopic was given it: non-nil for a new topic
	d      storage.Durability
	opened []openedPartition
}

// prepareTopic reads (or, with cfg, creates the directory of) the topic
// name, without opening its partitions.
func (db *DB) prepareTopic(name string, cfg *TopicConfig, id TopicID) (*topicOpen, error) {
	dir := db.topicDir(name)
	var c TopicConfig
	newID := false // an existing topic without an ID gets one
	if cfg != nil {
		c = *cfg
		if err := db.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("passbook: create topic %s: %w", name, err)
		}
		if err := db.fs.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("passbook: create topic %s: %w", name, err)
		}
	} else {
		b, err := vfs.ReadFile(db.fs, filepath.Join(dir, layout.TopicFile))
		if err != nil {
			return nil, fmt.Errorf("passbook: open topic %s: %w", name, err)
		}
		var tf topicFile
		if err := unmarshalTopic(b, &tf); err != nil {
			return nil, fmt.Errorf("passbook: open topic %s: topic.json: %w", name, err)
		}
		c = tf.Config
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("passbook: open topic %s: %w", name, err)
		}
		if tf.ID == "" {
			id, newID = offsets.NewTopicID(), !db.o.NoCreate
		} else if id, err = offsets.ParseTopicID(tf.ID); err != nil {
			return nil, fmt.Errorf("passbook: open topic %s: topic.json: %w", name, err)
		}
	}
	t := &Topic{name: name, cfg: c, id: id, idNew: newID}
	if cfg == nil && db.o.NoCreate {
		for p := range c.Partitions {
			if _, err := db.fs.Stat(layout.PartitionDir(db.dir, name, p)); err != nil {
				return nil, fmt.Errorf("passbook: open topic %s: partition %d: %w (passbook verify says more)", name, p, err)
			}
		}
	}
	d := c.Durability
	if d == storage.DefaultDurability {
		d = db.o.Durability
	}
	return &topicOpen{t: t, cfg: cfg, d: d}, nil
}

// finishTopic takes the opened partitions of to: for an existing topic it
// fences those that failed to open (fence.go); for a new one, a failed
// partition fails the creation. It then writes topic.json if the topic is
// new or has no ID yet. On error every partition of to is closed.
func (db *DB) finishTopic(to *topicOpen) (*Topic, error) {
	t, cfg, opened := to.t, to.cfg, to.opened
	name, c, id, newID := t.name, t.cfg, t.id, t.idNew
	dir := db.topicDir(name)
	for p, op := range opened {
		l, err := op.l, op.err
		if err != nil && cfg == nil {
			// Serve the rest; this one answers ErrFenced (fence.go).
			db.o.Logger.Error("partition fenced: it cannot be opened", "topic", name, "partition", p, "err", err)
			t.fenceAt(p, err, db.o.Now())
			continue
		}
		if err != nil {
			t.close()
			for _, op := range opened[p+1:] {
				if op.l != nil {
					op.l.Close()
				}
			}
			return nil, fmt.Errorf("passbook: open topic %s partition %d: %w", name, p, err)
		}
		t.parts = append(t.parts, l)
	}
	if cfg != nil || newID {
		// A new topic: topic.json last, as a topic directory without it
		// is a creation that did not finish, and Open removes it. A topic
		// from before topic IDs: its ID is made once, here, and a crash
		// before the rename leaves topic.json as it was.
		if err := vfs.WriteFileAtomic(db.fs, dir, layout.TopicFile, encodeTopic(c, id)); err != nil {
			t.close()
			if cfg == nil {
				return nil, fmt.Errorf("passbook: open topic %s: give it a topic ID: %w", name, err)
			}
			return nil, fmt.Errorf("passbook: create topic %s: %w", name, err)
		}
	}
	return t, nil
}

func (t *Topic) close() error { return closeTopics([]*Topic{t}) }

// CreateTopic creates a topic. Zero fields of cfg take the DB's
// Options.Topic values, then the defaults.
func (db *DB) CreateTopic(name string, cfg TopicConfig) (*Topic, error) {
	if err := ValidNewTopicName(name); err != nil {
		return nil, err
	}
	cfg = mergeConfig(cfg, db.DefaultTopicConfig())
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateNew(db.o.MinSegmentBytes); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	if _, ok := db.topics[name]; ok {
		return nil, fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if db.creating[name] {
		return nil, fmt.Errorf("%w: %s is being created or deleted", ErrTopicExists, name)
	}
	if _, err := db.fs.Stat(db.topicDir(name)); err == nil {
		return nil, fmt.Errorf("%w: %s (its directory exists)", ErrTopicExists, name)
	}
	// Bind the new ID in the offset store first: committed offsets left
	// by an older topic of this name (its deletion cut short) go now.
	id := offsets.NewTopicID()
	purged, err := db.offsets.BindTopic(context.Background(), name, id)
	if err != nil {
		return nil, fmt.Errorf("passbook: create topic %s: %w", name, err)
	}
	db.logPurged(purged, "an earlier topic of the same name")
	t, err := db.createOutsideLock(name, func() (*Topic, error) { return db.openTopic(name, &cfg, id) })
	if err != nil {
		return nil, err
	}
	db.topics[name] = t
	db.o.Logger.Info("created topic", "topic", name, "partitions", cfg.Partitions)
	return t, nil
}

// mergeConfig fills c's zero fields from d; d's Other configs are kept
// where c does not set them.
func mergeConfig(c, d TopicConfig) TopicConfig {
	orDefault(&c.Partitions, d.Partitions)
	orDefault(&c.RetentionAge, d.RetentionAge)
	orDefault(&c.RetentionBytes, d.RetentionBytes)
	orDefault(&c.SegmentBytes, d.SegmentBytes)
	orDefault(&c.SegmentAge, d.SegmentAge)
	orDefault(&c.MaxRecordBytes, d.MaxRecordBytes)
	orDefault(&c.Durability, d.Durability) // storage.DefaultDurability is the zero value
	orDefault(&c.CleanupPolicy, d.CleanupPolicy)
	orDefault(&c.DeleteRetention, d.DeleteRetention)
	orDefault(&c.TimestampBeforeMax, d.TimestampBeforeMax)
	orDefault(&c.TimestampAfterMax, d.TimestampAfterMax)
	orDefault(&c.MaxMessageBytes, d.MaxMessageBytes)
	orDefault(&c.MinCleanableDirtyRatio, d.MinCleanableDirtyRatio)
	orDefault(&c.MinCompactionLag, d.MinCompactionLag)
	orDefault(&c.MaxCompactionLag, d.MaxCompactionLag)
	orDefault(&c.TimestampType, d.TimestampType)
	orDefault(&c.Compression, d.Compression)
	if len(d.Other) > 0 {
		o := maps.Clone(d.Other)
		maps.Copy(o, c.Other)
		c.Other = o
	}
	return c
}

// orDefault sets *v to d when *v is its type's zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Topic returns an existing topic.
func (db *DB) Topic(name string) (*Topic, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	t, ok := db.topics[name]
	if !ok {
		if err := ValidTopicName(name); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return t, nil
}

// Topics lists the topics, sorted by name.
func (db *DB) Topics() []*Topic {
	db.mu.RLock()
	defer db.mu.RUnlock()
	ts := make([]*Topic, 0, len(db.topics))
	for _, t := range db.topics {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	return ts
}

// DeleteTopic deletes a topic, its records and every committed offset on it.
func (db *DB) DeleteTopic(ctx context.Context, name string) error {
	db.alterMu.Lock() // not while AddPartitions makes partitions in its directory
	defer db.alterMu.Unlock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	t, ok := db.topics[name]
	if !ok {
		db.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	delete(db.topics, name)
	// The rest runs without db.mu (closing, renaming and removing
	// thousands of partitions takes seconds), the name reserved so that
	// it cannot be created again before its offsets are gone.
	db.creating[name] = true
	db.building.Add(1)
	db.mu.Unlock()
	defer func() {
		db.mu.Lock()
		delete(db.creating, name)
		db.building.Done()
		db.mu.Unlock()
	}()
	if err := t.close(); err != nil {
		db.o.Logger.Warn("closing deleted topic", "topic", name, "err", err)
	}
	// Rename first so a crash midway never leaves a half-deleted topic
	// that looks whole; names with '~' are not valid topics.
	dir := db.topicDir(name)
	trash := dir + "~deleted-" + fmt.Sprint(db.o.Now().UnixNano())
	if err := db.fs.Rename(dir, trash); err != nil {
		return fmt.Errorf("passbook: delete topic %s: %w", name, err)
	}
	if err := db.fs.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("passbook: delete topic %s: %w", name, err)
	}
	if err := vfs.RemoveAll(db.fs, trash); err != nil {
		db.o.Logger.Warn("removing deleted topic files", "dir", trash, "err", err)
	}
	if _, err := db.offsets.UnbindTopic(ctx, name); err != nil {
		return fmt.Errorf("passbook: delete offsets of topic %s: %w", name, err)
	}
	return nil
}

// Close closes every topic and the offset store and releases the directory.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	// Creations in progress see closed when they finish and close what
	// they made.
	db.mu.Unlock()
	db.building.Wait()
	db.mu.Lock()
	errs := []error{closeTopics(slices.Collect(maps.Values(db.topics)))} // open.go
	if db.offsets != nil {
		errs = append(errs, db.offsets.Close())
	}
	errs = append(errs, db.lock.Close())
	return errors.Join(errs...)
}
