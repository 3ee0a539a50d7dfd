package passbook_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// copyOffsetStore copies offsets.db and its WAL, if any, from src to dst:
// the store's state at one moment.
func copyOffsetStore(t *testing.T, src, dst string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(dst, "offsets.db"+suffix))
		b, err := os.ReadFile(filepath.Join(src, "offsets.db"+suffix))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "offsets.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openDB(t *testing.T, dir string) *passbook.DB {
	t.Helper()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// createOrders creates topic orders, of one partition, holding 1,500
// records: committed offsets up to 1,500 are within it.
func createOrders(t *testing.T, db *passbook.DB) *passbook.Topic {
	t.Helper()
	tp, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]passbook.Record, 1500)
	for i := range recs {
		recs[i].Value = []byte("v")
	}
	if _, err := tp.AppendTo(0, recs, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	return tp
}

var billing = offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}

// TestDB_DeletedTopicsBookmarksNeverReturn: a consumer's committed offset
// on a deleted topic never attaches to a new topic of the same name, even
// when the deletion was cut short by a crash (kill -9 after the rename,
// before the offsets' DELETE) or rolled back by a power loss (the store
// back at a point before the DELETE). The new topic's consumer starts
// from its reset policy (ErrNotFound), not at offset 1,500.
func TestDB_DeletedTopicsBookmarksNeverReturn(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// cut leaves dir as the deletion of orders, whose consumer
		// billing committed 1,500, would after a crash; the DB is closed.
		cut func(t *testing.T, dir string, db *passbook.DB)
	}{
		{"KilledAfterRename", func(t *testing.T, dir string, db *passbook.DB) {
			db.Close()
			// DeleteTopic's first step, and no other.
			if err := os.Rename(filepath.Join(dir, "topics", "orders"), filepath.Join(dir, "topics", "orders~deleted-1")); err != nil {
				t.Fatal(err)
			}
		}},
		{"PowerLossRollsBackTheDelete", func(t *testing.T, dir string, db *passbook.DB) {
			db.Close()
			before := t.TempDir()
			copyOffsetStore(t, dir, before)
			db = openDB(t, dir)
			if err := db.DeleteTopic(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			createOrders(t, db) // acknowledged, then the power goes
			db.Close()
			// The topic directories were fsync'd; the store's last
			// unsynced transactions (the DELETE and the new binding) are
			// lost.
			copyOffsetStore(t, before, dir)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			old := createOrders(t, db)
			if err := db.Offsets().Commit(ctx, billing, 1500); err != nil {
				t.Fatal(err)
			}
			tt.cut(t, dir, db)

			db = openDB(t, dir)
			defer db.Close()
			var tp *passbook.Topic
			if tp, _ = db.Topic("orders"); tp == nil {
				tp = createOrders(t, db)
			}
			if tp.ID() == old.ID() {
				t.Fatalf("the new topic has the old one's ID %v", old.ID())
			}
			if off, err := db.Offsets().Committed(ctx, billing); !errors.Is(err, offsets.ErrNotFound) {
				t.Fatalf("billing's committed offset on the new orders = %d, %v; want ErrNotFound (the old topic's 1,500 is gone)", off, err)
			}
			// And its own commits hold across a reopen.
			if err := db.Offsets().Commit(ctx, billing, 7); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db = openDB(t, dir)
			if off, err := db.Offsets().Committed(ctx, billing); err != nil || off != 7 {
				t.Fatalf("after reopen: committed = %d, %v; want 7", off, err)
			}
		})
	}
}

// TestDB_TopicIDs: every topic has a Kafka topic ID, kept in topic.json
// and the same after reopening; a topic from before topic IDs gets one on
// Open, once, and keeps its committed offsets; committed offsets of a
// topic that does not exist are purged on Open.
func TestDB_TopicIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDB(t, dir)
	tp := createOrders(t, db)
	id := tp.ID()
	if id.IsZero() || len(id.String()) != 22 {
		t.Fatalf("new topic's ID = %q", id)
	}
	if err := db.Offsets().Commit(ctx, billing, 1500); err != nil {
		t.Fatal(err)
	}
	ghost := offsets.Key{Consumer: "billing", Topic: "ghost", Partition: 0}
	if err := db.Offsets().Commit(ctx, ghost, 3); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = openDB(t, dir)
	if tp, _ := db.Topic("orders"); tp.ID() != id {
		t.Fatalf("ID after reopen = %v, want %v", tp.ID(), id)
	}
	if _, err := db.Offsets().Committed(ctx, ghost); !errors.Is(err, offsets.ErrNotFound) {
		t.Fatalf("committed offset on topic ghost, which does not exist: %v; want it purged", err)
	}
	db.Close()

	// As written before topic IDs: no topic_id in topic.json, no binding.
	js := filepath.Join(dir, "topics", "orders", "topic.json")
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	line := `,
  "topic_id": "` + id.String() + `"`
	if !strings.Contains(string(b), line) {
		t.Fatalf("topic.json holds no topic_id %v:\n%s", id, b)
	}
	if err := os.WriteFile(js, []byte(strings.Replace(string(b), line, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(`DELETE FROM passbook_topics`); err != nil {
		t.Fatal(err)
	}
	st.Close()

	db = openDB(t, dir)
	tp, _ = db.Topic("orders")
	upgraded := tp.ID()
	if upgraded.IsZero() || upgraded == id {
		t.Fatalf("ID of a topic from before IDs = %v", upgraded)
	}
	if off, err := db.Offsets().Committed(ctx, billing); err != nil || off != 1500 {
		t.Fatalf("committed offset of a topic from before IDs = %d, %v; want 1500 kept", off, err)
	}
	db.Close()
	db = openDB(t, dir)
	defer db.Close()
	if tp, _ := db.Topic("orders"); tp.ID() != upgraded {
		t.Fatalf("the ID Open gave is not kept: %v, then %v", upgraded, tp.ID())
	}
	if off, err := db.Offsets().Committed(ctx, billing); err != nil || off != 1500 {
		t.Fatalf("committed = %d, %v; want 1500", off, err)
	}
}

// TestDB_OffsetStoreLost: offsets.db deleted or truncated while the
// server was stopped (or under it: it goes on writing the file it has
// open, which is gone at the restart). verify reports the store as lost,
// naming the topics that were bound in it, and the next Open says at
// error level that every committed offset is lost rather than starting
// every consumer over in silence.
func TestDB_OffsetStoreLost(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		lose func(path string) error
	}{
		{"Deleted", func(path string) error { return os.Remove(path) }},
		{"Truncated", func(path string) error { return os.Truncate(path, 0) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			createOrders(t, db)
			if err := db.Offsets().Commit(ctx, billing, 3); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if r, err := passbook.Verify(dir, nil); err != nil || len(r.Problems) != 0 {
				t.Fatalf("verify before: %+v, %v; want no problems", r, err)
			}
			if err := tt.lose(filepath.Join(dir, "offsets.db")); err != nil {
				t.Fatal(err)
			}
			r, err := passbook.Verify(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Problems) == 0 || !strings.Contains(r.Problems[len(r.Problems)-1].Detail, "topics orders were bound in one") {
				t.Fatalf("verify after the store was %s: %+v; want it reported lost", strings.ToLower(tt.name), r.Problems)
			}

			var log strings.Builder
			db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "every committed offset is lost") {
				t.Fatalf("Open of a data directory whose store was lost logged:\n%s\nwant an error saying every committed offset is lost", log.String())
			}
		})
	}
}

// TestDB_PowerLoss_CommittedPastHead: a power cut keeps a durable commit
// (SyncGroup) but not the records it covered (written to the OS only).
// Opened on its own, with no repair first, the data directory sets that
// committed offset to the partition's head, with a warning: the consumer
// reads the records appended from there instead of skipping them.
func TestDB_PowerLoss_CommittedPastHead(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	opts := func(fsys vfs.FS, log *strings.Builder) *passbook.Options {
		return &passbook.Options{FS: fsys, MinSegmentBytes: -1, Logger: slog.New(slog.NewTextHandler(log, nil)),
			Offsets: offsets.Options{FS: fsys, Synchronous: offsets.SyncGroup}}
	}
	var log strings.Builder
	db, err := passbook.Open("/data", opts(mem, &log))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 1, Durability: storage.InOS})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AppendTo(0, []passbook.Record{{Value: []byte("a")}, {Value: []byte("b")}}, storage.InOS); err != nil {
		t.Fatal(err)
	}
	if err := db.Offsets().Commit(ctx, billing, 2); err != nil {
		t.Fatal(err)
	}
	crashed := mem.Crash(vfs.CrashOptions{})
	db.Close()

	db, err = passbook.Open("/data", opts(crashed, &log))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, _ = db.Topic("orders")
	l, _ := tp.Partition(0)
	if l.Head() != 0 {
		t.Fatalf("head after the power cut = %d; the records were never fsync'd", l.Head())
	}
	if got, err := db.Offsets().Committed(ctx, billing); err != nil || got != 0 {
		t.Fatalf("committed after the power cut = %d, %v; want the head, 0", got, err)
	}
	if !strings.Contains(log.String(), "committed offset past the partition's head") {
		t.Fatalf("no warning:\n%s", log.String())
	}
}
