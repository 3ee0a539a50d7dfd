package main

import (
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
)

// TestCLI_TransactionalPartition: verify, repair and dump, run as a user
// runs them, take a partition holding transactions as sound: control
// batches (markers) and transactional batches are not damage, and dump
// names each marker.
func TestCLI_TransactionalPartition(t *testing.T) {
	data := t.TempDir()
	db, err := passbook.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	for pid, typ := range map[int64]storage.ControlType{11: storage.ControlAbort, 12: storage.ControlCommit} {
		b, err := batch.Append(nil, []batch.Record{{Value: []byte("in a transaction")}}, batch.Options{Idempotent: true, ProducerID: pid})
		if err != nil {
			t.Fatal(err)
		}
		batch.SetTransactional(b)
		if _, err := l.AppendBatch(b, storage.InOS); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendMarker(storage.Marker{ProducerID: pid, Type: typ, CoordinatorEpoch: 3}, storage.Fsync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runBinary(t, data, "", "--data", data, "verify")
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runBinary(t, data, "", "--data", data, "repair", "--dry-run")
	if code != 0 || strings.Contains(out, "would") {
		t.Fatalf("repair --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runBinary(t, data, "", "--data", data, "dump", "orders", "--records")
	if code != 0 {
		t.Fatalf("dump: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"producer=11", " transactional\n", " transactional,control\n", "marker=abort coordinator-epoch=3", "marker=commit coordinator-epoch=3", "4 batches, 4 records"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "DAMAGE") {
		t.Errorf("dump reports damage:\n%s", out)
	}
	out, _, _ = runBinary(t, data, "", "--data", data, "dump", "orders", "--records", "--json")
	if !strings.Contains(out, `"marker":"abort"`) || !strings.Contains(out, `"type":"control"`) {
		t.Errorf("dump --json lacks the control records:\n%s", out)
	}
}
