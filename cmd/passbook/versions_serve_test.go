package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sentVersions is a kgo logger that keeps, for each API, the highest
// version the client wrote ("wrote Fetch v18").
type sentVersions struct {
	mu  sync.Mutex
	max map[string]int16
}

var wroteRE = regexp.MustCompile(`^wrote (\w+) v(\d+)$`)

func (s *sentVersions) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (s *sentVersions) Log(_ kgo.LogLevel, msg string, _ ...any) {
	m := wroteRE.FindStringSubmatch(msg)
	if m == nil {
		return
	}
	v, _ := strconv.Atoi(m[2])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max == nil {
		s.max = map[string]int16{}
	}
	if old, ok := s.max[m[1]]; !ok || int16(v) > old {
		s.max[m[1]] = int16(v)
	}
}

func (s *sentVersions) get(api string) (int16, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.max[api]
	return v, ok
}

// TestServe_KgoNewestVersions: franz-go with its default (newest)
// versions against the real `passbook serve` — it negotiates the newest
// version of every API it uses (Produce v13 and Fetch v18 by topic ID,
// OffsetCommit/OffsetFetch v10, Metadata v13, …), produces, consumes in
// a group and commits; the commit is the group's next offset. Then the
// topic is deleted and created again: it has a new ID, and a fetch by
// the old one is UNKNOWN_TOPIC_ID.
func TestServe_KgoNewestVersions(t *testing.T) {
	p := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sent := &sentVersions{}
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.kafkaAddr), kgo.WithLogger(sent)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(client())
	created, err := adm.CreateTopic(ctx, 3, 1, nil, "orders")
	if err != nil {
		t.Fatal(err)
	}

	const n = 300
	producer := client(kgo.DefaultProduceTopic("orders"))
	for i := range n {
		producer.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	consumer := client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true })
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("committed offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.At
	})
	if total != n {
		t.Errorf("committed offsets sum to %d, want %d", total, n)
	}

	for _, api := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.CreateTopics, kmsg.InitProducerID, kmsg.Produce,
		kmsg.FindCoordinator, kmsg.OffsetFetch, kmsg.ListOffsets, kmsg.Fetch, kmsg.OffsetCommit} {
		want := api.Request().MaxVersion()
		if got, ok := sent.get(api.Name()); !ok || got != want {
			t.Errorf("%s: franz-go sent v%d (sent: %v), want v%d", api.Name(), got, ok, want)
		}
	}

	// Deleted and created again: a new ID, and the old one names nothing.
	metadataID := func() [16]byte { return topicIDOn(ctx, t, producer, "orders") }
	old := created.ID
	if old == ([16]byte{}) || metadataID() != old {
		t.Fatalf("CreateTopics answered ID %v, Metadata %v", old, metadataID())
	}
	if _, err := adm.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	again, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	if err != nil {
		t.Fatal(err)
	}
	recreated := again.ID
	if recreated == old || recreated == ([16]byte{}) || metadataID() != recreated {
		t.Fatalf("re-created topic's ID %v (Metadata: %v), the deleted one's %v", recreated, metadataID(), old)
	}
	fetch := func(id [16]byte) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "orders", id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, producer)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if fp := fetch(old); fp.ErrorCode != kerr.UnknownTopicID.Code || len(fp.RecordBatches) != 0 {
		t.Errorf("fetch by the deleted topic's ID: error %d, %d bytes; want UNKNOWN_TOPIC_ID and none", fp.ErrorCode, len(fp.RecordBatches))
	}
	if fp := fetch(recreated); fp.ErrorCode != 0 || fp.HighWatermark != 0 {
		t.Errorf("fetch by the new ID: error %d, high watermark %d; want an empty partition", fp.ErrorCode, fp.HighWatermark)
	}
}
