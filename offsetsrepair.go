package passbook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// salvage is what could be read back of a damaged offset store.
type salvage struct {
	entries   map[offsets.Key]offsets.Entry // each with a valid checksum
	bad       []offsets.Key                 // read, but failing their checksum
	fromPages []offsets.Key                 // read from pages, not through SQL
	sequences map[string]int64
	readErr   error // where reading stopped, if it did
	seqErr    error
}

// salvageOffsets reads every committed offset of the store at path that
// reads back with a valid checksum: the table forwards until a damaged
// page stops it, then backwards from its other end, so that one bad page
// costs only the rows on it.
func salvageOffsets(fsys vfs.FS, path string) (*salvage, error) {
	uri, release, err := offsets.URI(fsys, path)
	if err != nil {
		return nil, err
	}
	defer release()
	c, err := sqlite3.OpenFlags(uri, sqlite3.OPEN_READONLY)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s := &salvage{entries: map[offsets.Key]offsets.Entry{}, sequences: map[string]int64{}}
	bad := map[offsets.Key]bool{}
	for _, order := range []string{"", " DESC"} {
		sel := `SELECT consumer, topic, partition, next_offset, metadata, updated_ms, crc FROM passbook_offsets
			ORDER BY consumer` + order + `, topic` + order + `, partition` + order
		err := query(c, sel, func(st *sqlite3.Stmt) {
			k := offsets.Key{Consumer: st.ColumnText(0), Topic: st.ColumnText(1), Partition: int32(st.ColumnInt64(2))}
			e := offsets.Entry{Key: k, Offset: st.ColumnInt64(3), Metadata: st.ColumnText(4), UpdatedAt: time.UnixMilli(st.ColumnInt64(5))}
			if offsets.CheckEntry(k, e.Offset, e.Metadata, st.ColumnInt64(5), st.ColumnInt64(6), st.ColumnType(6) == sqlite3.INTEGER) != nil {
				bad[k] = true
				return
			}
			s.entries[k] = e
		})
		if err != nil && s.readErr == nil {
			s.readErr = err
		}
	}
	if s.readErr != nil {
		// Rows SQL could not reach: straight from the pages.
		for k, row := range scanOffsetPages(fsys, path) {
			if _, ok := s.entries[k]; !ok {
				s.entries[k] = row.Entry
				s.fromPages = append(s.fromPages, k)
			}
		}
		slices.SortFunc(s.fromPages, func(a, b offsets.Key) int { return strings.Compare(a.String(), b.String()) })
	}
	for k := range bad {
		if _, ok := s.entries[k]; !ok {
			s.bad = append(s.bad, k)
		}
	}
	slices.SortFunc(s.bad, func(a, b offsets.Key) int { return strings.Compare(a.String(), b.String()) })
	s.seqErr = query(c, `SELECT name, next FROM passbook_sequences`, func(st *sqlite3.Stmt) {
		s.sequences[st.ColumnText(0)] = st.ColumnInt64(1)
	})
	return s, nil
}

// rebuildOffsets replaces the damaged store at path with a new one holding
// every committed offset that reads back with a valid checksum: the
// damaged file (and its WAL) is moved aside, never deleted. Every consumer
// whose committed offset could not be kept is named; it starts where its
// reset policy says, as after a retention gap.
func rebuildOffsets(logsFS, fsys vfs.FS, dir, path string, r *CheckReport, dry bool) error {
	s, err := salvageOffsets(fsys, path)
	if err != nil {
		return fmt.Errorf("read the damaged offset store: %w", err)
	}
	aside := fmt.Sprintf("%s.damaged-%d", path, time.Now().UnixNano())
	var lost []string
	for _, k := range s.bad {
		lost = append(lost, k.String()+" (fails its checksum)")
	}
	detail := fmt.Sprintf("a new offset store with the %s committed offsets that read back with a valid checksum; the damaged file moved to %s",
		thousands.Int(len(s.entries)), filepath.Base(aside))
	if len(lost) > 0 {
		detail += "; lost, starting where their reset policy says: " + strings.Join(lost, ", ")
	}
	if s.readErr != nil {
		detail += fmt.Sprintf("; SQLite could not read the whole table (%v), so %s of them were read from the file's pages directly (each the row committed last found there, with a valid checksum: check them with passbook offsets list)",
			s.readErr, thousands.Int(len(s.fromPages)))
		if len(s.fromPages) > 0 && len(s.fromPages) <= 20 {
			var names []string
			for _, k := range s.fromPages {
				names = append(names, k.String())
			}
			detail += ": " + strings.Join(names, ", ")
		}
		detail += "; rows on pages lost entirely cannot be named: a consumer with no committed offset on a topic it had read starts where its reset policy says"
	}
	var seqs []string
	for name, next := range s.sequences {
		seqs = append(seqs, fmt.Sprintf("%s at %s", name, thousands.Int(next)))
	}
	slices.Sort(seqs)
	if len(seqs) > 0 {
		detail += "; sequences kept: " + strings.Join(seqs, ", ")
	}
	if s.seqErr != nil {
		detail += fmt.Sprintf("; the sequences could not be read (%v): the Kafka producer id sequence starts again past the current time in microseconds, above any it can have handed out at less than one a microsecond", s.seqErr)
	}
	r.Actions = append(r.Actions, storage.RepairAction{What: "rebuild offset store", File: path, Detail: detail})
	if dry {
		return nil
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := fsys.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("move the damaged offset store aside: %w", err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return err
	}
	store, err := offsets.Open(path, &offsets.Options{FS: storeFS(fsys)})
	if err != nil {
		return fmt.Errorf("create the new offset store: %w", err)
	}
	defer store.Close()
	ctx := context.Background()
	entries := make([]offsets.Entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	if err := store.CommitEntries(ctx, entries); err != nil {
		return fmt.Errorf("write the salvaged offsets: %w", err)
	}
	if s.seqErr != nil {
		s.sequences[offsets.KafkaProducerIDSequence] = max(s.sequences[offsets.KafkaProducerIDSequence], time.Now().UnixMicro())
	}
	for name, next := range s.sequences {
		if _, err := store.DB().Exec(`INSERT INTO passbook_sequences (name, next) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET next = max(next, excluded.next)`, name, next); err != nil {
			return fmt.Errorf("write the salvaged sequences: %w", err)
		}
	}
	// The topics' IDs, from their topic.json: the store is theirs.
	ids := map[string]offsets.TopicID{}
	for _, t := range topicIDsOnDisk(logsFS, dir) {
		if id, err := offsets.ParseTopicID(t.id); err == nil {
			ids[t.name] = id
		}
	}
	if _, err := store.BindTopics(ctx, ids, false); err != nil {
		return fmt.Errorf("bind the topics: %w", err)
	}
	return nil
}
