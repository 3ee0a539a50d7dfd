package offsets

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/ncruces/go-sqlite3"
	"github.com/passbook-log/passbook/vfs"
)

// Verify and Repair check a store on disk that no SQLite is using, for
// passbook verify and repair: SQLite's integrity check, every committed
// offset's checksum, and every committed offset against its partition's
// head. They read the tables directly (not through Open, which would
// migrate the schema and fill in checksums), so that what they report is
// the file as it is.

// FindingKind says what Verify found.
type FindingKind int

// The kinds of finding. The first seven are problems; the last three are
// notes (see FindingKind.Problem).
const (
	// FindingOpen: the file does not open as a database (Err).
	FindingOpen FindingKind = iota + 1
	// FindingUnreadable: SQLite's integrity check could not run (Err);
	// Pos is 0.
	FindingUnreadable
	// FindingIntegrity: SQLite's integrity check failed (Detail, its
	// message); Pos is the byte position of the page it names, or −1.
	FindingIntegrity
	// FindingRowsUnreadable: reading the committed offsets stopped (Err).
	FindingRowsUnreadable
	// FindingChecksum: a committed offset's row fails its checksum (Key,
	// and Offset as stored): the file was damaged. Repair deletes it.
	FindingChecksum
	// FindingNegative: a committed offset is negative (Key, Offset).
	FindingNegative
	// FindingPastHead: a committed offset is past its partition's head
	// (Key, Offset, Head): records were taken out of the log after they
	// were processed. Repair sets it to the head.
	FindingPastHead
	// FindingNoTopic: a committed offset of a topic that does not exist
	// (Key, Offset). A note.
	FindingNoTopic
	// FindingNoPartition: a committed offset of a partition its topic
	// does not have (Key, Offset). A note.
	FindingNoPartition
	// FindingNoChecksums: the rows carry no checksums yet (the schema is
	// older than version 3; Open adds them). A note.
	FindingNoChecksums
)

// Problem reports whether findings of kind k are something wrong rather
// than a note.
func (k FindingKind) Problem() bool { return k >= FindingOpen && k <= FindingPastHead }

// Damaged reports whether findings of kind k are about the file rather
// than one row: Repair rebuilds such a store (see Repair).
func (k FindingKind) Damaged() bool { return k >= FindingOpen && k <= FindingRowsUnreadable }

// Finding is one thing Verify found.
type Finding struct {
	Kind   FindingKind
	Key    Key    // the committed offset's key, for a finding about one
	Offset int64  // the committed offset as stored
	Head   int64  // FindingPastHead: the partition's head
	Pos    int64  // byte position in the file; −1 when not about a place
	Detail string // FindingIntegrity: SQLite's message
	Err    error  // FindingOpen, FindingUnreadable, FindingRowsUnreadable
}

func (f Finding) String() string {
	switch f.Kind {
	case FindingOpen, FindingUnreadable:
		return f.Err.Error()
	case FindingIntegrity:
		return "integrity check: " + f.Detail
	case FindingRowsUnreadable:
		return "read committed offsets: " + f.Err.Error()
	case FindingChecksum:
		return fmt.Sprintf("committed offset of %s fails its checksum (stored: %d): the file was damaged", f.Key, f.Offset)
	case FindingNegative:
		return fmt.Sprintf("committed offset %d of %s is negative", f.Offset, f.Key)
	case FindingPastHead:
		return fmt.Sprintf("committed offset %d of %s is past the head %d: records were taken out of the log after they were processed", f.Offset, f.Key, f.Head)
	case FindingNoTopic:
		return fmt.Sprintf("committed offset %d of %s for a topic that does not exist", f.Offset, f.Key)
	case FindingNoPartition:
		return fmt.Sprintf("committed offset %d of %s for a partition the topic does not have", f.Offset, f.Key)
	case FindingNoChecksums:
		return "the committed offsets carry no checksums yet (schema older than version 3; opening the data directory adds them)"
	}
	return fmt.Sprintf("finding %d", int(f.Kind))
}

// CheckOptions configure Verify and Repair. FS nil means the OS.
type CheckOptions struct {
	// FS holds the store.
	FS vfs.FS
	// Heads are the heads of each topic's partitions, −1 where one is not
	// known; a topic not in it does not exist.
	Heads map[string][]int64
	// DryRun makes Repair report what it would do, and do nothing.
	DryRun bool
	// TopicIDs are bound in a store Repair rebuilds: the topics' own, from
	// their topic.json.
	TopicIDs map[string]TopicID
}

// CheckReport is what Verify or Repair found, and what Repair did.
type CheckReport struct {
	// Entries is the number of committed offsets read.
	Entries int
	// Findings are what was found, in the order found. Repair stops
	// reading at the first finding about the file (FindingKind.Damaged).
	Findings []Finding
	// Fixed are the findings Repair fixed (with DryRun: would fix): each
	// FindingChecksum deleted, then each FindingPastHead set to its head.
	Fixed []Finding
	// Rebuilt is set when Repair rebuilt the store (with DryRun: would
	// rebuild it), with what it salvaged.
	Rebuilt *Salvage
	// Errors are what Repair failed to do.
	Errors []error
}

// Verify checks the store at path, read-write but changing nothing (SQLite
// may roll back a hot journal). It returns what it found; the file must
// exist.
func Verify(path string, opts *CheckOptions) *CheckReport {
	return check(path, opts, false)
}

// Repair checks the store at path as Verify does and fixes what it can:
// a committed offset that fails its checksum is deleted (the consumer
// starts where its reset policy says), one past its partition's head is
// set to the head. A store that does not open, cannot be read whole or
// fails SQLite's integrity check is rebuilt: see Salvage and Rebuild.
func Repair(path string, opts *CheckOptions) *CheckReport {
	return check(path, opts, true)
}

var pageRE = regexp.MustCompile(`[Pp]age (\d+)`)

func check(path string, opts *CheckOptions, repair bool) *CheckReport {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	r := &CheckReport{}
	find := func(f Finding) { r.Findings = append(r.Findings, f) }
	rebuild := func() {
		s, err := Rebuild(path, &RebuildOptions{FS: o.FS, DryRun: o.DryRun, TopicIDs: o.TopicIDs})
		r.Rebuilt = s
		if err != nil {
			r.Errors = append(r.Errors, fmt.Errorf("rebuild: %w", err))
		}
	}
	uri, release, err := openURI(o.FS, path)
	if err != nil {
		find(Finding{Kind: FindingOpen, Pos: -1, Err: err})
		return r
	}
	defer release()
	c, err := sqlite3.OpenFlags(uri, sqlite3.OPEN_READWRITE)
	if err != nil {
		find(Finding{Kind: FindingOpen, Pos: -1, Err: err})
		if repair {
			rebuild()
		}
		return r
	}
	defer c.Close()
	pageSize := int64(4096)
	var bad bool
	err = query(c, `PRAGMA page_size`, func(st *sqlite3.Stmt) { pageSize = st.ColumnInt64(0) })
	if err == nil {
		err = query(c, `PRAGMA integrity_check`, func(st *sqlite3.Stmt) {
			msg := st.ColumnText(0)
			if msg == "ok" {
				return
			}
			bad = true
			pos := int64(-1)
			if m := pageRE.FindStringSubmatch(msg); m != nil {
				if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
					pos = (n - 1) * pageSize
				}
			}
			find(Finding{Kind: FindingIntegrity, Pos: pos, Detail: msg})
		})
	}
	if err != nil {
		find(Finding{Kind: FindingUnreadable, Pos: 0, Err: err})
		if repair {
			c.Close()
			rebuild()
		}
		return r
	}
	if bad && repair {
		c.Close()
		rebuild()
		return r
	}
	var fixes []Finding
	sel := `SELECT consumer, topic, partition, next_offset, metadata, updated_ms, crc FROM passbook_offsets ORDER BY topic, partition, consumer`
	checked := true
	if err := query(c, `SELECT crc FROM passbook_offsets LIMIT 0`, func(*sqlite3.Stmt) {}); err != nil {
		// Written by a passbook from before schema version 3; Open adds
		// the checksums.
		checked = false
		sel = `SELECT consumer, topic, partition, next_offset FROM passbook_offsets ORDER BY topic, partition, consumer`
		find(Finding{Kind: FindingNoChecksums, Pos: -1})
	}
	err = query(c, sel, func(st *sqlite3.Stmt) {
		r.Entries++
		k := Key{Consumer: st.ColumnText(0), Topic: st.ColumnText(1), Partition: int32(st.ColumnInt64(2))}
		next := st.ColumnInt64(3)
		if checked && checkCRC(k, next, st.ColumnText(4), st.ColumnInt64(5), st, 6) != nil {
			f := Finding{Kind: FindingChecksum, Key: k, Offset: next, Pos: -1}
			find(f)
			fixes = append(fixes, f)
			return
		}
		hs, ok := o.Heads[k.Topic]
		switch {
		case !ok:
			find(Finding{Kind: FindingNoTopic, Key: k, Offset: next, Pos: -1})
		case k.Partition < 0 || int(k.Partition) >= len(hs):
			find(Finding{Kind: FindingNoPartition, Key: k, Offset: next, Pos: -1})
		case next < 0:
			find(Finding{Kind: FindingNegative, Key: k, Offset: next, Pos: -1})
		case hs[k.Partition] >= 0 && next > hs[k.Partition]:
			f := Finding{Kind: FindingPastHead, Key: k, Offset: next, Head: hs[k.Partition], Pos: -1}
			find(f)
			fixes = append(fixes, f)
		}
	})
	if err != nil {
		find(Finding{Kind: FindingRowsUnreadable, Pos: -1, Err: err})
		if repair {
			c.Close()
			rebuild()
		}
		return r
	}
	if !repair || len(fixes) == 0 {
		return r
	}
	var sets []Finding
	for _, f := range fixes {
		if f.Kind != FindingChecksum {
			sets = append(sets, f)
			continue
		}
		if !o.DryRun {
			if err := deleteEntry(c, f.Key); err != nil {
				r.Errors = append(r.Errors, fmt.Errorf("delete offset of %s: %w", f.Key, err))
				continue
			}
		}
		r.Fixed = append(r.Fixed, f)
	}
	c.Close()
	if len(sets) == 0 {
		return r
	}
	var store *SQLite
	if !o.DryRun {
		if store, err = Open(path, &Options{FS: storeFS(o.FS)}); err != nil {
			r.Errors = append(r.Errors, fmt.Errorf("open to repair: %w", err))
			return r
		}
		defer store.Close()
	}
	for _, f := range sets {
		if !o.DryRun {
			if err := store.Commit(context.Background(), f.Key, f.Head); err != nil {
				r.Errors = append(r.Errors, fmt.Errorf("set offset of %s: %w", f.Key, err))
				continue
			}
		}
		r.Fixed = append(r.Fixed, f)
	}
	return r
}

// storeFS is the Options.FS for a store on fsys: nil on the OS (the
// store's own fast path).
func storeFS(fsys vfs.FS) vfs.FS {
	if fsys == vfs.OS() {
		return nil
	}
	return fsys
}

// BoundTopics returns how many topics the store at path has bound (see
// BindTopics), reading it read-only. known is false when that cannot be
// told: the file does not read as a database, or it is from before topic
// IDs (schema version below 4), whose Open binds them.
func BoundTopics(fsys vfs.FS, path string) (n int64, known bool) {
	uri, release, err := openURI(fsys, path)
	if err != nil {
		return 0, false
	}
	defer release()
	c, err := sqlite3.OpenFlags(uri, sqlite3.OPEN_READONLY)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	if err := query(c, `SELECT count(*) FROM sqlite_schema`, func(*sqlite3.Stmt) {}); err != nil {
		return 0, false // not readable as a database
	}
	if err := query(c, `SELECT count(*) FROM passbook_topics`, func(st *sqlite3.Stmt) { n = st.ColumnInt64(0) }); err != nil {
		if v, found, err := schemaVersion(c); err == nil && found && v > 0 && v < 4 {
			return 0, false
		}
		return 0, true
	}
	return n, true
}

// deleteEntry removes one committed offset (the store's API deletes by
// consumer or topic, not one partition's entry).
func deleteEntry(c *sqlite3.Conn, k Key) error {
	st, _, err := c.Prepare(`DELETE FROM passbook_offsets WHERE consumer = ?1 AND topic = ?2 AND partition = ?3`)
	if err != nil {
		return err
	}
	err = errors.Join(st.BindText(1, k.Consumer), st.BindText(2, k.Topic), st.BindInt64(3, int64(k.Partition)))
	if err == nil {
		err = st.Exec()
	}
	return errors.Join(err, st.Close())
}

// query runs a statement and calls row for each row.
func query(c *sqlite3.Conn, sql string, row func(*sqlite3.Stmt)) error {
	st, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer st.Close()
	for st.Step() {
		row(st)
	}
	return st.Err()
}
