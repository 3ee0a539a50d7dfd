package offsets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// TopicID is a topic's identity, Kafka's topic ID: 16 random bytes given
// to a topic when it is created and never to another. A topic deleted and
// created again under the same name has a new ID.
type TopicID [16]byte

// NewTopicID returns a random topic ID as Kafka's Uuid.randomUuid makes
// one: a version 4 UUID that is neither of Kafka's reserved IDs (zero and
// 1, the metadata topic's) and whose string does not start with '-'.
func NewTopicID() TopicID {
	for {
		var id TopicID
		rand.Read(id[:]) // never fails (crypto/rand)
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if s := id.String(); s[0] != '-' {
			return id
		}
	}
}

// IsZero reports whether id is the zero ID: no ID.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// String is id as Kafka writes a Uuid: URL-safe base64 without padding
// (22 characters).
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID reads what String writes.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: topic id %q is not 16 bytes of URL-safe base64", ErrInvalid, s)
	}
	copy(id[:], b)
	return id, nil
}

// The store keeps, in passbook_topics, the ID of the topic that each
// topic name's committed offsets belong to. A topic name's offsets are
// valid only while that ID is the topic's: BindTopic (at creation) and
// BindTopics (when the data directory is opened) purge those of an older
// topic of the same name, and of topics that no longer exist. One table
// per topic rather than a column per committed offset keeps the topic out
// of the commit's hot path, and is as safe: SQLite's WAL is replayed as a
// prefix after a crash, so a commit that survives has the binding of the
// topic it was made on before it.

// BindTopic makes id the identity of topic name's committed offsets,
// deleting (and returning) any of another topic of that name: call it
// when the topic is created, before its first commit.
func (s *SQLite) BindTopic(ctx context.Context, name string, id TopicID) ([]Entry, error) {
	return s.BindTopics(ctx, map[string]TopicID{name: id}, false)
}

// BindTopics binds each topic of ids as BindTopic does and returns the
// committed offsets it deleted, sorted. With all set, ids is every topic
// there is: offsets of any other topic are deleted too (a topic deleted
// by a process that crashed, or lost power, before its offsets were).
// Offsets stored before the store knew topic IDs (schema version 4)
// belong to the topic of their name, if it exists.
func (s *SQLite) BindTopics(ctx context.Context, ids map[string]TopicID, all bool) ([]Entry, error) {
	var purged []Entry
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		purged = purged[:0]
		return txLocked(c, func() error {
			bound, err := boundTopics(c)
			if err != nil {
				return err
			}
			var stale []string
			for name, id := range ids {
				if old, ok := bound[name]; ok && old == id {
					continue
				} else if ok {
					stale = append(stale, name)
				}
				if err := execArgs(c, `INSERT INTO passbook_topics (topic, topic_id) VALUES (?1, ?2)
					ON CONFLICT (topic) DO UPDATE SET topic_id = excluded.topic_id`, name, id[:]); err != nil {
					return err
				}
			}
			if all {
				names, err := committedTopics(c)
				if err != nil {
					return err
				}
				for _, name := range names {
					if _, ok := ids[name]; !ok {
						stale = append(stale, name)
					}
				}
				for name := range bound {
					if _, ok := ids[name]; !ok {
						if err := execArgs(c, `DELETE FROM passbook_topics WHERE topic = ?1`, name); err != nil {
							return err
						}
					}
				}
			}
			for _, name := range stale {
				es, err := listLocked(c, Filter{Topic: name}, false)
				if err != nil {
					return err
				}
				purged = append(purged, es...)
				if err := execArgs(c, `DELETE FROM passbook_offsets WHERE topic = ?1`, name); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrap(err, "bind topic ids")
	}
	sortEntries(purged)
	return purged, nil
}

// UnbindTopic deletes topic name's committed offsets and its binding, in
// one transaction, and returns how many offsets it deleted: a topic's
// deletion.
func (s *SQLite) UnbindTopic(ctx context.Context, name string) (int, error) {
	if name == "" {
		return 0, fmt.Errorf("%w: empty topic name", ErrInvalid)
	}
	var n int64
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		return txLocked(c, func() error {
			if err := execArgs(c, `DELETE FROM passbook_offsets WHERE topic = ?1`, name); err != nil {
				return err
			}
			n = c.Changes()
			return execArgs(c, `DELETE FROM passbook_topics WHERE topic = ?1`, name)
		})
	})
	if err != nil {
		return 0, wrap(err, "delete topic %q", name)
	}
	return int(n), nil
}

// TopicIDs returns the topic IDs the store's committed offsets are bound
// to, by topic name.
func (s *SQLite) TopicIDs(ctx context.Context) (map[string]TopicID, error) {
	var m map[string]TopicID
	err := s.do(ctx, func(c *sqlite3.Conn) (err error) {
		m, err = boundTopics(c)
		return err
	})
	return m, wrap(err, "list topic ids")
}

func boundTopics(c *sqlite3.Conn) (map[string]TopicID, error) {
	st, _, err := c.Prepare(`SELECT topic, topic_id FROM passbook_topics`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	m := map[string]TopicID{}
	for st.Step() {
		var id TopicID
		copy(id[:], st.ColumnRawBlob(1))
		m[st.ColumnText(0)] = id
	}
	return m, st.Err()
}

func committedTopics(c *sqlite3.Conn) ([]string, error) {
	st, _, err := c.Prepare(`SELECT DISTINCT topic FROM passbook_offsets`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var names []string
	for st.Step() {
		names = append(names, st.ColumnText(0))
	}
	return names, st.Err()
}

// execArgs runs one statement with text and blob arguments.
func execArgs(c *sqlite3.Conn, sql string, args ...any) error {
	st, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, a := range args {
		switch v := a.(type) {
		case string:
			err = st.BindText(i+1, v)
		case []byte:
			err = st.BindBlob(i+1, v)
		default:
			err = fmt.Errorf("execArgs: unsupported %T", a)
		}
		if err != nil {
			return err
		}
	}
	return st.Exec()
}
