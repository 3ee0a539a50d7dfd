package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitOnce sends one OffsetCommit of group for topic partition 0 and
// returns the partition's error (nil: committed).
func commitOnce(ctx context.Context, t *testing.T, addr, group, topic string, offset int64) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, topicIDOn(ctx, t, cl, topic) // v10 names the topic by ID
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// TestServe_OffsetStoreDeleted: offsets.db deleted under a running
// passbook serve. The next OffsetCommit is answered
// COORDINATOR_NOT_AVAILABLE (retriable) instead of being acknowledged into
// a file no one will read, /readyz answers 503 saying the file was
// deleted, passbook_offsets_unavailable is 1 — and a normal client keeps
// producing and fetching meanwhile.
func TestServe_OffsetStoreDeleted(t *testing.T) {
	dir := t.TempDir()
	p, _ := startServeOn(t, dir)
	ctx := context.Background()
	normal := newNormalClient(t, p.kafkaAddr, "orders")
	if err := normal.round(ctx); err != nil {
		t.Fatal(err)
	}
	if err := commitOnce(ctx, t, p.kafkaAddr, "billing", "orders", 5); err != nil {
		t.Fatalf("commit before: %v", err)
	}
	if got := p.metric(t, "passbook_offsets_group_commits_total"); got < 1 {
		t.Fatalf("passbook_offsets_group_commits_total = %v after an answered commit (serve's default --offsets-sync group)", got)
	}

	if err := os.Remove(filepath.Join(dir, "offsets.db")); err != nil {
		t.Fatal(err)
	}
	if err := commitOnce(ctx, t, p.kafkaAddr, "billing", "orders", 7); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("commit after offsets.db was deleted: %v; want COORDINATOR_NOT_AVAILABLE", err)
	}
	resp, err := http.Get("http://" + p.httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "was deleted") {
		t.Fatalf("/readyz: %d %s; want 503 saying offsets.db was deleted", resp.StatusCode, body)
	}
	if got := p.metric(t, "passbook_offsets_unavailable"); got != 1 {
		t.Fatalf("passbook_offsets_unavailable = %v, want 1", got)
	}
	normal.during(t, time.Second)
}
