package offsets

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// memory is a Store in a map, for tests of the packages above this one.
type memory struct {
	mu      sync.RWMutex
	entries map[Key]Entry // nil once closed
}

// NewMemory returns an empty Store kept in memory: nothing survives Close.
// It behaves like SQLite (the same conformance suite passes) but offers no
// leases and no transactions.
func NewMemory() Store {
	return &memory{entries: make(map[Key]Entry)}
}

func (m *memory) Committed(ctx context.Context, k Key) (int64, error) {
	if err := k.validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, wrap(err, "committed %v", k)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.entries == nil {
		return 0, ErrClosed
	}
	e, ok := m.entries[k]
	if !ok {
		return 0, fmt.Errorf("%w for %v", ErrNotFound, k)
	}
	return e.Offset, nil
}

func (m *memory) Commit(ctx context.Context, k Key, offset int64) error {
	return m.CommitEntries(ctx, []Entry{{Key: k, Offset: offset}})
}

func (m *memory) CommitMany(ctx context.Context, offsets map[Key]int64) error {
	entries := make([]Entry, 0, len(offsets))
	for k, off := range offsets {
		entries = append(entries, Entry{Key: k, Offset: off})
	}
	return m.CommitEntries(ctx, entries)
}

func (m *memory) CommitEntries(ctx context.Context, entries []Entry) error {
	for _, e := range entries {
		if err := validate(e.Key, e.Offset); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return wrap(err, "commit %d offsets", len(entries))
	}
	now := timeMs(time.Now().UnixMilli())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		return ErrClosed
	}
	for _, e := range entries {
		e.UpdatedAt = now
		m.entries[e.Key] = e
	}
	return nil
}

func (f Filter) match(k Key) bool {
	return (f.Consumer == "" || f.Consumer == k.Consumer) && (f.Topic == "" || f.Topic == k.Topic) && f.matchPartition(k.Partition)
}

func (m *memory) List(ctx context.Context, f Filter) ([]Entry, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(err, "list %+v", f)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.entries == nil {
		return nil, ErrClosed
	}
	var list []Entry
	for k, e := range m.entries {
		if f.match(k) {
			list = append(list, e)
		}
	}
	sortEntries(list)
	return list, nil
}

// sortEntries sorts by consumer, topic and partition.
func sortEntries(list []Entry) {
	slices.SortFunc(list, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition))
	})
}

func (m *memory) Delete(ctx context.Context, f Filter) (int, error) {
	if err := f.validateDelete(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, wrap(err, "delete %+v", f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		return 0, ErrClosed
	}
	n := 0
	for k := range m.entries {
		if f.match(k) {
			delete(m.entries, k)
			n++
		}
	}
	return n, nil
}

func (m *memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = nil
	return nil
}
