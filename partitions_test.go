package passbook_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

func TestDB_AddPartitions(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	old, err := db.CreateTopic("grow", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.AppendTo(1, []passbook.Record{{Value: []byte("before")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	// A directory left by an AddPartitions a crash cut short, holding
	// junk: never part of the topic, it is made anew.
	junk := filepath.Join(dir, "topics", "grow", "2")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "00000000000000000000.log"), []byte("half made"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Appends go on meanwhile (the race detector watches).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			tp, err := db.Topic("grow")
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := tp.Append(passbook.Record{Value: []byte("x")}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	nt, err := db.AddPartitions(context.Background(), "grow", 4)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if nt.Partitions() != 4 || old.Partitions() != 2 {
		t.Fatalf("new topic %d partitions, old %d", nt.Partitions(), old.Partitions())
	}
	if got, _ := db.Topic("grow"); got.Partitions() != 4 || got.ID() != old.ID() {
		t.Fatalf("DB.Topic: %d partitions, ID %v (was %v)", got.Partitions(), got.ID(), old.ID())
	}
	if _, err := nt.AppendTo(3, []passbook.Record{{Value: []byte("new")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		topic string
		total int
		want  error
	}{
		{"not an increase", "grow", 3, passbook.ErrInvalidPartitions},
		{"the same", "grow", 4, passbook.ErrInvalidPartitions},
		{"too many", "grow", passbook.MaxPartitions + 1, passbook.ErrInvalidPartitions},
		{"unknown topic", "nosuch", 5, passbook.ErrUnknownTopic},
	} {
		if _, err := db.AddPartitions(context.Background(), tc.topic, tc.total); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err := db.CheckAddPartitions(tc.topic, tc.total); !errors.Is(err, tc.want) {
			t.Errorf("%s: check: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if r, err := passbook.Verify(dir, nil); err != nil || !r.OK() {
		t.Errorf("verify: %v %+v", err, r)
	}
	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err := db.Topic("grow")
	if err != nil || tp.Partitions() != 4 || tp.Config().Partitions != 4 {
		t.Fatalf("reopened: %v, %d partitions", err, tp.Partitions())
	}
	var got []string
	for rec, err := range tp.Records(3, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rec.Value))
	}
	if len(got) != 1 || got[0] != "new" {
		t.Errorf("partition 3 holds %q", got)
	}
	for rec, err := range tp.Records(1, 0) {
		if err != nil || string(rec.Value) != "before" {
			t.Errorf("partition 1 starts with %q, %v", rec.Value, err)
		}
		break
	}
}

func TestTopic_DeleteRecords(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.CreateTopic("trim", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := tp.Append(passbook.Record{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if start, err := tp.DeleteRecords(0, 4); err != nil || start != 4 {
		t.Fatalf("DeleteRecords(4) = %d, %v", start, err)
	}
	if _, err := tp.DeleteRecords(0, 11); !errors.Is(err, storage.ErrOutOfRange) {
		t.Errorf("past the head: %v", err)
	}
	if _, err := tp.DeleteRecords(1, 0); !errors.Is(err, passbook.ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	ct, err := db.CreateTopic("keys", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ct.DeleteRecords(0, 0); !errors.Is(err, passbook.ErrCompactOnly) {
		t.Errorf("compact topic: %v", err)
	}
	for _, err := range tp.Records(0, 2) {
		if !errors.Is(err, storage.ErrOutOfRange) {
			t.Errorf("read below the start: %v", err)
		}
		break
	}
	if start, err := tp.DeleteRecords(0, passbook.HighWatermark); err != nil || start != 10 {
		t.Fatalf("DeleteRecords(HighWatermark) = %d, %v", start, err)
	}
	db.Close()
	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, _ = db.Topic("trim")
	if info := tp.Describe().Partitions[0]; info.StartOffset != 10 || info.Records != 0 {
		t.Errorf("reopened: %+v", info)
	}
}

// TestDB_AddPartitions_PowerLoss fails the i-th file operation of an
// AddPartitions, i = 0, 1, 2 …, then cuts the power: the data directory
// opens with the topic's old count or its new one — the new one whenever
// AddPartitions returned — every partition it counts opens (none is
// fenced), its records are there, and a second AddPartitions then
// succeeds.
func TestDB_AddPartitions_PowerLoss(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		dir := t.TempDir() // the offset store is on the OS
		var armed atomic.Bool
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, Filter: func(vfs.Op) bool { return armed.Load() }})
		db, err := passbook.Open(dir, &passbook.Options{FS: faulty})
		if err != nil {
			t.Fatal(err)
		}
		topic, err := db.CreateTopic("grow", passbook.TopicConfig{Partitions: 2, Durability: storage.Fsync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topic.AppendTo(1, []passbook.Record{{Value: []byte("kept")}}, storage.DefaultDurability); err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		_, aerr := db.AddPartitions(context.Background(), "grow", 4)
		done := faulty.Ops() <= i
		if done && aerr != nil {
			t.Fatalf("no fault injected, AddPartitions: %v", aerr)
		}
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
		db.Close()

		db, err = passbook.Open(dir, &passbook.Options{FS: crashed})
		if err != nil {
			t.Fatalf("fault at op %d (AddPartitions: %v): open after the power loss: %v", i, aerr, err)
		}
		tp, err := db.Topic("grow")
		if err != nil {
			t.Fatalf("fault at op %d: %v", i, err)
		}
		n := tp.Partitions()
		if aerr == nil && n != 4 || n != 2 && n != 4 {
			t.Fatalf("fault at op %d: AddPartitions returned %v; %d partitions after the power loss", i, aerr, n)
		}
		for _, p := range tp.Describe().Partitions {
			if p.Fenced != "" {
				t.Fatalf("fault at op %d: partition %d fenced: %s", i, p.Partition, p.Fenced)
			}
		}
		var got []string
		for rec, err := range tp.Records(1, 0) {
			if err != nil {
				t.Fatalf("fault at op %d: %v", i, err)
			}
			got = append(got, string(rec.Value))
		}
		if len(got) != 1 || got[0] != "kept" {
			t.Fatalf("fault at op %d: partition 1 holds %q", i, got)
		}
		if n == 2 {
			if _, err := db.AddPartitions(context.Background(), "grow", 4); err != nil {
				t.Fatalf("fault at op %d: AddPartitions again: %v", i, err)
			}
		}
		db.Close()
		if done {
			if i < 5 {
				t.Fatalf("AddPartitions finished after only %d operations", i)
			}
			t.Logf("AddPartitions took %d file operations, each failed in turn", i)
			return
		}
	}
}
