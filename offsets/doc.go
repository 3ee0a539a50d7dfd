// Package offsets is the committed-offset store: where each consumer keeps
// its place in each partition.
//
// The log hands out offsets and never tracks who has read what; a reader
// owns its bookmark and keeps it here. A consumer's committed offset is the
// next offset it will read (the last processed offset + 1), so a consumer
// that restarts resumes at Committed, and a new one (ErrNotFound) starts
// where its reset policy says. Kafka consumer groups keep their offsets in
// the same table: a group id is a consumer name, and CommitEntries carries
// OffsetCommit's metadata.
//
// # Basics
//
// Store is what consumers need. SQLite, from Open, is the default
// implementation; NewMemory is one for tests; package offsetstest holds
// the conformance suite every implementation passes. SQLite adds:
//
//   - DB, a database/sql handle on the same file, for an application's own
//     tables, and CommitTx, which commits an offset inside the
//     application's transaction: its output and its bookmark are written
//     together or not at all, an exactly-once effect with no extra
//     machinery;
//   - leases (Acquire, Renew, Release) that make one holder the only
//     writer of a consumer name on a topic, and CommitFenced, which refuses
//     a commit from a holder whose lease was taken over (ErrFenced);
//   - NextID, numbers never handed out twice, even across a power loss
//     (the Kafka server's producer ids).
//
// Every method is safe for concurrent use.
//
// # Schema
//
// One SQLite file in WAL mode. Table and column names are on disk and
// frozen; the schema changes only by appending to the migrations in
// schema.go, applied in one transaction by Open. A file written by a newer
// version is refused with ErrSchemaVersion. Tables are prefixed passbook_
// because applications share the file, and PRAGMA user_version is left to
// them.
//
//	passbook_schema  (version)                       one row: SchemaVersion
//	passbook_offsets (consumer, topic, partition,    primary key, WITHOUT ROWID
//	                  next_offset, metadata,         the committed offset; "" if none
//	                  updated_ms,                    Unix milliseconds of the commit
//	                  crc)                           CRC-32C of the row's other columns (v3)
//	passbook_leases  (consumer, topic,               primary key, WITHOUT ROWID
//	                  holder, generation,            generation: +1 per Acquire, never reused
//	                  expires_ms)                    0 once released
//	passbook_sequences (name, next)                  primary key name, WITHOUT ROWID;
//	                                                 next: what NextID returns next
//
// SQLite checks its pages' structure (PRAGMA integrity_check) but not what
// a row holds, so a damaged byte inside a committed offset would read as
// another offset. Each row carries its own checksum, computed in Go on
// every write and checked on every read: a damaged entry fails with
// ErrCorrupt (passbook verify reports it, repair deletes it) and is
// never returned as an offset. Leases and sequences carry none: a damaged
// lease can fence its consumer, a damaged sequence can hand out a producer
// id again.
//
// The schema has this one owner: Verify and Repair (check.go) check a
// store on disk — SQLite's integrity check, every row's checksum, every
// committed offset against its partition's head — and return typed
// findings (Finding, FindingKind); Rebuild (rebuild.go) replaces a store
// SQLite cannot read whole with what reads back, from the table or, past
// a damaged page, from the file's pages directly (pages.go).
//
// A new file gets 1 KiB pages: every commit appends one page to the WAL,
// and small pages commit about 1.5 times faster than the 4 KiB default.
//
// # Durability
//
// Options.Synchronous says what a returned commit means:
//
//   - SyncNormal (the default): the commit is in the WAL in the OS; it
//     survives a crash of the process, and a power loss may roll back the
//     last commits (the file stays consistent; the WAL is fsync'd at each
//     checkpoint), and the consumer re-reads those records: at least once.
//
//   - SyncFull: the WAL is fsync'd before Commit returns; the commit
//     survives a power loss, at an fsync per commit.
//
//   - SyncGroup: as durable as SyncFull, but concurrent commits share
//     the fsync (group commit): each is written as in SyncNormal, then
//     waits for an fsync of the WAL begun after its write. passbook serve
//     uses it, so an acknowledged Kafka OffsetCommit survives a power
//     loss. A failed fsync makes the store refuse every later write
//     (ErrUnavailable) until it is reopened.
//
// Options.FS runs the store on a vfs.FS instead of the OS, through a
// SQLite VFS of this package: on a vfs.MemFS, MemFS.Crash cuts the power
// under it (TestSQLite_PowerLoss).
//
// # Locking and speed
//
// Commit is one prepared UPSERT in autocommit mode on a direct connection
// (the driver's own API, not database/sql), guarded by a mutex; every
// method of the Store runs on it. By default that connection holds the
// file in SQLite's exclusive locking mode, which spares the file locks and
// shared-memory bookkeeping of every transaction (the data directory has
// one owning process anyway): about twice the commit rate of normal
// locking, and over 4x database/sql's BEGIN/UPSERT/COMMIT. A second
// process opening the file gets ErrLocked.
//
// Exclusive locks would shut the DB pool out, so when the pool opens its
// first connection (DB itself costs nothing until used), the direct
// connection switches to normal locking for the rest of the store's life,
// and the two share the file through SQLite's WAL locks, waiting up to
// Options.BusyTimeout for each other. Options.Shared starts in normal
// locking, so that other processes may open the file too.
//
// Measured on 2 cores (go test -bench . ./offsets/), commits per second:
//
//	Commit, exclusive (the default)          ~185,000
//	CommitFenced                             ~170,000
//	Commit, shared (once DB is used)          ~95,000
//	CommitTx, one transaction each            ~73,000
//	database/sql BEGIN/UPSERT/COMMIT          ~43,000 (4 KiB pages, not prepared)
//	Commit, SyncFull                          ~10,000 (fsync-bound)
package offsets
