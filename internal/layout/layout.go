// Package layout names the files of a passbook data directory, once:
//
//	DIR/
//	  LOCK             the data directory's lock: one process at a time
//	                   (it records the holder's pid)
//	  offsets.db       the offset store (offsets.Open), with its -wal and -shm
//	  security/        users, ACLs and tokens (auth, acl)
//	  transactions.log the Kafka transaction coordinator's state (kafka's
//	                   txnstore.go draws its layout)
//	  topic-defaults.json  the topic defaults set while running (Kafka's
//	                   dynamic broker configs), if any
//	  topics/
//	    NAME/
//	      topic.json   the topic's configuration and ID
//	      0/ 1/ …      one directory per partition (storage.Open, whose
//	                   package doc draws what is inside)
//
// The names are frozen: they are on disk. It is a package of its own, with
// no imports of passbook's, so that everything that finds its way around a
// data directory — the root package, the CLI's forensics, cmd/torture,
// auth and acl — can name the same files without importing the engine.
package layout

import (
	"path/filepath"
	"strconv"
)

// Frozen names; see the package doc.
const (
	Lock      = "LOCK"
	Offsets   = "offsets.db"
	Security  = "security"
	Topics    = "topics"
	TopicFile = "topic.json"
	// TopicDefaults holds the topic defaults set while running.
	TopicDefaults = "topic-defaults.json"
	// Transactions is the Kafka transaction coordinator's log.
	Transactions = "transactions.log"
)

// LockFile is the data directory dir's lock file.
func LockFile(dir string) string { return filepath.Join(dir, Lock) }

// OffsetsFile is dir's offset store.
func OffsetsFile(dir string) string { return filepath.Join(dir, Offsets) }

// SecurityDir holds dir's users, ACLs and tokens.
func SecurityDir(dir string) string { return filepath.Join(dir, Security) }

// TopicsDir holds dir's topics, one directory each.
func TopicsDir(dir string) string { return filepath.Join(dir, Topics) }

// TopicDir is the directory of the topic named topic.
func TopicDir(dir, topic string) string { return filepath.Join(dir, Topics, topic) }

// TopicConfig is the topic's topic.json.
func TopicConfig(dir, topic string) string { return filepath.Join(dir, Topics, topic, TopicFile) }

// PartitionDir is the directory of partition p of the topic.
func PartitionDir(dir, topic string, p int) string {
	return filepath.Join(dir, Topics, topic, strconv.Itoa(p))
}
