package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// Durability says what a returned append promises.
type Durability int8

const (
	// DefaultDurability means the log's Options.Durability.
	DefaultDurability Durability = iota
	// InOS returns once the batch is written to the operating system: it
	// survives the process being killed, not a power loss.
	InOS
	// Fsync returns once the batch is fsync'd: it survives power loss.
	// Concurrent appenders share one fsync (group commit).
	Fsync
	// Interval returns like InOS; a background fsync runs every
	// Options.SyncInterval, so a power loss loses at most that window.
	Interval
)

func (d Durability) String() string {
	switch d {
	case DefaultDurability:
		return "default"
	case InOS:
		return "os"
	case Fsync:
		return "fsync"
	case Interval:
		return "interval"
	}
	return fmt.Sprintf("durability(%d)", int8(d))
}

// ParseDurability parses "os", "fsync" or "interval".
func ParseDurability(s string) (Durability, error) {
	for d := InOS; d <= Interval; d++ {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("storage: unknown durability %q (want os, fsync or interval)", s)
}

// Options configure a Log. The zero value is valid: every zero field takes
// the default named in its comment.
type Options struct {
	FS vfs.FS // default: the OS file system

	SegmentBytes  int64         // roll the active segment at this size; default 128 MiB, max 2 GiB
	SegmentAge    time.Duration // roll a segment this old (by its first record); default 7 days
	IndexInterval int           // bytes between sparse index entries; default 4 KiB

	MaxRecordBytes int // key + value + headers of one record; default 1 MiB
	MaxBatchBytes  int // one stored batch; default 16 MiB (and ≥ MaxRecordBytes + overhead)

	Durability   Durability    // default InOS
	SyncInterval time.Duration // for Interval durability; default 1 s

	RetentionBytes int64         // delete old segments past this total size; 0 = no limit
	RetentionAge   time.Duration // delete segments whose newest record is older; 0 = no limit

	// Compact makes the log compacted (Kafka's cleanup.policy=compact):
	// every record needs a key (appends without one fail with ErrNoKey),
	// and a cleaner rewrites closed segments keeping only the newest
	// record of each key. See the package doc and docs/compaction.md.
	Compact bool
	// DeleteRetention is how long a tombstone (a keyed record with a nil
	// value) stays after the cleaner first saw it, so that consumers
	// catch the delete; default 24 hours. Kafka's delete.retention.ms.
	DeleteRetention time.Duration
	// MinDirtyRatio starts a background cleaning once this share of the
	// closed segments' bytes was appended since the last one; default 0.5.
	MinDirtyRatio float64
	// CleanerBufferBytes bounds the cleaner's key→offset map, at
	// keySlotBytes per slot; default 16 MiB (about 780,000 keys per
	// pass). More keys than fit take several passes.
	CleanerBufferBytes int
	// CleanerIORate limits the cleaner's reads plus writes, in bytes per
	// second; 0 = no limit.
	CleanerIORate int64
	// CleanerInterval is how often the background cleaner checks the
	// dirty ratio; default 15 s.
	CleanerInterval time.Duration

	// Files bounds the file descriptors of the log's segment files,
	// shared with every log given the same cache (passbook.Open shares
	// one across its data directory). Nil: a cache of the log's own
	// without a bound, so every segment keeps its three files open.
	Files *FileCache
	// Syncer is the group commit the log's Fsync appends, WaitDurable
	// and Sync go through, shared with every log given the same one
	// (passbook.Open shares one across its data directory): one commit
	// window fsyncs the dirty active segments of all of them in
	// parallel. Nil: a Syncer of the log's own.
	Syncer *Syncer
	// CallerLocked says the caller holds a lock covering dir (as
	// passbook.Open holds its data directory's LOCK), so Open takes no
	// lock of its own and the partition holds no file descriptor for it.
	CallerLocked bool

	// TimestampBeforeMax and TimestampAfterMax refuse an append with a
	// timestamp further before or after the clock (Now) than this, with
	// ErrInvalidTimestamp: Kafka's message.timestamp.before.max.ms (by
	// default no limit) and message.timestamp.after.max.ms (default 1
	// hour, as in Kafka 4). NoTimestampLimit allows any.
	TimestampBeforeMax time.Duration
	TimestampAfterMax  time.Duration

	// MaxMessageBytes bounds one batch AppendBatch takes (a Kafka
	// producer's), on its stored size, after any recompression: Kafka's
	// max.message.bytes, failing with ErrBatchTooLarge. Zero means
	// MaxBatchBytes alone.
	MaxMessageBytes int
	// MinCompactionLag keeps the cleaner off records younger than this
	// (by their segment's largest timestamp); MaxCompactionLag makes it
	// clean a dirty segment older than this whatever the dirty ratio,
	// and rolls the active segment of a compacted log at that age.
	// Kafka's min.compaction.lag.ms and max.compaction.lag.ms; zero
	// means none.
	MinCompactionLag time.Duration
	MaxCompactionLag time.Duration
	// LogAppendTime stamps every batch AppendBatch takes with the log's
	// clock (Kafka's message.timestamp.type=LogAppendTime: the max
	// timestamp and the timestamp-type attribute bit).
	LogAppendTime bool
	// Compression, when set, is the codec AppendBatch stores every batch
	// in, recompressing one that arrives in another (Kafka's
	// compression.type naming a codec; nil is "producer": the batch as
	// sent). Control batches are kept as they are.
	Compression *batch.Codec

	Now    func() time.Time // the clock; default time.Now
	Logger *slog.Logger     // default: discard
}

// Validate reports what is wrong with o, if anything.
func (o *Options) Validate() error {
	var errs []error
	if o.SegmentBytes < 0 || o.SegmentBytes > maxSegmentBytes {
		errs = append(errs, fmt.Errorf("segment bytes %d not in [0, %d]", o.SegmentBytes, int64(maxSegmentBytes)))
	}
	if o.SegmentAge < 0 {
		errs = append(errs, fmt.Errorf("segment age %v is negative", o.SegmentAge))
	}
	if o.IndexInterval < 0 {
		errs = append(errs, fmt.Errorf("index interval %d is negative", o.IndexInterval))
	}
	if o.MaxRecordBytes < 0 || o.MaxBatchBytes < 0 {
		errs = append(errs, errors.New("record and batch limits must not be negative"))
	}
	if o.MaxBatchBytes > maxSegmentBytes/2 {
		errs = append(errs, fmt.Errorf("max batch bytes %d over %d", o.MaxBatchBytes, maxSegmentBytes/2))
	}
	if o.Durability < DefaultDurability || o.Durability > Interval {
		errs = append(errs, fmt.Errorf("unknown durability %d", o.Durability))
	}
	if o.SyncInterval < 0 {
		errs = append(errs, fmt.Errorf("sync interval %v is negative", o.SyncInterval))
	}
	if o.TimestampBeforeMax < 0 || o.TimestampAfterMax < 0 {
		errs = append(errs, errors.New("timestamp limits must not be negative"))
	}
	if o.RetentionBytes < 0 || o.RetentionAge < 0 {
		errs = append(errs, errors.New("retention limits must not be negative"))
	}
	if o.DeleteRetention < 0 || o.CleanerIORate < 0 || o.CleanerInterval < 0 {
		errs = append(errs, errors.New("delete retention, cleaner I/O rate and cleaner interval must not be negative"))
	}
	if o.MinDirtyRatio < 0 || o.MinDirtyRatio > 1 {
		errs = append(errs, fmt.Errorf("min dirty ratio %v not in [0, 1]", o.MinDirtyRatio))
	}
	if o.CleanerBufferBytes != 0 && (o.CleanerBufferBytes < minCleanerBuffer || o.CleanerBufferBytes > maxCleanerBuffer) {
		errs = append(errs, fmt.Errorf("cleaner buffer bytes %d not in [%d, %d]", o.CleanerBufferBytes, minCleanerBuffer, maxCleanerBuffer))
	}
	if err := o.validateLive(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: invalid options: %w", err)
	}
	return nil
}

const (
	maxSegmentBytes = 2 << 30 // positions are uint32 in the index; stay well clear

	defaultSegmentBytes   = 128 << 20
	defaultSegmentAge     = 7 * 24 * time.Hour
	defaultIndexInterval  = 4 << 10
	defaultMaxRecordBytes = 1 << 20
	defaultMaxBatchBytes  = 16 << 20
	defaultSyncInterval   = time.Second

	defaultDeleteRetention = 24 * time.Hour
	defaultMinDirtyRatio   = 0.5
	defaultCleanerBuffer   = 16 << 20
	defaultCleanerInterval = 15 * time.Second
	minCleanerBuffer       = 16 * keySlotBytes
	maxCleanerBuffer       = 1 << 34
)

// withDefaults returns a copy of o (which may be nil) with defaults filled in.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.FS == nil {
		c.FS = vfs.OS()
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = defaultSegmentBytes
	}
	if c.SegmentAge == 0 {
		c.SegmentAge = defaultSegmentAge
	}
	if c.IndexInterval == 0 {
		c.IndexInterval = defaultIndexInterval
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = defaultMaxRecordBytes
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = defaultMaxBatchBytes
	}
	if c.MaxBatchBytes < c.MaxRecordBytes+1024 {
		c.MaxBatchBytes = c.MaxRecordBytes + 1024
	}
	if c.MaxBatchBytes < c.MaxMessageBytes {
		c.MaxBatchBytes = c.MaxMessageBytes
	}
	if c.Durability == DefaultDurability {
		c.Durability = InOS
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = defaultSyncInterval
	}
	if c.TimestampBeforeMax == 0 {
		c.TimestampBeforeMax = NoTimestampLimit
	}
	if c.TimestampAfterMax == 0 {
		c.TimestampAfterMax = defaultTimestampAfterMax
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = defaultDeleteRetention
	}
	if c.MinDirtyRatio == 0 {
		c.MinDirtyRatio = defaultMinDirtyRatio
	}
	if c.CleanerBufferBytes == 0 {
		c.CleanerBufferBytes = defaultCleanerBuffer
	}
	if c.CleanerInterval == 0 {
		c.CleanerInterval = defaultCleanerInterval
	}
	if c.Files == nil {
		c.Files = NewFileCache(0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
