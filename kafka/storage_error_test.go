package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduce_DiskFull_StorageError: while the disk is full a produce
// answers KAFKA_STORAGE_ERROR saying why; a franz-go producer, which
// retries that error, has its record stored once space is back, and the
// partition serves it — no restart.
func TestProduce_DiskFull_StorageError(t *testing.T) {
	// write(2): through a mapping, appends into the space allocated
	// before the disk filled still succeed (storage's TestMapped_FullDisk).
	disk := vfs.NewFull(vfs.WithoutMapping(vfs.OS()))
	db, err := passbook.Open(t.TempDir(), &passbook.Options{FS: disk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTopic("orders", passbook.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, db, nil)
	cl := ts.client(t, kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	disk.SetFull(true)
	b, err := batch.Append(nil, []batch.Record{{Value: []byte("refused")}}, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	if tp, err := db.Topic("orders"); err == nil {
		rt.TopicID = tp.ID() // v13 names the topic by ID
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.KafkaStorageError.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "no space left") {
		t.Fatalf("produce on a full disk: code %d (%v), want %d (KAFKA_STORAGE_ERROR) saying no space is left", p.ErrorCode, p.ErrorMessage, kerr.KafkaStorageError.Code)
	}

	// A producer that runs into the full disk retries until it clears.
	done := make(chan error, 1)
	go func() {
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr()
	}()
	time.Sleep(300 * time.Millisecond)
	disk.SetFull(false)
	if err := <-done; err != nil {
		t.Fatalf("produce across the full disk: %v", err)
	}
	var got []string
	fetches := ts.client(t, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(got) < 2 {
		fs := fetches.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetched %q: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "before,after" {
		t.Fatalf("fetched %q, want before, after (nothing of the refused write)", got)
	}
}
