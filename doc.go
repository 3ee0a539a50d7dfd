// Package passbook is a durable append-only log you link into your
// program, the way SQLite is a database you link in.
//
// A DB is a data directory holding topics. A topic is a named log split
// into partitions; each partition hands out offsets 0, 1, 2, … that never
// change. The log never tracks who read what: each consumer keeps its own
// committed offset — the next offset to read — in the offset store (SQLite,
// in the same directory). So a crashed consumer resumes where its bookmark
// says, losing nothing, and a new consumer can replay all of history while
// the others stay where they are. See package consumer for reading with
// committed offsets, and package storage for the engine underneath.
//
// Layout of a data directory:
//
//	LOCK                       held by the one process that owns the directory
//	offsets.db                 committed offsets (SQLite, WAL mode)
//	topics/NAME/topic.json     the topic's configuration
//	topics/NAME/P/             partition P: a storage.Log directory
package passbook
