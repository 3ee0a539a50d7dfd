package passbook_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
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
