package offsets

import (
	"fmt"
	"time"

	"github.com/passbook-log/passbook/vfs"
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
	// SyncGroup: a returned commit survives a power loss, like SyncFull,
	// but concurrent commits share fsyncs (group commit): a commit is
	// written as in SyncNormal, then waits for an fsync of the WAL that
	// started after its write; one fsync covers every commit written
	// before it began. A lone committer still pays an fsync per commit.
	SyncGroup
)

func (s Sync) String() string {
	switch s {
	case SyncNormal:
		return "normal"
	case SyncFull:
		return "full"
	case SyncGroup:
		return "group"
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
	// FS, if set, holds the database and its WAL instead of the OS (tests
	// give it a vfs.MemFS to cut the power under the store: MemFS.Crash
	// drops what was not fsync'd). The WAL index (-shm, rebuilt from the
	// WAL after a crash, never data) stays in a temporary directory of
	// the OS; the WAL is written with plain writes, not a mapping.
	FS vfs.FS
	// OnUnavailable, if set, is called once when the store becomes
	// unavailable (ErrUnavailable: its file deleted, replaced or
	// truncated under it, or a failed fsync), with the reason.
	OnUnavailable func(error)
}

// ParseSync reads a Sync's String.
func ParseSync(s string) (Sync, error) {
	for _, v := range []Sync{SyncNormal, SyncFull, SyncGroup} {
		if s == v.String() {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: synchronous mode %q: want normal, group or full", ErrInvalid, s)
}

// pragma is SQLite's synchronous setting for s on the direct connection:
// a group commit's fsync is the store's own, after the write.
func (s Sync) pragma() string {
	if s == SyncGroup {
		return "normal"
	}
	return s.String()
}

// Validate reports what is wrong with o, as an error matching ErrInvalid.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if o.Synchronous != SyncNormal && o.Synchronous != SyncFull && o.Synchronous != SyncGroup {
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
