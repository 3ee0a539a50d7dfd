package offsets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/passbook-log/passbook/vfs"
)

// Salvage is what Rebuild read back of a damaged store.
type Salvage struct {
	// Entries are the committed offsets that read back with a valid
	// checksum: the new store holds them.
	Entries []Entry
	// Bad are read, but fail their checksum: lost.
	Bad []Key
	// FromPages are the Entries read from the file's pages directly,
	// where SQL could not reach them (ReadErr).
	FromPages []Key
	// Sequences are the sequences read back, kept in the new store.
	Sequences map[string]int64
	// ReadErr is where SQL stopped reading the table, if it did.
	ReadErr error
	// SeqErr says why the sequences could not be read, if they could
	// not; the Kafka producer id sequence then starts again past the
	// current time in microseconds.
	SeqErr error
	// Aside is where the damaged file goes (with its -wal and -shm).
	Aside string
}

// salvage reads every committed offset of the store at path that reads
// back with a valid checksum: the table forwards until a damaged page
// stops it, then backwards from its other end, so that one bad page
// costs only the rows on it.
func salvage(fsys vfs.FS, path string) (*Salvage, error) {
	uri, release, err := openURI(fsys, path)
	if err != nil {
		return nil, err
	}
	defer release()
	c, err := sqlite3.OpenFlags(uri, sqlite3.OPEN_READONLY)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s := &Salvage{Sequences: map[string]int64{}}
	entries := map[Key]Entry{}
	bad := map[Key]bool{}
	for _, order := range []string{"", " DESC"} {
		sel := `SELECT consumer, topic, partition, next_offset, metadata, updated_ms, crc FROM passbook_offsets
			ORDER BY consumer` + order + `, topic` + order + `, partition` + order
		err := query(c, sel, func(st *sqlite3.Stmt) {
			k := Key{Consumer: st.ColumnText(0), Topic: st.ColumnText(1), Partition: int32(st.ColumnInt64(2))}
			e := Entry{Key: k, Offset: st.ColumnInt64(3), Metadata: st.ColumnText(4), UpdatedAt: time.UnixMilli(st.ColumnInt64(5))}
			if checkCRC(k, e.Offset, e.Metadata, st.ColumnInt64(5), st, 6) != nil {
				bad[k] = true
				return
			}
			entries[k] = e
		})
		if err != nil && s.ReadErr == nil {
			s.ReadErr = err
		}
	}
	if s.ReadErr != nil {
		// Rows SQL could not reach: straight from the pages.
		for k, row := range scanOffsetPages(fsys, path) {
			if _, ok := entries[k]; !ok {
				entries[k] = row.Entry
				s.FromPages = append(s.FromPages, k)
			}
		}
		slices.SortFunc(s.FromPages, compareKeys)
	}
	for k := range bad {
		if _, ok := entries[k]; !ok {
			s.Bad = append(s.Bad, k)
		}
	}
	slices.SortFunc(s.Bad, compareKeys)
	for _, e := range entries {
		s.Entries = append(s.Entries, e)
	}
	slices.SortFunc(s.Entries, func(a, b Entry) int { return compareKeys(a.Key, b.Key) })
	s.SeqErr = query(c, `SELECT name, next FROM passbook_sequences`, func(st *sqlite3.Stmt) {
		s.Sequences[st.ColumnText(0)] = st.ColumnInt64(1)
	})
	return s, nil
}

func compareKeys(a, b Key) int { return strings.Compare(a.String(), b.String()) }

// RebuildOptions configure Rebuild. FS nil means the OS.
type RebuildOptions struct {
	FS vfs.FS
	// DryRun makes Rebuild report what it would salvage, and change
	// nothing.
	DryRun bool
	// TopicIDs are bound in the new store: the topics' own.
	TopicIDs map[string]TopicID
}

// Rebuild replaces the damaged store at path with a new one holding every
// committed offset that reads back with a valid checksum (see Salvage),
// its sequences, and the topic IDs of opts. The damaged file (and its WAL)
// is moved aside, never deleted. A consumer whose committed offset could
// not be kept starts where its reset policy says, as after a retention
// gap. The Salvage is returned once the damaged store is read, even if
// writing the new one then fails.
func Rebuild(path string, opts *RebuildOptions) (*Salvage, error) {
	var o RebuildOptions
	if opts != nil {
		o = *opts
	}
	fsys := o.FS
	if fsys == nil {
		fsys = vfs.OS()
	}
	s, err := salvage(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read the damaged offset store: %w", err)
	}
	s.Aside = fmt.Sprintf("%s.damaged-%d", path, time.Now().UnixNano())
	if o.DryRun {
		return s, nil
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := fsys.Rename(path+suffix, s.Aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return s, fmt.Errorf("move the damaged offset store aside: %w", err)
		}
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return s, err
	}
	store, err := Open(path, &Options{FS: storeFS(fsys)})
	if err != nil {
		return s, fmt.Errorf("create the new offset store: %w", err)
	}
	defer store.Close()
	ctx := context.Background()
	if err := store.CommitEntries(ctx, s.Entries); err != nil {
		return s, fmt.Errorf("write the salvaged offsets: %w", err)
	}
	seqs := maps.Clone(s.Sequences)
	if s.SeqErr != nil {
		seqs[KafkaProducerIDSequence] = max(seqs[KafkaProducerIDSequence], time.Now().UnixMicro())
	}
	for name, next := range seqs {
		if _, err := store.db.Exec(`INSERT INTO passbook_sequences (name, next) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET next = max(next, excluded.next)`, name, next); err != nil {
			return s, fmt.Errorf("write the salvaged sequences: %w", err)
		}
	}
	if _, err := store.BindTopics(ctx, o.TopicIDs, false); err != nil {
		return s, fmt.Errorf("bind the topics: %w", err)
	}
	return s, nil
}
