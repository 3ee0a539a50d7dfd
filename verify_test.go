package passbook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// dataDir writes a data directory: topic orders (2 partitions, 50
// records each, small segments) and a consumer's committed offsets.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	orders, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2, SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		for i := range 50 {
			if _, err := orders.AppendTo(p, []passbook.Record{{Value: fmt.Appendf(nil, "order-%d-%03d", p, i)}}, storage.DefaultDurability); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: p}, 20); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustCheck(t *testing.T, dir string, repair bool) *passbook.CheckReport {
	t.Helper()
	f := passbook.Verify
	if repair {
		f = passbook.Repair
	}
	r, err := f(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVerify_DataDir(t *testing.T) {
	dir := dataDir(t)
	var done, total int64
	r, err := passbook.Verify(dir, &passbook.CheckOptions{Progress: func(d, n int64) { done, total = d, n }})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Topics != 1 || len(r.Partitions) != 2 || r.Offsets != 2 || total == 0 || done != total {
		t.Fatalf("report %+v, problems %v, progress %d/%d", r, r.AllProblems(), done, total)
	}
	for _, p := range r.Partitions {
		if p.Report.Records != 50 || p.Report.Segments < 2 {
			t.Errorf("partition %d: %d records in %d segments", p.Partition, p.Report.Records, p.Report.Segments)
		}
	}
}

func TestVerify_DataDirLocked(t *testing.T) {
	dir := dataDir(t)
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := passbook.Verify(dir, nil); !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "in use by process") {
		t.Errorf("verify of an open data directory: %v", err)
	}
	if _, err := passbook.Verify(t.TempDir(), nil); !errors.Is(err, passbook.ErrNoDataDir) || !strings.Contains(err.Error(), "no data directory at") {
		t.Errorf("verify of an empty directory: %v", err)
	}
}

func TestVerify_CommittedPastHead(t *testing.T) {
	dir := dataDir(t)
	store, err := offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 1}
	store.Commit(context.Background(), k, 75)
	store.Commit(context.Background(), offsets.Key{Consumer: "old", Topic: "gone", Partition: 0}, 3)
	store.Close()
	r := mustCheck(t, dir, false)
	ps := r.AllProblems()
	if len(ps) != 1 || ps[0].Kind != passbook.ProblemOffsetStore || !strings.Contains(ps[0].Detail, "past the head 50") {
		t.Fatalf("problems %v", ps)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "topic that does not exist") {
		t.Errorf("notes %q", r.Notes)
	}
	r, err = passbook.Repair(dir, &passbook.CheckOptions{DryRun: true})
	if err != nil || len(r.Actions) != 1 || r.OK() {
		t.Fatalf("dry run: %v, actions %v, problems %v", err, r.Actions, r.AllProblems())
	}
	r = mustCheck(t, dir, true)
	if !r.OK() || len(r.Actions) != 1 || !strings.Contains(r.Actions[0].Detail, "from 75 to the head 50") {
		t.Fatalf("repair: actions %v, problems %v", r.Actions, r.AllProblems())
	}
	if r := mustCheck(t, dir, false); !r.OK() {
		t.Errorf("after repair: %v", r.AllProblems())
	}
}

func TestVerify_OffsetStoreDamaged(t *testing.T) {
	dir := dataDir(t)
	path := filepath.Join(dir, "offsets.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[:16], "not SQLite here!")
	os.WriteFile(path, b, 0o644)
	ps := mustCheck(t, dir, false).AllProblems()
	if len(ps) != 1 || ps[0].Kind != passbook.ProblemOffsetStore || ps[0].Pos != 0 {
		t.Fatalf("problems %v", ps)
	}
}

// TestVerify_CommittedOffsetChanged flips a bit of a committed offset's
// value inside offsets.db, which SQLite's integrity check cannot see:
// verify reports it by its checksum, and repair deletes that one entry
// (saying what was stored), so the consumer starts by its reset policy
// rather than at an offset nobody committed.
func TestVerify_CommittedOffsetChanged(t *testing.T) {
	dir := dataDir(t)
	store, err := offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 1}
	store.Commit(context.Background(), k, 0x1234_5678_9a) // stored as 5 bytes
	store.Close()
	path := filepath.Join(dir, "offsets.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte{0x12, 0x34, 0x56, 0x78, 0x9a})
	if at < 0 {
		t.Fatal("the committed offset is not in the file")
	}
	b[at+4] ^= 0x01
	os.WriteFile(path, b, 0o644)
	ps := mustCheck(t, dir, false).AllProblems()
	if len(ps) != 1 || ps[0].Kind != passbook.ProblemOffsetStore || !strings.Contains(ps[0].Detail, "fails its checksum") {
		t.Fatalf("problems %v", ps)
	}
	r := mustCheck(t, dir, true)
	if !r.OK() || len(r.Actions) != 1 || r.Actions[0].What != "delete offset" || !strings.Contains(r.Actions[0].Detail, "stored as 78187493531") {
		t.Fatalf("repair: actions %v, problems %v", r.Actions, r.AllProblems())
	}
	if r := mustCheck(t, dir, false); !r.OK() {
		t.Errorf("after repair: %v", r.AllProblems())
	}
	store, err = offsets.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Committed(context.Background(), k); !errors.Is(err, offsets.ErrNotFound) {
		t.Errorf("after repair: Committed err = %v, want ErrNotFound", err)
	}
	if got, err := store.Committed(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}); got != 20 || err != nil {
		t.Errorf("the other partition's entry: %d, %v; want 20", got, err)
	}
}

func TestVerify_Topics(t *testing.T) {
	dir := dataDir(t)
	tdir := filepath.Join(dir, "topics", "orders")
	os.Rename(filepath.Join(tdir, "1"), filepath.Join(dir, "elsewhere"))
	os.MkdirAll(filepath.Join(dir, "topics", "half~deleted-1"), 0o755)
	r := mustCheck(t, dir, false)
	ps := r.AllProblems()
	if len(ps) != 1 || ps[0].Kind != passbook.ProblemTopic || !strings.Contains(ps[0].Detail, "partition 1 of topic orders is missing") {
		t.Fatalf("problems %v", ps)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "half~deleted-1") {
		t.Errorf("notes %q", r.Notes)
	}
	os.WriteFile(filepath.Join(tdir, "topic.json"), []byte(`{"format":1,"config":{"partitions":-3}}`), 0o644)
	ps = mustCheck(t, dir, false).AllProblems()
	if len(ps) != 1 || ps[0].Kind != passbook.ProblemTopic || !strings.HasSuffix(ps[0].File, "topic.json") {
		t.Fatalf("problems %v", ps)
	}
}

func TestRepair_DataDir(t *testing.T) {
	dir := dataDir(t)
	// Flip a byte in the first segment of partition 0: repair moves the
	// log's start past it; the consumer, behind, will be told of the gap.
	seg := filepath.Join(dir, "topics", "orders", "0", "00000000000000000000.log")
	b, _ := os.ReadFile(seg)
	b[len(b)-5] ^= 1
	os.WriteFile(seg, b, 0o644)
	r := mustCheck(t, dir, false)
	if ps := r.AllProblems(); len(ps) != 1 || ps[0].Kind != storage.ProblemBatch {
		t.Fatalf("problems %v", ps)
	}
	r = mustCheck(t, dir, true)
	if !r.OK() {
		t.Fatalf("after repair: %v", r.AllProblems())
	}
	rep := r.Partitions[0].Repair
	if rep.Lost == 0 || rep.Start != rep.Lost || rep.Head != 50 {
		t.Fatalf("repair %+v", rep)
	}
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	orders, _ := db.Topic("orders")
	l, _ := orders.Partition(0)
	if l.StartOffset() != rep.Start || l.Head() != 50 {
		t.Errorf("partition 0 is [%d, %d)", l.StartOffset(), l.Head())
	}
}
