package offsets

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Key names one committed offset: a consumer's place in one partition.
// A Kafka consumer group stores its offsets under Consumer = group id.
type Key struct {
	Consumer  string
	Topic     string
	Partition int32
}

func (k Key) String() string {
	return fmt.Sprintf("consumer %q topic %q partition %d", k.Consumer, k.Topic, k.Partition)
}

func (k Key) validate() error {
	switch {
	case k.Consumer == "":
		return fmt.Errorf("%w: empty consumer name", ErrInvalid)
	case k.Topic == "":
		return fmt.Errorf("%w: empty topic name", ErrInvalid)
	case k.Partition < 0:
		return fmt.Errorf("%w: negative partition %d", ErrInvalid, k.Partition)
	}
	return nil
}

func validate(k Key, offset int64) error {
	if err := k.validate(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative offset %d for %v", ErrInvalid, offset, k)
	}
	return nil
}

// Entry is one stored committed offset.
type Entry struct {
	Key
	// Offset is the next offset to read (the last processed offset + 1).
	Offset int64
	// Metadata is a free-form string stored with the offset (Kafka's
	// OffsetCommit metadata). A commit without metadata stores "".
	Metadata string
	// UpdatedAt is when the offset was last committed, in milliseconds.
	// The store sets it; it is ignored on input.
	UpdatedAt time.Time
}

// Filter selects entries for List and Delete. Empty fields match all.
type Filter struct {
	Consumer string
	Topic    string
	// Partitions, if not empty, selects only these partitions of Topic
	// (Kafka's OffsetDelete); it needs Topic.
	Partitions []int32
}

// Store keeps committed offsets. Implementations are safe for concurrent
// use. A commit replaces the whole entry: offset, metadata and time.
type Store interface {
	// Committed returns the committed offset (the next offset to read),
	// or an error matching ErrNotFound when none was committed.
	Committed(ctx context.Context, k Key) (int64, error)
	// Commit stores offset as k's committed offset.
	Commit(ctx context.Context, k Key, offset int64) error
	// CommitMany stores all offsets in one transaction: all or none.
	CommitMany(ctx context.Context, offsets map[Key]int64) error
	// CommitEntries is CommitMany with metadata (Kafka's OffsetCommit).
	// UpdatedAt is ignored. A key given twice keeps the last entry.
	CommitEntries(ctx context.Context, entries []Entry) error
	// List returns the entries matching f, sorted by consumer, topic and
	// partition (byte order).
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Delete removes the entries matching f and returns how many. f must
	// name at least a consumer or a topic.
	Delete(ctx context.Context, f Filter) (int, error)
	// Close releases the store. Later calls fail with ErrClosed; a second
	// Close returns nil.
	Close() error
}

func (f Filter) validateDelete() error {
	if f.Consumer == "" && f.Topic == "" {
		return fmt.Errorf("%w: delete needs a consumer or a topic", ErrInvalid)
	}
	return f.validate()
}

func (f Filter) validate() error {
	if len(f.Partitions) > 0 && f.Topic == "" {
		return fmt.Errorf("%w: partitions %v of no topic", ErrInvalid, f.Partitions)
	}
	return nil
}

// matchPartition reports whether f selects partition p.
func (f Filter) matchPartition(p int32) bool {
	return len(f.Partitions) == 0 || slices.Contains(f.Partitions, p)
}

// timeMs converts the stores' Unix milliseconds to a time.
func timeMs(v int64) time.Time { return time.UnixMilli(v) }
