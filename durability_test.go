package passbook_test

import (
	"strings"
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

// TestDB_CreateTopic_FailedWrite: a disk error while CreateTopic writes
// topic.json fails the creation, and the data directory still opens,
// without the topic (found by cmd/torture).
func TestDB_CreateTopic_FailedWrite(t *testing.T) {
	for at := 0; ; at++ {
		mem := vfs.NewMem()
		dir := t.TempDir()
		mem.MkdirAll(dir, 0o755)
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: at, Kinds: vfs.OpWrite, ShortWrite: true,
			Filter: func(op vfs.Op) bool {
				return strings.HasSuffix(op.Name, ".json") || strings.HasSuffix(op.Name, ".json.tmp")
			}})
		db, err := passbook.Open(dir, &passbook.Options{FS: faulty})
		if err != nil {
			t.Fatal(err)
		}
		_, cerr := db.CreateTopic("orders", passbook.TopicConfig{})
		db.Close()
		db, err = passbook.Open(dir, &passbook.Options{FS: mem})
		if err != nil {
			t.Fatalf("open after a failed topic.json write: %v", err)
		}
		_, terr := db.Topic("orders")
		db.Close()
		if cerr == nil {
			if terr != nil {
				t.Fatalf("created, then gone: %v", terr)
			}
			return // no more writes to fail
		}
		if terr == nil {
			t.Fatalf("creation failed (%v) but the topic is there", cerr)
		}
	}
}
