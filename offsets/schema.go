package offsets

import (
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// migrations are applied in order on Open; migration i brings the schema
// to version i+1. They are frozen once released: change the schema only by
// appending. All tables are prefixed passbook_ because applications share
// the file (see SQLite.DB); PRAGMA user_version is left to them.
var migrations = []string{
	// 1: offsets and leases.
	`CREATE TABLE passbook_offsets (
		consumer    TEXT    NOT NULL,
		topic       TEXT    NOT NULL,
		partition   INTEGER NOT NULL CHECK (partition >= 0),
		next_offset INTEGER NOT NULL CHECK (next_offset >= 0),
		metadata    TEXT    NOT NULL DEFAULT '',
		updated_ms  INTEGER NOT NULL,
		PRIMARY KEY (consumer, topic, partition)
	) WITHOUT ROWID;
	CREATE TABLE passbook_leases (
		consumer   TEXT    NOT NULL,
		topic      TEXT    NOT NULL,
		holder     TEXT    NOT NULL,
		generation INTEGER NOT NULL,
		expires_ms INTEGER NOT NULL,
		PRIMARY KEY (consumer, topic)
	) WITHOUT ROWID;`,
	// 2: sequences (Kafka producer ids).
	`CREATE TABLE passbook_sequences (
		name TEXT    NOT NULL PRIMARY KEY,
		next INTEGER NOT NULL CHECK (next >= 0)
	) WITHOUT ROWID;`,
	// 3: a checksum of each committed offset's row (entryCRC); rows from
	// before it are filled in by Open (fillCRCs).
	`ALTER TABLE passbook_offsets ADD COLUMN crc INTEGER;`,
	// 4: the topic ID each topic name's committed offsets belong to
	// (topics.go); offsets from before it belong to the topic of their
	// name.
	`CREATE TABLE passbook_topics (
		topic    TEXT NOT NULL PRIMARY KEY,
		topic_id BLOB NOT NULL CHECK (length(topic_id) = 16)
	) WITHOUT ROWID;`,
}

// SchemaVersion is the schema version this build writes: len(migrations).
const SchemaVersion = 4

// migrate brings the database named name to len(list) in one
// transaction, or refuses one from a newer version with ErrSchemaVersion.
func migrate(c *sqlite3.Conn, name string, list []string) (err error) {
	if err := c.Exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.Exec(`ROLLBACK`) // the error that matters is err
		}
	}()
	err = c.Exec(`CREATE TABLE IF NOT EXISTS passbook_schema (
		version INTEGER NOT NULL
	)`)
	if err != nil {
		return err
	}
	version, found, err := schemaVersion(c)
	if err != nil {
		return err
	}
	if version > int64(len(list)) {
		return fmt.Errorf("%w: %s has schema version %d; this build knows versions up to %d: open it with a newer passbook",
			ErrSchemaVersion, name, version, len(list))
	}
	for v := version; v < int64(len(list)); v++ {
		if err := c.Exec(list[v]); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
		}
	}
	set := `UPDATE passbook_schema SET version = ?`
	if !found {
		set = `INSERT INTO passbook_schema (version) VALUES (?)`
	}
	stmt, _, err := c.Prepare(set)
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.BindInt64(1, int64(len(list))); err != nil {
		return err
	}
	if err := stmt.Exec(); err != nil {
		return err
	}
	return c.Exec(`COMMIT`)
}

func schemaVersion(c *sqlite3.Conn) (version int64, found bool, err error) {
	stmt, _, err := c.Prepare(`SELECT version FROM passbook_schema`)
	if err != nil {
		return 0, false, err
	}
	defer stmt.Close()
	if stmt.Step() {
		version, found = stmt.ColumnInt64(0), true
	}
	return version, found, stmt.Err()
}
