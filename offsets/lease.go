package offsets

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// Lease makes one holder the only writer of a consumer's offsets on a
// topic. Every Acquire starts a new generation; CommitFenced refuses a
// lease whose generation is no longer current, so a holder that paused
// past its expiry and was replaced cannot move the bookmark.
type Lease struct {
	Consumer   string
	Topic      string
	Holder     string
	Generation int64         // 1 for the first lease on (consumer, topic), then +1 per Acquire
	Expires    time.Time     // the lease is live before this instant (millisecond precision)
	TTL        time.Duration // what Renew extends the lease by
}

// A lease row is kept after Release (holder "", expires_ms 0) so that
// generations never repeat.
const fencedSQL = `INSERT INTO passbook_offsets (consumer, topic, partition, next_offset, metadata, updated_ms, crc)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?9
	WHERE EXISTS (SELECT 1 FROM passbook_leases
		WHERE consumer = ?1 AND topic = ?2 AND holder = ?7 AND generation = ?8)
	ON CONFLICT (consumer, topic, partition) DO UPDATE SET
		next_offset = excluded.next_offset, metadata = excluded.metadata, updated_ms = excluded.updated_ms, crc = excluded.crc`

func validateLease(consumer, topic, holder string) error {
	switch {
	case consumer == "":
		return fmt.Errorf("%w: empty consumer name", ErrInvalid)
	case topic == "":
		return fmt.Errorf("%w: empty topic name", ErrInvalid)
	case holder == "":
		return fmt.Errorf("%w: empty lease holder", ErrInvalid)
	}
	return nil
}

func validateTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: lease ttl %v is under 1ms", ErrInvalid, ttl)
	}
	return nil
}

// Acquire takes the lease on (consumer, topic) for holder, for ttl. It
// fails with a *LeaseHeldError (matching ErrLeaseHeld) while another
// holder's lease is live. An expired or released lease is taken over; the
// holder's own live lease is replaced. Either way the generation goes up.
func (s *SQLite) Acquire(ctx context.Context, consumer, topic, holder string, ttl time.Duration) (Lease, error) {
	if err := validateLease(consumer, topic, holder); err != nil {
		return Lease{}, err
	}
	if err := validateTTL(ttl); err != nil {
		return Lease{}, err
	}
	now := s.opts.Now()
	l := Lease{Consumer: consumer, Topic: topic, Holder: holder, TTL: ttl,
		Expires: timeMs(now.Add(ttl).UnixMilli())}
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		return txLocked(c, func() error {
			cur, found, err := currentLease(c, consumer, topic)
			if err != nil {
				return err
			}
			if found && cur.Holder != holder && now.Before(cur.Expires) {
				return &LeaseHeldError{Held: cur, Now: now}
			}
			l.Generation = cur.Generation + 1
			s.mu.fence = leaseCheck{} // the lease row changes
			return putLease(c, l)
		})
	})
	if err != nil {
		return Lease{}, wrap(err, "acquire lease on consumer %q topic %q for %q", consumer, topic, holder)
	}
	return l, nil
}

// putLease writes l as the lease row of its consumer and topic.
func putLease(c *sqlite3.Conn, l Lease) error {
	return execStmt(c, `INSERT INTO passbook_leases (consumer, topic, holder, generation, expires_ms)
		VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT (consumer, topic) DO UPDATE SET
			holder = excluded.holder, generation = excluded.generation, expires_ms = excluded.expires_ms`,
		l.Consumer, l.Topic, l.Holder, l.Generation, l.Expires.UnixMilli())
}

// currentLease reads the lease row; a released lease has Expires at the
// Unix epoch.
func currentLease(c *sqlite3.Conn, consumer, topic string) (Lease, bool, error) {
	st, _, err := c.Prepare(`SELECT holder, generation, expires_ms FROM passbook_leases
		WHERE consumer = ?1 AND topic = ?2`)
	if err != nil {
		return Lease{}, false, err
	}
	defer st.Close()
	if err := bind(st, consumer, topic); err != nil {
		return Lease{}, false, err
	}
	l := Lease{Consumer: consumer, Topic: topic}
	found := st.Step()
	if found {
		l.Holder, l.Generation, l.Expires = st.ColumnText(0), st.ColumnInt64(1), timeMs(st.ColumnInt64(2))
	}
	return l, found, st.Err()
}

// Renew extends l, if it is still current, to now + l.TTL. It fails with
// ErrFenced if another Acquire came since; an expired lease nobody took
// over can still be renewed.
func (s *SQLite) Renew(ctx context.Context, l Lease) (Lease, error) {
	if err := validateLease(l.Consumer, l.Topic, l.Holder); err != nil {
		return Lease{}, err
	}
	if err := validateTTL(l.TTL); err != nil {
		return Lease{}, err
	}
	l.Expires = timeMs(s.opts.Now().Add(l.TTL).UnixMilli())
	if err := s.updateLease(ctx, l, l.Holder, l.Expires); err != nil {
		return Lease{}, wrap(err, "renew lease")
	}
	return l, nil
}

// Release ends l now, so that another holder need not wait for it to
// expire; l is fenced from then on. It fails with ErrFenced if l is no
// longer current (released already, or taken over).
func (s *SQLite) Release(ctx context.Context, l Lease) error {
	if err := validateLease(l.Consumer, l.Topic, l.Holder); err != nil {
		return err
	}
	return wrap(s.updateLease(ctx, l, "", time.UnixMilli(0)), "release lease")
}

// updateLease sets the holder and expiry of l's row if l is current.
func (s *SQLite) updateLease(ctx context.Context, l Lease, holder string, expires time.Time) error {
	return s.do(ctx, func(c *sqlite3.Conn) error {
		s.mu.fence = leaseCheck{} // the lease row changes
		err := execStmt(c, `UPDATE passbook_leases SET holder = ?5, expires_ms = ?6
			WHERE consumer = ?1 AND topic = ?2 AND holder = ?3 AND generation = ?4`,
			l.Consumer, l.Topic, l.Holder, l.Generation, holder, expires.UnixMilli())
		if err != nil {
			return err
		}
		if c.Changes() == 0 {
			return fencedError(l)
		}
		return nil
	})
}

func fencedError(l Lease) error {
	return fmt.Errorf("%w: lease of %q on consumer %q topic %q, generation %d, is no longer current",
		ErrFenced, l.Holder, l.Consumer, l.Topic, l.Generation)
}

// leaseCheck remembers the last lease a fenced commit found current in the
// database. While the store is not shared, every change to a lease row
// goes through the direct connection, which clears it first (Acquire,
// TakeOver, Renew, Release), and no other process can write the file: so
// while it is set, that lease is still current, and CommitFenced can run
// the plain upsert instead of the fenced one — without the lease
// subquery, ~8% of a commit.
type leaseCheck struct {
	set                     bool
	consumer, topic, holder string
	generation              int64
}

func (lc *leaseCheck) holds(l Lease) bool {
	return lc.set && lc.consumer == l.Consumer && lc.topic == l.Topic && lc.holder == l.Holder && lc.generation == l.Generation
}

// CommitFenced commits k's offset only while lease is current: otherwise
// it fails with ErrFenced and writes nothing. It is one statement, as fast
// as Commit. k must be of the lease's consumer and topic. Expiry alone
// does not fence: only another Acquire does.
func (s *SQLite) CommitFenced(ctx context.Context, lease Lease, k Key, offset int64) error {
	if err := validate(k, offset); err != nil {
		return err
	}
	if k.Consumer != lease.Consumer || k.Topic != lease.Topic {
		return fmt.Errorf("%w: %v is not under the lease on consumer %q topic %q",
			ErrInvalid, k, lease.Consumer, lease.Topic)
	}
	now := s.opts.Now().UnixMilli()
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		if s.mu.fence.holds(lease) && !s.shared.Load() {
			return s.commitLocked(c, k, offset, "", now)
		}
		st := &s.mu.fenced
		if err := st.bindUpsert(k, offset, "", now, 9); err != nil {
			return err
		}
		if err := st.BindText(7, lease.Holder); err != nil {
			return err
		}
		if err := st.BindInt64(8, lease.Generation); err != nil {
			return err
		}
		if err := st.Exec(); err != nil {
			return err
		}
		if c.Changes() == 0 {
			return fencedError(lease)
		}
		if !s.shared.Load() {
			s.mu.fence = leaseCheck{true, lease.Consumer, lease.Topic, lease.Holder, lease.Generation}
		}
		return nil
	})
	if err != nil {
		return wrap(err, "commit %v under lease", k)
	}
	return nil
}

// bind binds args (string or int64) to ?1, ?2, ….
func bind(st *sqlite3.Stmt, args ...any) error {
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case string:
			err = st.BindText(i+1, v)
		case int64:
			err = st.BindInt64(i+1, v)
		default:
			panic(fmt.Sprintf("offsets: bind %T", a))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// execStmt prepares, binds and runs one statement.
func execStmt(c *sqlite3.Conn, sql string, args ...any) error {
	st, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := bind(st, args...); err != nil {
		return err
	}
	return st.Exec()
}

// TakeOver replaces held — if it is still the current lease, with the
// same holder and generation — by a new lease for holder, even though
// held has not expired. It is for a successor that knows the holder is
// gone (its process no longer exists), so it need not wait out the TTL.
// If the lease changed meanwhile it fails like Acquire would.
func (s *SQLite) TakeOver(ctx context.Context, held Lease, holder string, ttl time.Duration) (Lease, error) {
	if err := validateLease(held.Consumer, held.Topic, holder); err != nil {
		return Lease{}, err
	}
	if err := validateTTL(ttl); err != nil {
		return Lease{}, err
	}
	now := s.opts.Now()
	l := Lease{Consumer: held.Consumer, Topic: held.Topic, Holder: holder, TTL: ttl,
		Expires: timeMs(now.Add(ttl).UnixMilli())}
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		return txLocked(c, func() error {
			cur, found, err := currentLease(c, held.Consumer, held.Topic)
			if err != nil {
				return err
			}
			if found && (cur.Holder != held.Holder || cur.Generation != held.Generation) && cur.Holder != holder && now.Before(cur.Expires) {
				return &LeaseHeldError{Held: cur, Now: now}
			}
			l.Generation = cur.Generation + 1
			s.mu.fence = leaseCheck{} // the lease row changes
			return putLease(c, l)
		})
	})
	if err != nil {
		return Lease{}, wrap(err, "take over lease on consumer %q topic %q for %q", held.Consumer, held.Topic, holder)
	}
	return l, nil
}

// CommitTxFenced is CommitTx under a lease: inside the caller's
// transaction, and only while lease is current (else ErrFenced, and the
// caller should roll back).
func (s *SQLite) CommitTxFenced(ctx context.Context, tx *sql.Tx, lease Lease, k Key, offset int64) error {
	if err := validate(k, offset); err != nil {
		return err
	}
	if k.Consumer != lease.Consumer || k.Topic != lease.Topic {
		return fmt.Errorf("%w: %v is not under the lease on consumer %q topic %q",
			ErrInvalid, k, lease.Consumer, lease.Topic)
	}
	now := s.opts.Now().UnixMilli()
	res, err := tx.ExecContext(ctx, fencedSQL, k.Consumer, k.Topic, int64(k.Partition), offset, "",
		now, lease.Holder, lease.Generation, entryCRC(k, offset, "", now))
	if err != nil {
		return wrap(err, "commit %v in transaction under lease", k)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fencedError(lease)
	}
	return nil
}
