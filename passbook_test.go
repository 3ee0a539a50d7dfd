package passbook_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

func TestDB_TopicsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := passbook.TopicConfig{Partitions: 4, RetentionAge: 48 * time.Hour, RetentionBytes: 1 << 30, Durability: storage.Fsync, CleanupPolicy: passbook.CleanupCompact}
	users, err := db.CreateTopic("users", cfg)
	if err != nil {
		t.Fatal(err)
	}
	pos, err := users.Append(passbook.Record{Key: []byte("k"), Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users, err = db.Topic("users")
	if err != nil {
		t.Fatal(err)
	}
	got := users.Config()
	cfg.MaxRecordBytes, cfg.SegmentBytes, cfg.SegmentAge = got.MaxRecordBytes, got.SegmentBytes, got.SegmentAge
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("config after reopen = %+v, want %+v", got, cfg)
	}
	info := users.Describe()
	if info.Partitions[pos.Partition].Head != 1 {
		t.Fatalf("describe = %+v", info)
	}
}

func TestDB_BadInput(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTopic("orders", passbook.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  passbook.TopicConfig
		want error
	}{
		{"../escape", passbook.TopicConfig{}, passbook.ErrInvalidName},
		{"", passbook.TopicConfig{}, passbook.ErrInvalidName},
		{"orders", passbook.TopicConfig{}, passbook.ErrTopicExists},
		{"neg", passbook.TopicConfig{Partitions: -1}, passbook.ErrInvalidConfig},
		{"policy", passbook.TopicConfig{CleanupPolicy: "shred"}, passbook.ErrInvalidConfig},
	} {
		if _, err := db.CreateTopic(tc.name, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("CreateTopic(%q, %+v) = %v, want %v", tc.name, tc.cfg, err, tc.want)
		}
	}
	if _, err := db.Topic("missing"); !errors.Is(err, passbook.ErrUnknownTopic) {
		t.Errorf("Topic(missing) = %v", err)
	}
	orders, _ := db.Topic("orders")
	if _, err := orders.Partition(1); !errors.Is(err, passbook.ErrUnknownPartition) {
		t.Errorf("Partition(1) = %v", err)
	}
	if _, err := orders.Append(passbook.Record{Value: make([]byte, 2<<20)}); !errors.Is(err, storage.ErrRecordTooLarge) {
		t.Errorf("oversized append = %v", err)
	}
	if got := orders.Describe().Partitions[0].Head; got != 0 {
		t.Errorf("head after rejected appends = %d", got)
	}
	if len(db.Topics()) != 1 {
		t.Errorf("topics = %d after rejected creates", len(db.Topics()))
	}
}

func TestDB_DeleteTopic(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	orders, _ := db.CreateTopic("orders", passbook.TopicConfig{})
	orders.Append(passbook.Record{Value: []byte("x")})
	db.Offsets().Commit(ctx, offsets.Key{Consumer: "c", Topic: "orders"}, 1)
	if err := db.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "topics", "orders")); !os.IsNotExist(err) {
		t.Fatalf("topic directory still there: %v", err)
	}
	if entries, _ := db.Offsets().List(ctx, offsets.Filter{Topic: "orders"}); len(entries) != 0 {
		t.Fatalf("offsets left: %v", entries)
	}
	orders, err = db.CreateTopic("orders", passbook.TopicConfig{})
	if err != nil || orders.Describe().Partitions[0].Head != 0 {
		t.Fatalf("recreated topic: %v", err)
	}
}

func TestDB_SecondOpenerGetsPID(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = passbook.Open(dir, nil)
	if !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	t.Logf("error: %v", err)
}
