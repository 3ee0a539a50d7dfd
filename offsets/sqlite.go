package offsets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	"github.com/passbook-log/passbook/vfs"
)

// pageSize applies to new databases only. Each commit appends one page to
// the WAL: 1 KiB pages commit about 1.5x faster than SQLite's 4 KiB
// default, and 512-byte pages (SQLite's smallest) about 15% faster again
// (half the bytes to checksum and copy into the WAL, half the page-cache
// pages it dirties); an entry is well under 100 bytes, so a page still
// holds several.
//
// SQLite's default wal_autocheckpoint (1,000 pages) is kept on purpose:
// every commit rewrites the same page, and SQLite's WAL index files each
// new frame of a page by probing past all its earlier frames, so a longer
// WAL makes every commit slower (4,000 pages: ~20%) more than it saves in
// checkpoints' fsyncs.
const pageSize = 512

const (
	upsertSQL = `INSERT INTO passbook_offsets (consumer, topic, partition, next_offset, metadata, updated_ms, crc)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
		ON CONFLICT (consumer, topic, partition) DO UPDATE SET
			next_offset = excluded.next_offset, metadata = excluded.metadata, updated_ms = excluded.updated_ms, crc = excluded.crc`
	// updateSQL is upsertSQL for a row that exists: a quarter cheaper,
	// because the upsert first tries the insert (commitLocked).
	updateSQL = `UPDATE passbook_offsets SET next_offset = ?4, metadata = ?5, updated_ms = ?6, crc = ?7
		WHERE consumer = ?1 AND topic = ?2 AND partition = ?3`
	committedSQL = `SELECT next_offset, metadata, updated_ms, crc FROM passbook_offsets
		WHERE consumer = ?1 AND topic = ?2 AND partition = ?3`
)

// SQLite is the default Store: one SQLite database file in WAL mode. It is
// safe for concurrent use. See the package doc for its locking.
type SQLite struct {
	path string
	opts Options
	db   *sql.DB // pool for DB and CommitTx; connects lazily

	// shared is set once the direct connection uses normal locking: from
	// Open with Options.Shared, else when the pool first connects.
	shared atomic.Bool

	// wal maps the direct connection's WAL while the store is not shared
	// (walmap_linux.go); nil when it does not.
	wal *walVFS
	// fsVFS is Options.FS's VFS; nil on the OS.
	fsVFS *fsVFS

	// group is SyncGroup's group commit, walSync its WAL handle; nil in
	// the other modes.
	group   *groupSync
	walSync *walSyncer

	// lost is the error that made the store unavailable (identity.go,
	// groupSync); fileID the file it opened, watched until Close.
	lost                 atomic.Pointer[error]
	fileID               fileID
	watchStop, watchDone chan struct{}

	txMu   sync.Mutex // serializes preparing txStmt
	txStmt atomic.Pointer[sql.Stmt]

	mu struct {
		sync.Mutex
		conn      *sqlite3.Conn // the direct connection; nil once closed
		upsert    keyStmt
		update    keyStmt
		committed keyStmt
		fenced    keyStmt
		fence     leaseCheck // see CommitFenced
	}
}

var _ Store = (*SQLite)(nil)

// Open opens or creates the offset store at path, applying any pending
// schema migrations in one transaction. A nil opts means defaults.
func Open(path string, opts *Options) (*SQLite, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", ErrInvalid)
	}
	s := &SQLite{path: path, opts: o}
	name, poolName := path, path
	switch {
	case o.FS != nil:
		if name, s.fsVFS, err = newFSVFS(o.FS, path); err != nil {
			return nil, fmt.Errorf("offsets: open %s: %w", path, err)
		}
		poolName = name
	case !o.Shared:
		if name, s.wal, err = newWALVFS(path); err != nil {
			return nil, fmt.Errorf("offsets: open %s: %w", path, err)
		}
	}
	if o.Synchronous == SyncGroup {
		fsys := o.FS
		if fsys == nil {
			fsys = vfs.OS()
		}
		s.walSync = &walSyncer{open: openWAL(fsys, path)}
		s.group = newGroupSync(func() error {
			// A store whose file is gone would fsync a file no one reads.
			if err := s.checkFile(); err != nil {
				return err
			}
			return s.walSync.sync()
		})
	}
	c, err := sqlite3.Open(name)
	if err != nil {
		s.unregister()
		return nil, fmt.Errorf("offsets: open %s: %w", path, err)
	}
	if err := s.setup(c); err != nil {
		closeConn(c)
		s.unregister()
		if errors.Is(err, sqlite3.BUSY) {
			return nil, fmt.Errorf("%w: open %s: another process or connection holds it: %w", ErrLocked, path, err)
		}
		if errors.Is(err, ErrSchemaVersion) {
			return nil, err
		}
		return nil, fmt.Errorf("offsets: open %s: %w", path, err)
	}
	s.mu.conn = c
	s.shared.Store(o.Shared)
	// The pool opens no connection until used; its first connection
	// switches the direct one to shared locking (initConn).
	s.db, err = driver.Open(poolName, s.initConn)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("offsets: open %s: %w", path, err)
	}
	if o.FS == nil {
		s.watch()
	}
	return s, nil
}

// setup configures the direct connection, migrates, and prepares the
// statements of the hot paths.
func (s *SQLite) setup(c *sqlite3.Conn) error {
	if err := c.BusyTimeout(s.opts.BusyTimeout); err != nil {
		return err
	}
	// page_size before WAL: it only takes effect on an empty database.
	if err := c.Exec(fmt.Sprintf(`PRAGMA page_size=%d`, pageSize)); err != nil {
		return err
	}
	mode, err := pragma(c, `PRAGMA journal_mode=WAL`)
	if err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal", mode)
	}
	if err := c.Exec(`PRAGMA synchronous=` + s.opts.Synchronous.pragma()); err != nil {
		return err
	}
	if err := migrate(c, s.path, migrations); err != nil {
		return err
	}
	if err := fillCRCs(c); err != nil {
		return fmt.Errorf("checksum the committed offsets: %w", err)
	}
	if !s.opts.Shared {
		// Take the write lock now and keep it: a second owner fails at
		// Open, not at its first commit.
		if err := c.Exec(`PRAGMA locking_mode=EXCLUSIVE; BEGIN IMMEDIATE; COMMIT`); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		stmt *keyStmt
		sql  string
	}{
		{&s.mu.upsert, upsertSQL},
		{&s.mu.update, updateSQL},
		{&s.mu.committed, committedSQL},
		{&s.mu.fenced, fencedSQL},
	} {
		stmt, _, err := c.Prepare(p.sql)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		p.stmt.Stmt = stmt
	}
	return nil
}

func pragma(c *sqlite3.Conn, sql string) (string, error) {
	stmt, _, err := c.Prepare(sql)
	if err != nil {
		return "", err
	}
	defer stmt.Close()
	var v string
	if stmt.Step() {
		v = stmt.ColumnText(0)
	}
	return v, stmt.Err()
}

// initConn configures each connection of the DB pool. The first one
// switches the direct connection to normal locking, for good: exclusive
// locks would shut the pool out.
func (s *SQLite) initConn(c *sqlite3.Conn) error {
	// Once shared, never wait for s.mu here: its holder may be waiting
	// for a lock that this pool's caller holds.
	if !s.shared.Load() {
		if err := s.share(); err != nil {
			return err
		}
	}
	if err := c.BusyTimeout(s.opts.BusyTimeout); err != nil {
		return err
	}
	// The pool's transactions (CommitTx, an application's own) are not
	// the store's to group: in SyncGroup each is fsync'd at its commit.
	sync := s.opts.Synchronous
	if sync == SyncGroup {
		sync = SyncFull
	}
	return c.Exec(`PRAGMA synchronous=` + sync.String())
}

// share switches the direct connection to normal locking.
func (s *SQLite) share() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.conn == nil {
		return ErrClosed
	}
	if !s.shared.Load() {
		// Other connections may truncate the WAL from now on: no more
		// writing it through a mapping; and they may change leases.
		s.wal.share()
		s.mu.fence = leaseCheck{}
		// The locks go at the next access to the file, hence the read.
		err := s.mu.conn.Exec(`PRAGMA locking_mode=NORMAL; SELECT count(*) FROM sqlite_schema`)
		if err != nil {
			return fmt.Errorf("offsets: switch to shared locking: %w", err)
		}
		s.shared.Store(true)
	}
	return nil
}

// Close closes the direct connection and the DB pool, as sql.DB.Close
// does: a transaction in progress on DB may still finish. Later calls fail
// with ErrClosed; a second Close returns nil.
func (s *SQLite) Close() error {
	s.stopWatch() // before the lock: the watcher takes none, but fail may call out
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.conn == nil {
		return nil
	}
	var err error
	if st := s.txStmt.Load(); st != nil {
		err = st.Close()
	}
	if s.db != nil {
		err = errors.Join(err, s.db.Close())
	}
	err = errors.Join(err, closeConn(s.mu.conn))
	s.mu.conn = nil
	if s.walSync != nil {
		err = errors.Join(err, s.walSync.close())
	}
	s.unregister()
	if err != nil {
		return fmt.Errorf("offsets: close %s: %w", s.path, err)
	}
	return nil
}

// unregister drops the store's own VFS, if any.
func (s *SQLite) unregister() {
	s.wal.unregister()
	s.fsVFS.unregister()
}

// closeConn finalizes c's statements, which would keep it open, and
// closes it.
func closeConn(c *sqlite3.Conn) error {
	var errs []error
	for _, st := range slices.Collect(c.Stmts()) {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, c.Close())...)
}

// DB returns a database/sql handle on the same file, for an application's
// own tables and for CommitTx. Do not close it: Close does. Its first
// connection switches the store to shared locking (see the package doc).
func (s *SQLite) DB() *sql.DB { return s.db }

// Path returns the database file's path.
func (s *SQLite) Path() string { return s.path }

// do runs fn on the direct connection under the lock, interrupted if ctx
// is done.
func (s *SQLite) do(ctx context.Context, fn func(c *sqlite3.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p := s.lost.Load(); p != nil {
		return *p
	}
	s.mu.Lock()
	c := s.mu.conn
	if c == nil {
		s.mu.Unlock()
		return ErrClosed
	}
	var before int64
	if s.group != nil {
		before = c.TotalChanges()
	}
	c.SetInterrupt(ctx)
	err := fn(c)
	c.SetInterrupt(context.Background())
	var ticket uint64
	if err == nil && s.group != nil && c.TotalChanges() != before {
		ticket = s.group.ticket() // after the write, in the WAL's order
	}
	s.mu.Unlock()
	if err != nil && errors.Is(err, sqlite3.INTERRUPT) && ctx.Err() != nil {
		return ctx.Err()
	}
	if ticket != 0 {
		// Outside the lock: commits written meanwhile share the fsync.
		if err := s.group.wait(ticket); err != nil {
			s.fail(err)
			return err
		}
	}
	return err
}

// wrap adds "offsets: what: " to a driver or context error; errors of this
// package already say what happened and are returned as they are.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{ErrClosed, ErrInvalid, ErrNotFound, ErrFenced, ErrLeaseHeld, ErrUnavailable} {
		if errors.Is(err, e) {
			return err
		}
	}
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, sqlite3.BUSY) {
		return fmt.Errorf("offsets: %s: %w: %w", what, ErrLocked, err)
	}
	return fmt.Errorf("offsets: %s: %w", what, err)
}

// txLocked runs fn in a write transaction on c.
func txLocked(c *sqlite3.Conn, fn func() error) error {
	if err := c.Exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	err := fn()
	if err == nil {
		err = c.Exec(`COMMIT`)
	}
	if err != nil && !c.GetAutocommit() {
		// Roll back even if ctx is done.
		old := c.SetInterrupt(context.Background())
		c.Exec(`ROLLBACK`) // err is what the caller needs to know
		c.SetInterrupt(old)
	}
	return err
}

// keyStmt is a prepared statement whose ?1, ?2, ?3 are a Key. It binds
// the key's strings only when they change: each BindText copies into
// SQLite's memory, and a consumer commits the same key over and over
// (5-8% of a Commit). For the same reason it keeps the key's part of the
// entry checksum (keyCRC), and binds metadata (?5) and the time (?6)
// only when they change (hundreds of commits share a millisecond).
type keyStmt struct {
	*sqlite3.Stmt
	bound           bool
	consumer, topic string
	partition       int32
	keyCRC          uint32
	metaBound       bool
	metadata        string
	msBound         bool
	ms              int64
	crcBuf          [8]byte
}

func (st *keyStmt) bindKey(k Key) error {
	if !st.bound || k.Consumer != st.consumer || k.Topic != st.topic {
		st.bound = false
		if err := st.BindText(1, k.Consumer); err != nil {
			return err
		}
		if err := st.BindText(2, k.Topic); err != nil {
			return err
		}
		if err := st.BindInt64(3, int64(k.Partition)); err != nil {
			return err
		}
		st.bound, st.consumer, st.topic = true, k.Consumer, k.Topic
		st.partition, st.keyCRC = k.Partition, keyCRC(k)
	} else if k.Partition != st.partition {
		st.bound = false
		if err := st.BindInt64(3, int64(k.Partition)); err != nil {
			return err
		}
		st.bound, st.partition, st.keyCRC = true, k.Partition, keyCRC(k)
	}
	return nil
}

// bindUpsert binds the parameters of upsertSQL and fencedSQL; crcAt is
// the checksum's parameter (7 in upsertSQL, 9 in fencedSQL).
func (st *keyStmt) bindUpsert(k Key, offset int64, metadata string, nowMs int64, crcAt int) error {
	if err := st.bindKey(k); err != nil {
		return err
	}
	if err := st.BindInt64(4, offset); err != nil {
		return err
	}
	if !st.metaBound || metadata != st.metadata {
		st.metaBound = false
		if err := st.BindText(5, metadata); err != nil {
			return err
		}
		st.metaBound, st.metadata = true, metadata
	}
	if !st.msBound || nowMs != st.ms {
		st.msBound = false
		if err := st.BindInt64(6, nowMs); err != nil {
			return err
		}
		st.msBound, st.ms = true, nowMs
	}
	return st.BindInt64(crcAt, entryCRCFrom(st.keyCRC, offset, metadata, nowMs, &st.crcBuf))
}

// commitLocked stores one entry on c, with s.mu held: the UPDATE of the
// row a consumer has already committed to, else the UPSERT that inserts
// it. Either is one statement, atomic in autocommit mode.
func (s *SQLite) commitLocked(c *sqlite3.Conn, k Key, offset int64, metadata string, nowMs int64) error {
	if err := s.mu.update.bindUpsert(k, offset, metadata, nowMs, 7); err != nil {
		return err
	}
	if err := s.mu.update.Exec(); err != nil {
		return err
	}
	if c.Changes() > 0 {
		return nil
	}
	if err := s.mu.upsert.bindUpsert(k, offset, metadata, nowMs, 7); err != nil {
		return err
	}
	return s.mu.upsert.Exec()
}

// Committed returns k's committed offset, or an error matching ErrNotFound.
func (s *SQLite) Committed(ctx context.Context, k Key) (int64, error) {
	if err := k.validate(); err != nil {
		return 0, err
	}
	var offset int64
	found := false
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		st := &s.mu.committed
		defer st.Reset()
		if err := st.bindKey(k); err != nil {
			return err
		}
		if st.Step() {
			offset, found = st.ColumnInt64(0), true
			if err := checkCRC(k, offset, st.ColumnText(1), st.ColumnInt64(2), st.Stmt, 3); err != nil {
				return err
			}
		}
		return st.Err()
	})
	if err != nil {
		return 0, wrap(err, "committed %v", k)
	}
	if !found {
		return 0, fmt.Errorf("%w for %v", ErrNotFound, k)
	}
	return offset, nil
}

// Commit stores offset as k's committed offset: one autocommit UPSERT.
func (s *SQLite) Commit(ctx context.Context, k Key, offset int64) error {
	if err := validate(k, offset); err != nil {
		return err
	}
	now := s.opts.Now().UnixMilli()
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		return s.commitLocked(c, k, offset, "", now)
	})
	if err != nil { // boxing k for wrap would cost an allocation
		return wrap(err, "commit %v", k)
	}
	return nil
}

// CommitMany stores all offsets in one transaction.
func (s *SQLite) CommitMany(ctx context.Context, offsets map[Key]int64) error {
	entries := make([]Entry, 0, len(offsets))
	for k, off := range offsets {
		entries = append(entries, Entry{Key: k, Offset: off})
	}
	return s.CommitEntries(ctx, entries)
}

// CommitEntries stores entries, with their metadata, in one transaction.
func (s *SQLite) CommitEntries(ctx context.Context, entries []Entry) error {
	for _, e := range entries {
		if err := validate(e.Key, e.Offset); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return nil
	}
	now := s.opts.Now().UnixMilli()
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		if len(entries) == 1 {
			// One UPSERT is atomic in autocommit mode: BEGIN and COMMIT
			// would only cost two more statements (a Kafka consumer
			// committing after each record sends one entry at a time).
			e := entries[0]
			return s.commitLocked(c, e.Key, e.Offset, e.Metadata, now)
		}
		return txLocked(c, func() error {
			for _, e := range entries {
				if err := s.commitLocked(c, e.Key, e.Offset, e.Metadata, now); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return wrap(err, "commit %d offsets", len(entries))
}

// CommitTx commits k's offset inside the caller's transaction, which must
// come from DB: the caller's writes and the offset commit take effect
// together or not at all.
func (s *SQLite) CommitTx(ctx context.Context, tx *sql.Tx, k Key, offset int64) error {
	if err := validate(k, offset); err != nil {
		return err
	}
	st, err := s.txUpsert()
	if err == nil {
		// A statement prepared once runs ~1.4x faster than tx.ExecContext,
		// and Tx.StmtContext refuses a tx of another *sql.DB.
		now := s.opts.Now().UnixMilli()
		_, err = tx.StmtContext(ctx, st).ExecContext(ctx,
			k.Consumer, k.Topic, int64(k.Partition), offset, "", now, entryCRC(k, offset, "", now))
	}
	return wrap(err, "commit %v in transaction", k)
}

// txUpsert returns the UPSERT prepared on the DB pool, preparing it on
// first use.
func (s *SQLite) txUpsert() (*sql.Stmt, error) {
	if st := s.txStmt.Load(); st != nil {
		return st, nil
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if st := s.txStmt.Load(); st != nil {
		return st, nil
	}
	st, err := s.db.Prepare(upsertSQL)
	if err != nil {
		return nil, err
	}
	s.txStmt.Store(st)
	return st, nil
}

// where returns the WHERE clause selecting f, binding ?1 and ?2.
func (f Filter) where() string {
	var conds []string
	if f.Consumer != "" {
		conds = append(conds, "consumer = ?1")
	}
	if f.Topic != "" {
		conds = append(conds, "topic = ?2")
	}
	if len(f.Partitions) > 0 {
		ps := make([]string, len(f.Partitions))
		for i, p := range f.Partitions {
			ps[i] = strconv.FormatInt(int64(p), 10) // integers: nothing to quote
		}
		conds = append(conds, "partition IN ("+strings.Join(ps, ", ")+")")
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

func (f Filter) bind(st *sqlite3.Stmt) error {
	if f.Consumer != "" {
		if err := st.BindText(1, f.Consumer); err != nil {
			return err
		}
	}
	if f.Topic != "" {
		return st.BindText(2, f.Topic)
	}
	return nil
}

// List returns the entries matching f, sorted by consumer, topic and
// partition.
func (s *SQLite) List(ctx context.Context, f Filter) ([]Entry, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	var list []Entry
	err := s.do(ctx, func(c *sqlite3.Conn) (err error) {
		list, err = listLocked(c, f, true)
		return err
	})
	if err != nil {
		return nil, wrap(err, "list %+v", f)
	}
	return list, nil
}

// listLocked lists the entries matching f on c; with check, an entry
// failing its checksum is an error (ErrCorrupt), else it is listed as read.
func listLocked(c *sqlite3.Conn, f Filter, check bool) ([]Entry, error) {
	var list []Entry
	st, _, err := c.Prepare(`SELECT consumer, topic, partition, next_offset, metadata, updated_ms, crc
		FROM passbook_offsets` + f.where() + ` ORDER BY consumer, topic, partition`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := f.bind(st); err != nil {
		return nil, err
	}
	for st.Step() {
		e := Entry{
			Key:      Key{Consumer: st.ColumnText(0), Topic: st.ColumnText(1), Partition: int32(st.ColumnInt64(2))},
			Offset:   st.ColumnInt64(3),
			Metadata: st.ColumnText(4),
		}
		ms := st.ColumnInt64(5)
		if check {
			if err := checkCRC(e.Key, e.Offset, e.Metadata, ms, st, 6); err != nil {
				return nil, err
			}
		}
		e.UpdatedAt = timeMs(ms)
		list = append(list, e)
	}
	return list, st.Err()
}

// Delete removes the entries matching f, which must name a consumer or a
// topic, and returns how many it removed.
func (s *SQLite) Delete(ctx context.Context, f Filter) (int, error) {
	if err := f.validateDelete(); err != nil {
		return 0, err
	}
	var n int64
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		st, _, err := c.Prepare(`DELETE FROM passbook_offsets` + f.where())
		if err != nil {
			return err
		}
		defer st.Close()
		if err := f.bind(st); err != nil {
			return err
		}
		if err := st.Exec(); err != nil {
			return err
		}
		n = c.Changes()
		return nil
	})
	if err != nil {
		return 0, wrap(err, "delete %+v", f)
	}
	return int(n), nil
}
