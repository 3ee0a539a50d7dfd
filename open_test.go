package passbook_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// manyPartitionsDir makes a data directory of one topic "wide" of 80
// partitions and 60 one-partition topics "t00".."t59" (200 partitions in
// all, enough for Open to open them several at a time), partition p of a
// topic holding p%4+1 records that name it.
func manyPartitionsDir(t *testing.T) (dir string, heads map[string]int64) {
	t.Helper()
	dir = t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	heads = map[string]int64{}
	create := func(name string, partitions int) {
		tp, err := db.CreateTopic(name, passbook.TopicConfig{Partitions: partitions, SegmentBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for p := range partitions {
			n := p%4 + 1
			for i := range n {
				rec := []passbook.Record{{Value: recordValue(name, p, i)}}
				if _, err := tp.AppendTo(int32(p), rec, storage.InOS); err != nil {
					t.Fatal(err)
				}
			}
			heads[fmt.Sprintf("%s/%d", name, p)] = int64(n)
		}
	}
	create("wide", 80)
	for i := range 60 {
		create(fmt.Sprintf("t%02d", i), 1)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, heads
}

func recordValue(topic string, p, i int) []byte {
	return fmt.Appendf(nil, "%s/%d record %d", topic, p, i)
}

// checkPartitions checks that db holds exactly the partitions of heads,
// each with its records, except those named in fenced, which must be
// fenced.
func checkPartitions(t *testing.T, db *passbook.DB, heads map[string]int64, fenced ...string) {
	t.Helper()
	seen := 0
	for _, tp := range db.Topics() {
		for p := range tp.Partitions() {
			key := fmt.Sprintf("%s/%d", tp.Name(), p)
			want, ok := heads[key]
			if !ok {
				t.Fatalf("partition %s was not made", key)
			}
			seen++
			l, err := tp.Partition(int32(p))
			if slices.Contains(fenced, key) {
				if !errors.Is(err, passbook.ErrFenced) {
					t.Errorf("%s: Partition = %v, want ErrFenced", key, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if l.Head() != want {
				t.Errorf("%s: head %d, want %d", key, l.Head(), want)
			}
			i := 0
			for rec, err := range tp.Records(int32(p), 0) {
				if err != nil {
					t.Fatalf("%s: read: %v", key, err)
				}
				if string(rec.Value) != string(recordValue(tp.Name(), p, i)) {
					t.Fatalf("%s: record %d is %q", key, i, rec.Value)
				}
				i++
			}
			if int64(i) != want {
				t.Errorf("%s: %d records, want %d", key, i, want)
			}
		}
	}
	if seen != len(heads) {
		t.Errorf("%d partitions open, want %d", seen, len(heads))
	}
}

// TestDB_Reopen_ManyPartitions: a data directory of many partitions in
// one wide topic and in many small topics reopens, after a clean Close,
// with every partition's head and records as they were and every partition
// recovered clean; and again after a second clean Close.
func TestDB_Reopen_ManyPartitions(t *testing.T) {
	dir, heads := manyPartitionsDir(t)
	for round := range 2 {
		db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		checkPartitions(t, db, heads)
		for _, tp := range db.Topics() {
			for p := range tp.Partitions() {
				l, _ := tp.Partition(int32(p))
				if r := l.Recovery(); !r.Clean || r.Validated != 0 {
					t.Errorf("round %d: %s/%d recovered %+v, want clean", round, tp.Name(), p, r)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
	}
}

// TestDB_Reopen_ManyPartitions_OneDamaged: among many partitions opened
// at once, one whose middle segment is gone is fenced, naming its topic
// and partition; every other partition serves its records.
func TestDB_Reopen_ManyPartitions_OneDamaged(t *testing.T) {
	dir, heads := manyPartitionsDir(t)
	// wide/7 holds 4 records, all in one 1 KiB segment: append more, so
	// that it has a middle segment to remove.
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	wide, _ := db.Topic("wide")
	for i := 4; i < 100; i++ {
		if _, err := wide.AppendTo(7, []passbook.Record{{Value: recordValue("wide", 7, i)}}, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	heads["wide/7"] = 100
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "topics", "wide", "7", "*.log"))
	if len(segs) < 3 {
		t.Fatalf("%d segments in wide/7, want 3 or more", len(segs))
	}
	slices.Sort(segs)
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}

	db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatalf("Open with one damaged partition among many: %v", err)
	}
	defer db.Close()
	checkPartitions(t, db, heads, "wide/7")
	problems := db.PartitionProblems()
	if len(problems) != 1 || problems[0].Topic != "wide" || problems[0].Partition != 7 || problems[0].State != passbook.StateFenced {
		t.Fatalf("problems %+v, want wide/7 fenced", problems)
	}
}
