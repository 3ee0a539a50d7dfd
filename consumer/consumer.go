package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// Source is a topic as a consumer sees it; *passbook.Topic is one.
type Source interface {
	Name() string
	Partitions() int
	Partition(p int32) (*storage.Log, error)
}

// Message is a record and the partition it came from. Its byte slices
// are valid only during the handler call (Record.Clone keeps them).
type Message struct {
	Partition int32
	batch.Record
}

// Handler handles one message. Returning Stop ends the run after the
// message counts as handled; any other error ends it with that error,
// the message not handled.
type Handler func(ctx context.Context, m Message) error

// TxHandler handles one message inside tx, a transaction on the offset
// store's database that also commits the consumer's offset.
type TxHandler func(ctx context.Context, tx *sql.Tx, m Message) error

// Stop is returned by a handler to end a run cleanly.
//
//lint:ignore ST1012 a signal, not a failure, named like filepath.SkipDir
var Stop = errors.New("consumer: stop")

// Consumer is a named reader of a topic that keeps its own committed
// offsets. It is for one goroutine: one Run at a time.
type Consumer struct {
	o     Options
	src   Source
	store *offsets.SQLite
	parts []*part

	mu    sync.Mutex // guards lease
	lease offsets.Lease

	stopRenew chan struct{}
	lost      context.Context // done when the lease is lost; its cause says how
	loseLease context.CancelCauseFunc
	closed    bool
}

type part struct {
	p         int32
	log       *storage.Log
	reader    *storage.Reader
	next      int64 // next offset to read
	committed int64 // the last offset committed (or the start position): Commit skips a partition that has not moved
	pending   int64 // handled but not committed, for CommitEvery; −1 none
}

// New opens a consumer: it takes the name's lease on the topic, reads the
// committed offsets and positions a reader on each partition.
func New(ctx context.Context, src Source, store *offsets.SQLite, opts Options) (*Consumer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Consumer{o: o, src: src, store: store, stopRenew: make(chan struct{})}
	c.lost, c.loseLease = context.WithCancelCause(context.Background())
	c.lease, err = store.Acquire(ctx, o.Name, src.Name(), o.Holder, o.LeaseTTL)
	var held *offsets.LeaseHeldError
	if errors.As(err, &held) && holderGone(held.Held.Holder) {
		o.Logger.Warn("taking over the lease of a consumer process that is gone", "consumer", o.Name, "topic", src.Name(), "holder", held.Held.Holder)
		c.lease, err = store.TakeOver(ctx, held.Held, o.Holder, o.LeaseTTL)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", o.Name, src.Name(), err)
	}
	parts, err := partitionList(src, o.Partitions)
	if err != nil {
		c.release()
		return nil, err
	}
	for _, p := range parts {
		l, err := src.Partition(p)
		if err != nil {
			c.release()
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		next, err := c.position(ctx, p, l)
		if err != nil {
			c.release()
			return nil, err
		}
		c.parts = append(c.parts, &part{p: p, log: l, reader: l.NewReader(next).Isolate(o.Isolation), next: next, committed: next, pending: -1})
	}
	go c.renew()
	return c, nil
}

// position finds where partition p starts: the committed offset, or the
// Start option; and applies the gap policy.
func (c *Consumer) position(ctx context.Context, p int32, l *storage.Log) (int64, error) {
	key := offsets.Key{Consumer: c.o.Name, Topic: c.src.Name(), Partition: p}
	next, err := c.store.Committed(ctx, key)
	if errors.Is(err, offsets.ErrNotFound) {
		return startOffset(c.o.Start, c.src.Name(), p, l, c.o.Isolation)
	}
	if err != nil {
		return 0, err
	}
	start, head := l.StartOffset(), l.Head()
	if next > head {
		return 0, fmt.Errorf("consumer %s on %s/%d: committed offset %d is past the head %d: %w",
			c.o.Name, c.src.Name(), p, next, head, &storage.OutOfRangeError{Offset: next, Start: start, Head: head})
	}
	if next >= start {
		return next, nil
	}
	gap := &GapError{Consumer: c.o.Name, Topic: c.src.Name(), Partition: p, Committed: next, Start: start}
	switch c.o.OnGap {
	case GapResetEarliest:
		c.o.Logger.Warn("records deleted before they were read; resetting to earliest", "err", gap, "missed", gap.Missed())
		return start, nil
	case GapResetLatest:
		c.o.Logger.Warn("records deleted before they were read; resetting to latest", "err", gap, "missed", head-next)
		return head, nil
	}
	return 0, gap
}

// partitionList returns the partitions asked for (nil: all of src's),
// refusing one src does not have or one named twice.
func partitionList(src Source, asked []int32) ([]int32, error) {
	n := src.Partitions()
	if asked == nil {
		all := make([]int32, n)
		for p := range all {
			all[p] = int32(p)
		}
		return all, nil
	}
	seen := make(map[int32]bool, len(asked))
	for _, p := range asked {
		if p < 0 || int(p) >= n {
			_, err := src.Partition(p) // the source's own error, for errors.Is
			return nil, &PartitionError{Topic: src.Name(), Partition: p, Partitions: n, Err: err}
		}
		if seen[p] {
			return nil, &PartitionError{Topic: src.Name(), Partition: p, Partitions: n, Duplicate: true}
		}
		seen[p] = true
	}
	return asked, nil
}

// startOffset is where s starts on partition p of topic (l) for a reader
// of isolation iso: Latest is the last stable offset read committed, so
// that records of transactions still open are not skipped once they
// commit.
func startOffset(s Start, topic string, p int32, l *storage.Log, iso storage.Isolation) (int64, error) {
	switch s.kind {
	case startLatest:
		return l.Stable(iso), nil
	case startAtOffset:
		if start, head := l.StartOffset(), l.Head(); s.offset < start || s.offset > head {
			return 0, &RangeError{Topic: topic, Partition: p, Offset: s.offset, Start: start, Head: head}
		}
		return s.offset, nil
	case startTime:
		return l.OffsetForTime(s.time)
	}
	return l.StartOffset(), nil
}

// Positions returns the next offset the consumer will read, per partition.
func (c *Consumer) Positions() map[int32]int64 {
	m := make(map[int32]int64, len(c.parts))
	for _, pt := range c.parts {
		m[pt.p] = pt.next
	}
	return m
}

// Run handles records as they come, following the head, until ctx is
// done (it returns ctx.Err() then), the handler returns Stop (nil) or an
// error (that error), or the lease is lost.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	return c.run(ctx, h, true, c.o.Commit)
}

// Drain is Run that stops, returning nil, once it has reached the heads
// the partitions had when it started... or later ones it finds on the way.
func (c *Consumer) Drain(ctx context.Context, h Handler) error {
	return c.run(ctx, h, false, c.o.Commit)
}

// run handles records until the head (or forever, following) with the
// given commit mode; RunTx passes CommitNone because it commits inside
// the handler's transaction.
func (c *Consumer) run(ctx context.Context, h Handler, follow bool, mode Commit) (err error) {
	if c.closed {
		return ErrClosed
	}
	defer func() {
		if cerr := c.commitPending(context.WithoutCancel(ctx)); err == nil || errors.Is(err, Stop) {
			err = cerr
		}
		if errors.Is(err, Stop) {
			err = nil
		}
	}()
	lastCommit := time.Now()
	n := 0
	for {
		// Once a burst, so that a cancelled run stops within 4,096
		// records a partition rather than at the head.
		if err := ctx.Err(); err != nil {
			return err
		}
		progressed := false
		for _, pt := range c.parts {
			// A burst per partition keeps them fair without a syscall
			// or a channel per record.
			for range 4096 {
				rec, ok, err := pt.reader.TryNext()
				if err != nil {
					return fmt.Errorf("consumer %s on %s/%d: %w", c.o.Name, c.src.Name(), pt.p, err)
				}
				if !ok {
					if err := c.skipped(ctx, pt, mode); err != nil {
						return err
					}
					break
				}
				progressed = true
				if err := c.handle(ctx, h, pt, rec, mode); err != nil {
					return err
				}
				if mode == CommitEvery {
					n++
					if (c.o.EveryN > 0 && n >= c.o.EveryN) || (c.o.EveryD > 0 && n&255 == 0 && time.Since(lastCommit) >= c.o.EveryD) {
						if err := c.commitPending(ctx); err != nil {
							return err
						}
						n, lastCommit = 0, time.Now()
					}
				}
			}
		}
		if progressed {
			continue
		}
		if !follow {
			return nil
		}
		if mode == CommitEvery && n > 0 {
			if err := c.commitPending(ctx); err != nil { // idle: nothing to batch with
				return err
			}
			n, lastCommit = 0, time.Now()
		}
		if err := c.Wait(ctx); err != nil {
			return err
		}
	}
}

// skipped moves a partition's position past what its reader skipped
// after the last record handled — transaction markers, an aborted
// transaction's records, offsets compaction removed — once the reader
// has nothing more to return, and commits it as mode commits a record:
// otherwise the committed offset would stay on a marker, and lag would
// count records nobody can read. With CommitNone the caller's Commit
// writes it.
func (c *Consumer) skipped(ctx context.Context, pt *part, mode Commit) error {
	off := pt.reader.Offset()
	if off <= pt.next {
		return nil
	}
	pt.next = off
	switch mode {
	case CommitAfter, CommitBefore:
		if err := c.commit(ctx, pt.p, off); err != nil {
			return err
		}
		pt.committed = off
	case CommitEvery:
		pt.pending = off
	}
	return nil
}

// handle runs the handler on one record, committing before or after it
// as mode says. A handler's Stop still counts the record as handled.
func (c *Consumer) handle(ctx context.Context, h Handler, pt *part, rec batch.Record, mode Commit) error {
	m := Message{Partition: pt.p, Record: rec}
	next := rec.Offset + 1
	if mode == CommitBefore {
		if err := c.commit(ctx, pt.p, next); err != nil {
			return err
		}
		pt.next, pt.committed = next, next
		return h(ctx, m)
	}
	herr := h(ctx, m)
	if herr != nil && !errors.Is(herr, Stop) {
		return herr // not handled: a crash between work and commit looks the same
	}
	pt.next = next
	switch mode {
	case CommitAfter:
		if err := c.commit(ctx, pt.p, next); err != nil {
			return err
		}
		pt.committed = next
	case CommitEvery:
		pt.pending = next
	}
	return herr
}

// RunTx is Run for the transactional mode: each record is handled inside
// a transaction on the offset store's database that also commits the
// offset, so the handler's writes and the commit succeed or fail
// together. With follow false it stops at the head.
func (c *Consumer) RunTx(ctx context.Context, follow bool, h TxHandler) error {
	db := c.store.DB()
	return c.run(ctx, func(ctx context.Context, m Message) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		herr := h(ctx, tx, m)
		if herr != nil && !errors.Is(herr, Stop) {
			return herr
		}
		c.mu.Lock()
		lease := c.lease
		c.mu.Unlock()
		key := offsets.Key{Consumer: c.o.Name, Topic: c.src.Name(), Partition: m.Partition}
		if err := c.store.CommitTxFenced(ctx, tx, lease, key, m.Offset+1); err != nil {
			return fmt.Errorf("consumer %s: %w", c.o.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		return herr
	}, follow, CommitNone)
}

func (c *Consumer) commit(ctx context.Context, p int32, next int64) error {
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	key := offsets.Key{Consumer: c.o.Name, Topic: c.src.Name(), Partition: p}
	if err := c.store.CommitFenced(ctx, lease, key, next); err != nil {
		return fmt.Errorf("consumer %s: %w", c.o.Name, err)
	}
	return nil
}

// Commit commits the consumer's current positions (the offset after the
// last record each partition's handler returned from) now, whatever the
// mode, on every partition whose position moved since its last commit;
// one that has not moved is not written. It is for a caller that runs
// with CommitNone and decides itself when what it handled is done — the
// CLI commits once its output has reached the operating system.
func (c *Consumer) Commit(ctx context.Context) error {
	for _, pt := range c.parts {
		if pt.next != pt.committed {
			if err := c.commit(ctx, pt.p, pt.next); err != nil {
				return err
			}
			pt.committed = pt.next
		}
		pt.pending = -1
	}
	return nil
}

func (c *Consumer) commitPending(ctx context.Context) error {
	for _, pt := range c.parts {
		if pt.pending >= 0 {
			if err := c.commit(ctx, pt.p, pt.pending); err != nil {
				return err
			}
			pt.committed, pt.pending = pt.pending, -1
		}
	}
	return nil
}

// Wait blocks until any partition has a record past the consumer's
// position (read committed: its last stable offset passes it), ctx is
// done, or the lease is lost.
func (c *Consumer) Wait(ctx context.Context) error {
	// The lease's loss ends the wait too (AfterFunc starts a goroutine
	// only then, to cancel it), and storage.WaitAny waits on every
	// partition in this goroutine: nothing of the wait outlives it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.lost, cancel)()
	ws := make([]storage.WaitFor, len(c.parts))
	for i, pt := range c.parts {
		ws[i] = storage.WaitFor{Log: pt.log, Offset: pt.reader.Offset(), Stable: c.o.Isolation == storage.ReadCommitted}
	}
	_, err := storage.WaitAny(ctx, ws...)
	return c.waitErr(err)
}

func (c *Consumer) waitErr(err error) error {
	if c.lost.Err() != nil {
		return context.Cause(c.lost)
	}
	return err
}

// renew keeps the lease alive at a third of its TTL.
func (c *Consumer) renew() {
	t := time.NewTicker(c.o.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stopRenew:
			return
		case <-t.C:
			c.mu.Lock()
			l, err := c.store.Renew(context.Background(), c.lease)
			if err == nil {
				c.lease = l
			}
			c.mu.Unlock()
			if err != nil {
				err = fmt.Errorf("consumer %s on %s: lost its lease: %w", c.o.Name, c.src.Name(), err)
				c.o.Logger.Error("lease lost", "err", err)
				c.loseLease(err)
				return
			}
		}
	}
}

// Close commits what CommitEvery has pending, releases the name's lease
// and closes the readers.
func (c *Consumer) Close() error {
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	err := c.commitPending(context.Background())
	c.release()
	return err
}

// Abandon drops the consumer as a crash would: nothing pending is
// committed and the lease is left to expire... except that, in-process,
// it is released so a successor can take over at once. Tests and the lab
// use it to simulate a crash.
func (c *Consumer) Abandon() {
	c.closed = true
	c.release()
}

func (c *Consumer) release() {
	select {
	case <-c.stopRenew:
	default:
		close(c.stopRenew)
	}
	for _, pt := range c.parts {
		pt.reader.Close()
	}
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	c.store.Release(context.Background(), lease)
}
