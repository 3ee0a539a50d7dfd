package passbook_test

import (
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// TestDB_PowerLoss_NewDataDirectory: records fsync'd into a data
// directory created just before survive a power loss — the directory
// entries of the data directory and its topics directory included (found
// by cmd/torture).
func TestDB_PowerLoss_NewDataDirectory(t *testing.T) {
	mem := vfs.NewMem()
	dir := t.TempDir() // the offset store is on the OS
	db, err := passbook.Open(dir, &passbook.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Durability: storage.Fsync})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Append(passbook.Record{Value: []byte("order-1")}); err != nil {
		t.Fatal(err)
	}
	crashed := mem.Crash(vfs.CrashOptions{})
	db.Close()
	db, err = passbook.Open(dir, &passbook.Options{FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topic, err = db.Topic("orders")
	if err != nil {
		t.Fatalf("after a power loss: %v", err)
	}
	for rec, err := range topic.Records(0, 0) {
		if err != nil || string(rec.Value) != "order-1" {
			t.Fatalf("after a power loss: %q, %v", rec.Value, err)
		}
		return
	}
	t.Fatal("the fsync'd record is gone")
}
