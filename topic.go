package passbook

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/passbook-log/passbook/internal/thousands"
	"iter"
	"maps"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// Record is one log entry: optional key, value (nil for a tombstone),
// headers and timestamp (zero means the time of the append).
type Record = batch.Record

// Header is one key/value header of a Record.
type Header = batch.RecordHeader

// Durability says what a returned append promises: storage.Durability,
// named here so that an application sets a topic's without importing the
// engine.
type Durability = storage.Durability

// The durabilities; see storage.Durability.
const (
	DefaultDurability = storage.DefaultDurability // the topic's, or the DB's
	InOS              = storage.InOS              // survives the process being killed, not a power loss
	Fsync             = storage.Fsync             // fsync'd before the append returns (group commit)
	Interval          = storage.Interval          // like InOS; an fsync every SyncInterval
)

// ParseDurability parses "os", "fsync" or "interval".
func ParseDurability(s string) (Durability, error) { return storage.ParseDurability(s) }

// Cleanup policies.
const (
	CleanupDelete        = "delete"
	CleanupCompact       = "compact"
	CleanupCompactDelete = "compact,delete"
)

// TopicConfig is a topic's settings. Zero fields take the defaults noted.
type TopicConfig struct {
	Partitions     int           // default 1
	RetentionAge   time.Duration // delete segments older than this; 0 keeps forever
	RetentionBytes int64         // per partition; 0 means no limit
	SegmentBytes   int64         // default 128 MiB
	SegmentAge     time.Duration // default 7 days
	MaxRecordBytes int           // default 1 MiB
	Durability     Durability    // default: the DB's
	// CleanupPolicy is delete (the default: retention deletes old
	// segments), compact (every record needs a key; a cleaner keeps the
	// newest record of each key, and retention is off, as in Kafka) or
	// compact,delete (both). See docs/compaction.md.
	CleanupPolicy string
	// DeleteRetention is how long a tombstone stays on a compacted topic
	// after the cleaner first saw it; default 24 hours.
	DeleteRetention time.Duration
	// TimestampBeforeMax and TimestampAfterMax refuse records stamped
	// further before or after the broker's clock than this
	// (storage.ErrInvalidTimestamp; INVALID_TIMESTAMP over Kafka):
	// Kafka's message.timestamp.before.max.ms, by default no limit, and
	// message.timestamp.after.max.ms, by default 1 hour as in Kafka 4.
	// NoTimestampLimit allows any.
	TimestampBeforeMax time.Duration
	TimestampAfterMax  time.Duration

	// MaxMessageBytes is the largest batch a Kafka producer may append,
	// on its stored (compressed) size, checked as sent and again after a
	// recompression: Kafka's max.message.bytes (MESSAGE_TOO_LARGE). Zero
	// means DefaultMaxMessageBytes, or MaxRecordBytes plus 1 KiB when
	// MaxRecordBytes is over 1 MiB (so that its largest record fits). The
	// embedded API's appends are bounded by MaxRecordBytes alone.
	MaxMessageBytes int
	// MinCleanableDirtyRatio starts a compacted topic's background
	// cleaning once this share of its closed segments is dirty: Kafka's
	// min.cleanable.dirty.ratio. Zero means 0.5, Kafka's default;
	// AnyDirtyRatio cleans as soon as anything is dirty (Kafka's 0).
	MinCleanableDirtyRatio float64
	// MinCompactionLag keeps the cleaner off records younger than this;
	// MaxCompactionLag makes it clean a dirty segment older than this
	// whatever the dirty ratio (and rolls the active segment at that
	// age): Kafka's min.compaction.lag.ms and max.compaction.lag.ms.
	// Zero means none.
	MinCompactionLag time.Duration
	MaxCompactionLag time.Duration
	// TimestampType is CreateTime (the default: the producer's
	// timestamps) or LogAppendTime (the broker stamps every batch with
	// its clock): Kafka's message.timestamp.type.
	TimestampType string
	// Compression is the codec batches are stored in: "" or "producer"
	// (the default) keeps each batch as its producer compressed it;
	// uncompressed, gzip, snappy, lz4 or zstd makes the broker store that
	// codec, recompressing a batch sent in another. Kafka's
	// compression.type.
	Compression string
	// Other holds the Kafka topic configs that have no effect on one
	// broker (min.insync.replicas, replication throttles, remote
	// storage, …: docs/kafka.md lists them and says why), by Kafka name,
	// as they were set, so that they are kept and reported.
	Other map[string]string
}

// DefaultMaxMessageBytes is Kafka's default max.message.bytes: 1 MiB
// plus the 12 bytes of a batch's offset and length.
const DefaultMaxMessageBytes = 1<<20 + 12

// AnyDirtyRatio, as TopicConfig.MinCleanableDirtyRatio, cleans a
// compacted topic as soon as any closed segment is dirty (Kafka's
// min.cleanable.dirty.ratio=0; zero in TopicConfig means the default).
const AnyDirtyRatio = -1

// Timestamp types.
const (
	CreateTime    = "CreateTime"
	LogAppendTime = "LogAppendTime"
)

// Compression types; a codec name (uncompressed, gzip, snappy, lz4,
// zstd) is one too.
const CompressionProducer = "producer"

// compressionCodecs are the codecs TopicConfig.Compression names.
var compressionCodecs = map[string]batch.Codec{
	"uncompressed": batch.None, "gzip": batch.Gzip, "snappy": batch.Snappy, "lz4": batch.LZ4, "zstd": batch.Zstd,
}

// EffectiveMaxMessageBytes is the batch limit MaxMessageBytes sets, its
// default applied.
func (c TopicConfig) EffectiveMaxMessageBytes() int {
	if c.MaxMessageBytes > 0 {
		return c.MaxMessageBytes
	}
	if c.MaxRecordBytes <= 1<<20 {
		return DefaultMaxMessageBytes
	}
	return c.MaxRecordBytes + 1024 // a batch of the largest record
}

// NoTimestampLimit, as TopicConfig.TimestampBeforeMax or
// TimestampAfterMax, accepts any timestamp (Kafka's Long.MAX_VALUE).
const NoTimestampLimit = storage.NoTimestampLimit

// TimestampLimitMs is a timestamp limit in milliseconds, Kafka's way
// (topic.json and the Kafka configs message.timestamp.*.max.ms):
// NoTimestampLimit is Long.MAX_VALUE, zero (the default) is zero.
func TimestampLimitMs(d time.Duration) int64 {
	if d == NoTimestampLimit {
		return math.MaxInt64
	}
	return d.Milliseconds()
}

// TimestampLimit reads what TimestampLimitMs writes; a limit longer than
// a time.Duration holds (such as Kafka's Long.MAX_VALUE) is no limit.
func TimestampLimit(ms int64) time.Duration {
	if ms >= int64(NoTimestampLimit/time.Millisecond) {
		return NoTimestampLimit
	}
	return time.Duration(ms) * time.Millisecond
}

// Compacted reports whether the cleanup policy compacts the topic.
func (c TopicConfig) Compacted() bool {
	return c.CleanupPolicy == CleanupCompact || c.CleanupPolicy == CleanupCompactDelete
}

// storageOptions are the storage options of the topic's partitions.
func (c TopicConfig) storageOptions() storage.Options {
	o := storage.Options{
		SegmentBytes: c.SegmentBytes, SegmentAge: c.SegmentAge, MaxRecordBytes: c.MaxRecordBytes,
		Durability: c.Durability, Compact: c.Compacted(), DeleteRetention: c.DeleteRetention,
		TimestampBeforeMax: c.TimestampBeforeMax, TimestampAfterMax: c.TimestampAfterMax,
	}
	if c.CleanupPolicy != CleanupCompact {
		o.RetentionBytes, o.RetentionAge = c.RetentionBytes, c.RetentionAge
	}
	o.MaxMessageBytes = c.EffectiveMaxMessageBytes()
	switch {
	case c.MinCleanableDirtyRatio < 0:
		o.MinDirtyRatio = math.SmallestNonzeroFloat64 // storage's zero is its default
	case c.MinCleanableDirtyRatio > 0:
		o.MinDirtyRatio = c.MinCleanableDirtyRatio
	}
	o.MinCompactionLag, o.MaxCompactionLag = c.MinCompactionLag, c.MaxCompactionLag
	o.LogAppendTime = c.TimestampType == LogAppendTime
	if codec, ok := compressionCodecs[c.Compression]; ok {
		o.Compression = &codec
	}
	return o
}

// topicConfigJSON is TopicConfig's JSON form, with Kafka's units and names.
type topicConfigJSON struct {
	Partitions        int    `json:"partitions"`
	RetentionMs       int64  `json:"retention.ms"`
	RetentionBytes    int64  `json:"retention.bytes"`
	SegmentBytes      int64  `json:"segment.bytes"`
	SegmentMs         int64  `json:"segment.ms"`
	MaxRecordBytes    int    `json:"max.message.bytes"`
	Durability        string `json:"durability"`
	CleanupPolicy     string `json:"cleanup.policy"`
	DeleteRetentionMs int64  `json:"delete.retention.ms,omitempty"`
	TimestampBeforeMs int64  `json:"message.timestamp.before.max.ms"`
	TimestampAfterMs  int64  `json:"message.timestamp.after.max.ms"`
	// Added with AlterConfigs; absent (zero) in older files. The record
	// limit keeps the key max.message.bytes it has always had: Kafka's
	// max.message.bytes, a batch limit, is max.batch.bytes here.
	MaxBatchBytes      int               `json:"max.batch.bytes,omitempty"`
	MinDirtyRatio      float64           `json:"min.cleanable.dirty.ratio,omitempty"`
	MinCompactionLagMs int64             `json:"min.compaction.lag.ms,omitempty"`
	MaxCompactionLagMs int64             `json:"max.compaction.lag.ms,omitempty"`
	TimestampType      string            `json:"message.timestamp.type,omitempty"`
	Compression        string            `json:"compression.type,omitempty"`
	Other              map[string]string `json:"other,omitempty"`
}

// MarshalJSON writes durations in milliseconds under Kafka's names.
func (c TopicConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(topicConfigJSON{
		Partitions: c.Partitions, RetentionMs: c.RetentionAge.Milliseconds(), RetentionBytes: c.RetentionBytes,
		SegmentBytes: c.SegmentBytes, SegmentMs: c.SegmentAge.Milliseconds(), MaxRecordBytes: c.MaxRecordBytes,
		Durability: c.Durability.String(), CleanupPolicy: c.CleanupPolicy,
		DeleteRetentionMs: c.DeleteRetention.Milliseconds(),
		TimestampBeforeMs: TimestampLimitMs(c.TimestampBeforeMax), TimestampAfterMs: TimestampLimitMs(c.TimestampAfterMax),
		MaxBatchBytes: c.MaxMessageBytes, MinDirtyRatio: c.MinCleanableDirtyRatio,
		MinCompactionLagMs: c.MinCompactionLag.Milliseconds(), MaxCompactionLagMs: c.MaxCompactionLag.Milliseconds(),
		TimestampType: c.TimestampType, Compression: c.Compression, Other: c.Other,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *TopicConfig) UnmarshalJSON(b []byte) error {
	var j topicConfigJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d := storage.DefaultDurability
	if j.Durability != "" && j.Durability != "default" {
		var err error
		if d, err = storage.ParseDurability(j.Durability); err != nil {
			return err
		}
	}
	*c = TopicConfig{
		Partitions: j.Partitions, RetentionAge: time.Duration(j.RetentionMs) * time.Millisecond, RetentionBytes: j.RetentionBytes,
		SegmentBytes: j.SegmentBytes, SegmentAge: time.Duration(j.SegmentMs) * time.Millisecond, MaxRecordBytes: j.MaxRecordBytes,
		Durability: d, CleanupPolicy: j.CleanupPolicy,
		DeleteRetention:    time.Duration(j.DeleteRetentionMs) * time.Millisecond,
		TimestampBeforeMax: TimestampLimit(j.TimestampBeforeMs), TimestampAfterMax: TimestampLimit(j.TimestampAfterMs),
		MaxMessageBytes: j.MaxBatchBytes, MinCleanableDirtyRatio: j.MinDirtyRatio,
		MinCompactionLag: time.Duration(j.MinCompactionLagMs) * time.Millisecond,
		MaxCompactionLag: time.Duration(j.MaxCompactionLagMs) * time.Millisecond,
		TimestampType:    j.TimestampType, Compression: j.Compression, Other: j.Other,
	}
	return nil
}

// validate checks c and fills in defaults.
func (c *TopicConfig) validate() error {
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = CleanupDelete
	}
	var problems []string
	if c.Partitions < 0 || c.Partitions > MaxPartitions {
		problems = append(problems, fmt.Sprintf("partitions %d not in [1, %s]", c.Partitions, thousands.Int(MaxPartitions)))
	}
	if c.RetentionAge < 0 || c.RetentionBytes < 0 || c.SegmentBytes < 0 || c.SegmentAge < 0 || c.MaxRecordBytes < 0 || c.DeleteRetention < 0 {
		problems = append(problems, "retention, segment and record limits must not be negative")
	}
	if c.TimestampBeforeMax < 0 || c.TimestampAfterMax < 0 {
		problems = append(problems, "message.timestamp.before.max.ms and after.max.ms must not be negative")
	}
	if c.MaxMessageBytes < 0 || c.MinCompactionLag < 0 || c.MaxCompactionLag < 0 {
		problems = append(problems, "max message bytes and compaction lags must not be negative")
	}
	if c.MaxCompactionLag > 0 && c.MinCompactionLag > c.MaxCompactionLag {
		problems = append(problems, fmt.Sprintf("min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", c.MinCompactionLag.Milliseconds(), c.MaxCompactionLag.Milliseconds()))
	}
	if r := c.MinCleanableDirtyRatio; r > 1 || (r < 0 && r != AnyDirtyRatio) || math.IsNaN(r) {
		problems = append(problems, fmt.Sprintf("min cleanable dirty ratio %v not in [0, 1]", r))
	}
	switch c.TimestampType {
	case "", CreateTime, LogAppendTime:
	default:
		problems = append(problems, fmt.Sprintf("timestamp type %q (want CreateTime or LogAppendTime)", c.TimestampType))
	}
	if _, ok := compressionCodecs[c.Compression]; !ok && c.Compression != "" && c.Compression != CompressionProducer {
		problems = append(problems, fmt.Sprintf("compression %q (want producer, uncompressed, gzip, snappy, lz4 or zstd)", c.Compression))
	}
	switch c.CleanupPolicy {
	case CleanupDelete, CleanupCompact, CleanupCompactDelete:
	default:
		problems = append(problems, fmt.Sprintf("cleanup policy %q (want delete, compact or compact,delete)", c.CleanupPolicy))
	}
	if c.Durability < storage.DefaultDurability || c.Durability > storage.Interval {
		problems = append(problems, fmt.Sprintf("durability %d", c.Durability))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// MaxMaxRecordBytes is the largest MaxRecordBytes a topic may have: a
// record is held whole in memory by every writer and reader of it.
const MaxMaxRecordBytes = 256 << 20

// MaxPartitions is the most partitions a topic may have.
const MaxPartitions = 10_000

// maxSegmentBytes is the largest SegmentBytes (the storage's limit: index
// positions are 32-bit).
const maxSegmentBytes = 2 << 30

// validateNew checks what only a new topic must satisfy (an existing
// topic.json that predates a rule still opens): its segment size at least
// minSegment and at most 2 GiB, and a record limit in [1, 256 MiB]. It
// runs after validate, on a config that passed it.
func (c *TopicConfig) validateNew(minSegment int64) error {
	var problems []string
	if c.SegmentBytes != 0 && (c.SegmentBytes < max(minSegment, 1) || c.SegmentBytes > maxSegmentBytes) {
		problems = append(problems, fmt.Sprintf("segment bytes %d not in [%d, %d] (each segment keeps 3 files open: a floor protects the file descriptors)",
			c.SegmentBytes, max(minSegment, 1), int64(maxSegmentBytes)))
	}
	if c.SegmentAge != 0 && c.SegmentAge < time.Millisecond {
		problems = append(problems, fmt.Sprintf("segment age %v under 1ms", c.SegmentAge))
	}
	for _, l := range []struct {
		name string
		d    time.Duration
	}{{"message.timestamp.before.max.ms", c.TimestampBeforeMax}, {"message.timestamp.after.max.ms", c.TimestampAfterMax}} {
		if l.d != 0 && l.d < time.Millisecond {
			problems = append(problems, fmt.Sprintf("%s %v under 1ms", l.name, l.d))
		}
	}
	if c.MaxRecordBytes > MaxMaxRecordBytes { // validate, run first, refuses a negative one
		problems = append(problems, fmt.Sprintf("max record bytes %d not in [1, %d]", c.MaxRecordBytes, MaxMaxRecordBytes))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// topicFile is topic.json: the config, plus a format version.
type topicFile struct {
	Format int         `json:"format"`
	Config TopicConfig `json:"config"`
	// ID is the topic ID (Kafka's base64 form), made at creation; topics
	// created before IDs existed get theirs when the directory is opened.
	ID string `json:"topic_id,omitempty"`
}

func encodeTopic(c TopicConfig, id TopicID) []byte {
	b, _ := json.MarshalIndent(topicFile{Format: 1, Config: c, ID: id.String()}, "", "  ")
	return append(b, '\n')
}

// ValidTopicName reports why name cannot be a topic, or nil. The rules are
// Kafka's: 1 to 249 characters from [a-zA-Z0-9._-], and not "." or "..",
// so every name is also a safe directory name.
func ValidTopicName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if len(name) > 249 {
		return fmt.Errorf("%w: %d characters, at most 249", ErrInvalidName, len(name))
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: %q has %q; use letters, digits, '.', '_' and '-'", ErrInvalidName, name, r)
		}
	}
	return nil
}

// ValidNewTopicName reports why name cannot be given to a new topic, or
// nil: ValidTopicName's rules, and not starting with "__" (Kafka's
// internal topics, such as __consumer_offsets: passbook keeps offsets in
// its own store, and a user topic by such a name would read as Kafka's to
// every tool) or "-" (it reads as a flag on every command line).
// Existing topics keep opening under ValidTopicName alone.
func ValidNewTopicName(name string) error {
	if err := ValidTopicName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%w: %q starts with \"__\", which Kafka reserves for internal topics", ErrInvalidName, name)
	}
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("%w: %q starts with '-', which reads as a flag on a command line", ErrInvalidName, name)
	}
	return nil
}

// Topic is a named log split into partitions.
type Topic struct {
	name  string
	id    TopicID
	idNew bool // the ID was made by this Open (a topic from before IDs)
	cfg   TopicConfig
	parts []*storage.Log
	next  atomic.Uint32 // round robin for records without a key

	// fenced holds the partitions Open could not open (fence.go); their
	// parts are nil.
	fenced map[int32]fence
}

// Name is the topic's name.
func (t *Topic) Name() string { return t.name }

// TopicID is a topic's identity, Kafka's topic ID: 16 random bytes made
// when the topic is created. A topic deleted and created again under the
// same name has a new one, and the committed offsets of the old one never
// attach to it. Its String is Kafka's (URL-safe base64).
type TopicID = offsets.TopicID

// ID is the topic's ID.
func (t *Topic) ID() TopicID { return t.id }

// Config is the topic's configuration.
func (t *Topic) Config() TopicConfig {
	c := t.cfg
	c.Other = maps.Clone(c.Other)
	return c
}

// Partitions is the number of partitions.
func (t *Topic) Partitions() int { return len(t.parts) }

// Partition returns partition p's log.
func (t *Topic) Partition(p int32) (*storage.Log, error) {
	if p < 0 || int(p) >= len(t.parts) {
		return nil, fmt.Errorf("%w: topic %s has no partition %d (it has %d)", ErrUnknownPartition, t.name, p, len(t.parts))
	}
	if t.parts[p] == nil {
		return nil, t.fencedErr(p)
	}
	return t.parts[p], nil
}

// Position is where a record landed.
type Position struct {
	Partition int32
	Offset    int64
}

// PartitionFor returns the partition a record goes to: Kafka's default
// partitioner (murmur2) for a keyed record, round robin otherwise.
func (t *Topic) PartitionFor(key []byte) int32 {
	if key != nil {
		return KeyPartition(key, len(t.parts))
	}
	return int32((t.next.Add(1) - 1) % uint32(len(t.parts)))
}

// Append appends one record and returns where it landed, once it is as
// durable as the topic's durability says.
func (t *Topic) Append(rec Record) (Position, error) {
	p := t.PartitionFor(rec.Key)
	l, err := t.Partition(p)
	if err != nil {
		return Position{}, err
	}
	off, err := l.Append([]Record{rec}, storage.DefaultDurability)
	if err != nil {
		return Position{}, fmt.Errorf("topic %s partition %d: %w", t.name, p, err)
	}
	return Position{Partition: p, Offset: off}, nil
}

// AppendTo appends records to partition p, in order, and returns the
// offset of the first (the others follow densely).
func (t *Topic) AppendTo(p int32, recs []Record, d storage.Durability) (int64, error) {
	l, err := t.Partition(p)
	if err != nil {
		return 0, err
	}
	off, err := l.Append(recs, d)
	if err != nil {
		return 0, fmt.Errorf("topic %s partition %d: %w", t.name, p, err)
	}
	return off, nil
}

// Records iterates over partition p's committed records from offset
// from up to its last stable offset: the records of aborted and still
// open transactions, and transaction markers, are not yielded (see
// RecordsIsolated, isolation.go). See storage.Log.Records for the
// lifetime of the yielded bytes.
func (t *Topic) Records(p int32, from int64) iter.Seq2[Record, error] {
	return t.RecordsIsolated(p, from, storage.ReadCommitted)
}

// Compact compacts every partition of a topic whose cleanup policy is
// compact or compact,delete (see storage.Log.Compact), one after the
// other, and returns what each one did, by partition. It fails with
// storage.ErrNotCompacted on any other topic.
func (t *Topic) Compact(ctx context.Context) ([]storage.CompactStats, error) {
	if cfg := t.Config(); !cfg.Compacted() {
		return nil, fmt.Errorf("topic %s: cleanup.policy is %s: %w", t.name, cfg.CleanupPolicy, storage.ErrNotCompacted)
	}
	stats := make([]storage.CompactStats, 0, len(t.parts))
	for p, l := range t.parts {
		if l == nil {
			return stats, t.fencedErr(int32(p))
		}
		st, err := l.Compact(ctx)
		if err != nil {
			return stats, fmt.Errorf("topic %s partition %d: %w", t.name, p, err)
		}
		stats = append(stats, st)
	}
	return stats, nil
}

// PartitionInfo describes one partition.
type PartitionInfo struct {
	Partition   int32 `json:"partition"`
	StartOffset int64 `json:"start_offset"`
	Head        int64 `json:"head"`
	Records     int64 `json:"records"` // head − start offset
	Bytes       int64 `json:"bytes"`
	Segments    int   `json:"segments"`
	// Fenced says why the partition could not be opened; it serves
	// nothing until repaired (the other fields are zero).
	Fenced string `json:"fenced,omitempty"`
	// Unwritable says why the partition refuses appends, after a failed
	// write; it still serves reads.
	Unwritable string `json:"unwritable,omitempty"`
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string          `json:"name"`
	Config     TopicConfig     `json:"config"`
	Partitions []PartitionInfo `json:"partitions"`
}

// Describe reports the topic's configuration and each partition's extent.
func (t *Topic) Describe() TopicInfo {
	info := TopicInfo{Name: t.name, Config: t.cfg}
	for i, l := range t.parts {
		if l == nil {
			info.Partitions = append(info.Partitions, PartitionInfo{Partition: int32(i), Fenced: t.fenced[int32(i)].err.Error()})
			continue
		}
		var unwritable string
		if err := l.Err(); err != nil {
			unwritable = err.Error()
		}
		info.Partitions = append(info.Partitions, PartitionInfo{Unwritable: unwritable,
			Partition: int32(i), StartOffset: l.StartOffset(), Head: l.Head(),
			Records: l.Head() - l.StartOffset(), Bytes: l.Size(), Segments: l.SegmentCount(),
		})
	}
	return info
}

func unmarshalTopic(b []byte, tf *topicFile) error {
	if err := json.Unmarshal(b, tf); err != nil {
		return err
	}
	if tf.Format != 1 {
		return fmt.Errorf("unknown format %d", tf.Format)
	}
	return nil
}
