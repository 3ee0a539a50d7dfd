package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// PartitionLag is one consumer's standing on one partition.
type PartitionLag struct {
	Consumer  string `json:"consumer"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // next offset to read; −1 when nothing is committed
	Start     int64  `json:"start"`     // log start offset
	Head      int64  `json:"head"`
	// Stable is the last stable offset, where a read_committed reader
	// (the embedded consumer's default) stops: Lag counts up to it. It
	// is the head on a partition with no open transaction.
	Stable int64 `json:"stable"`
	Lag    int64 `json:"lag"`    // stable − committed (stable − start when nothing is committed)
	Missed int64 `json:"missed"` // records deleted by retention before this consumer read them
}

// LagOf is a consumer's standing on a partition that keeps the offsets
// from start up to head: lag is head − max(committed, start), the records
// it has yet to read, and missed is start − committed when retention
// deleted records before the consumer read them. committed is the next
// offset to read, or −1 when nothing is committed: then everything kept
// is lag and nothing is missed.
//
// Every count of lag is this one: Lag and `passbook lag`, the HTTP API,
// /metrics and the dashboard (which shows what the server sends).
func LagOf(committed, start, head int64) (lag, missed int64) {
	if committed < 0 {
		return head - start, 0
	}
	// A consumer past head has no lag: head may be a last stable offset
	// that a read_uncommitted consumer read beyond.
	return max(0, head-max(committed, start)), max(0, start-committed)
}

// NewPartitionLag is consumer's standing on topic/partition, counted by
// LagOf; committed is −1 when nothing is committed.
func NewPartitionLag(consumer, topic string, partition int32, committed, start, head int64) PartitionLag {
	pl := PartitionLag{Consumer: consumer, Topic: topic, Partition: partition, Committed: committed, Start: start, Head: head, Stable: head}
	pl.Lag, pl.Missed = LagOf(committed, start, head)
	return pl
}

// NewStableLag is NewPartitionLag counting lag up to the partition's
// last stable offset stable (≤ head) rather than its head: the records a
// read_committed consumer (the default) has yet to read. Lag and the
// HTTP API count with it.
func NewStableLag(consumer, topic string, partition int32, committed, start, stable, head int64) PartitionLag {
	pl := NewPartitionLag(consumer, topic, partition, committed, start, stable)
	pl.Head = head
	return pl
}

// Lag reports consumer's lag on every partition of src, up to each
// partition's last stable offset (records of open transactions are not
// yet readable by a read_committed consumer, the default). A partition
// with nothing committed counts everything kept as lag.
func Lag(ctx context.Context, store offsets.Store, src Source, consumer string) ([]PartitionLag, error) {
	var out []PartitionLag
	for p := range src.Partitions() {
		l, err := src.Partition(int32(p))
		if err != nil {
			return nil, err
		}
		c, err := store.Committed(ctx, offsets.Key{Consumer: consumer, Topic: src.Name(), Partition: int32(p)})
		switch {
		case errors.Is(err, offsets.ErrNotFound):
			c = -1
		case err != nil:
			return nil, err
		}
		head := l.Head()
		out = append(out, NewStableLag(consumer, src.Name(), int32(p), c, l.StartOffset(), l.LastStableOffset(), head))
	}
	return out, nil
}

// Seek moves consumer's committed offsets on src (all partitions, or the
// given ones) to the position to: earliest for a replay of everything,
// latest to skip, an offset, or a time. It refuses while the consumer runs
// elsewhere (its lease is held). An offset outside a partition's range
// (a *RangeError) or an unknown partition (a *PartitionError) moves
// nothing. It returns the new offsets.
func Seek(ctx context.Context, store *offsets.SQLite, src Source, consumer string, to Start, partitions []int32) (map[int32]int64, error) {
	if consumer == "" {
		return nil, fmt.Errorf("%w: a consumer needs a name", ErrInvalid)
	}
	lease, err := store.Acquire(ctx, consumer, src.Name(), "seek", 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: cannot move its offsets while it runs: %w", consumer, src.Name(), err)
	}
	defer store.Release(context.WithoutCancel(ctx), lease)
	partitions, err = partitionList(src, partitions)
	if err != nil {
		return nil, err
	}
	// Every target is found before anything is written, so that an
	// offset out of range on one partition moves none.
	targets := make([]int64, len(partitions))
	for i, p := range partitions {
		l, err := src.Partition(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		// Latest is the last stable offset: a read_uncommitted consumer
		// then reads again what open transactions hold; a read_committed
		// one does not skip them.
		if targets[i], err = startOffset(to, src.Name(), p, l, storage.ReadCommitted); err != nil {
			return nil, err
		}
	}
	moved := map[int32]int64{}
	for i, p := range partitions {
		if err := store.CommitFenced(ctx, lease, offsets.Key{Consumer: consumer, Topic: src.Name(), Partition: p}, targets[i]); err != nil {
			return moved, err
		}
		moved[p] = targets[i]
	}
	return moved, nil
}
