package offsets

import (
	"fmt"
	"time"
)

// Sync says when a commit is durable: SQLite's synchronous setting in WAL
// mode.
type Sync int

const (
	// SyncNormal (the default): a returned commit survives a crash of the
	// process; a power loss may roll back the last commits (never corrupts).
	SyncNormal Sync = iota
	// SyncFull: a returned commit is fsync'd and survives a power loss.
	SyncFull
)

func (s Sync) String() string {
	switch s {
	case SyncNormal:
		return "normal"
	case SyncFull:
		return "full"
	}
	return fmt.Sprintf("Sync(%d)", int(s))
}

// DefaultBusyTimeout is how long a statement waits for a lock held by
// another connection when Options.BusyTimeout is zero.
const DefaultBusyTimeout = 5 * time.Second

// Options configure Open. A nil or zero Options is valid.
type Options struct {
	// Synchronous is the durability of a commit (SyncNormal by default).
	Synchronous Sync
	// BusyTimeout is how long to wait for a lock held by another
	// connection; zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Shared opens the file in SQLite's normal locking mode from the
	// start, so other processes may open it too, at about half the commit
	// rate. By default the store holds the file exclusively until DB is
	// first used (see the package doc).
	Shared bool
	// Now is the clock for UpdatedAt and leases; nil means time.Now.
	Now func() time.Time
}

// Validate reports what is wrong with o, as an error matching ErrInvalid.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if o.Synchronous != SyncNormal && o.Synchronous != SyncFull {
		return fmt.Errorf("%w: options: unknown synchronous mode %v", ErrInvalid, o.Synchronous)
	}
	if o.BusyTimeout < 0 {
		return fmt.Errorf("%w: options: negative busy timeout %v", ErrInvalid, o.BusyTimeout)
	}
	return nil
}

// withDefaults returns a validated copy of o with defaults filled in.
func (o *Options) withDefaults() (Options, error) {
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	var c Options
	if o != nil {
		c = *o
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
