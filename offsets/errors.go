package offsets

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Match them with errors.Is: the errors returned carry
// detail (the key, the holder, the path) around them.
var (
	// ErrNotFound: Committed found no committed offset for the key.
	ErrNotFound = errors.New("offsets: no committed offset")
	// ErrInvalid: a negative offset or partition, an empty consumer, topic
	// or holder, a non-positive TTL, an empty Filter for Delete, or bad
	// Options. Nothing was written.
	ErrInvalid = errors.New("offsets: invalid argument")
	// ErrClosed: the store was used after Close.
	ErrClosed = errors.New("offsets: store closed")
	// ErrLeaseHeld: Acquire found a live lease of another holder. The
	// error is a *LeaseHeldError naming the holder and the expiry.
	ErrLeaseHeld = errors.New("offsets: lease held")
	// ErrFenced: the lease's generation is no longer current (it expired
	// and another holder took it over, or it was released). Nothing was
	// written.
	ErrFenced = errors.New("offsets: fenced")
	// ErrSchemaVersion: the database was written by a newer version of
	// this package, with a schema this build does not know.
	ErrSchemaVersion = errors.New("offsets: unknown schema version")
	// ErrLocked: another connection or process holds the database.
	ErrLocked = errors.New("offsets: database locked")
	// ErrUnavailable: the store can no longer make a commit durable — an
	// fsync of its WAL failed (SyncGroup), or its file was deleted or
	// replaced under it. Nothing written since can be trusted to be on
	// disk; the store refuses every later write. Reopen it (restart the
	// server) after seeing to the cause; passbook verify says what is
	// readable.
	ErrUnavailable = errors.New("offsets: store unavailable")
)

// LeaseHeldError is returned by Acquire when another holder's lease is
// live. It matches ErrLeaseHeld under errors.Is.
type LeaseHeldError struct {
	Held Lease     // the current lease
	Now  time.Time // the store's clock when Acquire was refused
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: consumer %q topic %q is held by %q until %s (%v from now, generation %d)",
		ErrLeaseHeld, e.Held.Consumer, e.Held.Topic, e.Held.Holder,
		e.Held.Expires.UTC().Format(time.RFC3339Nano), e.Held.Expires.Sub(e.Now), e.Held.Generation)
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }
