package librdkafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// adminClient is an AdminClient for addr, closed at the end of the test.
func adminClient(t *testing.T, addr string) *kafka.AdminClient {
	t.Helper()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return adm
}

// produceAt produces one record per timestamp to partition p of topic
// (the record's index as its value) and waits for every delivery.
func produceAt(t *testing.T, addr, topic string, p int32, from int, stamps ...time.Time) {
	t.Helper()
	pr, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": addr, "linger.ms": 0})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	deliveries := make(chan kafka.Event, len(stamps))
	for i, ts := range stamps {
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: p}, Value: fmt.Appendf(nil, "v%d", from+i), Timestamp: ts}
		if err := pr.Produce(msg, deliveries); err != nil {
			t.Fatal(err)
		}
		// One at a time: each record its own batch, in this order.
		if m := (<-deliveries).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatalf("delivery to %s/%d: %v", topic, p, m.TopicPartition.Error)
		}
	}
}

// firstFrom reads partition p of topic from offset from, with
// auto.offset.reset earliest, and returns the first record it gets.
func firstFrom(t *testing.T, addr, topic string, p int32, from int64) *kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "group.id": "reader-" + topic, "auto.offset.reset": "earliest", "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: p, Offset: kafka.Offset(from)}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m, err := c.ReadMessage(time.Second)
		if err == nil {
			return m
		}
		if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrTimedOut {
			t.Logf("read %s/%d: %v", topic, p, err)
		}
	}
	t.Fatalf("no record from %s/%d at %d", topic, p, from)
	return nil
}

// TestAdmin_AdminClient: confluent-kafka-go's AdminClient (librdkafka
// 2.11) against passbook serve, each call checked by its effect:
// partitions added and produced to, records deleted (a consumer below
// the new start is reset to it), ListOffsets (earliest after the delete,
// MAX_TIMESTAMP the record with the largest timestamp), DescribeCluster,
// ElectLeaders (not needed on one broker), ListConsumerGroupOffsets.
func TestAdmin_AdminClient(t *testing.T) {
	addr := startServe(t)
	adm := adminClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic, times := "adm", "times"
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{
		{Topic: topic, NumPartitions: 1, ReplicationFactor: 1},
		{Topic: times, NumPartitions: 1, ReplicationFactor: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			t.Fatalf("create %s: %v", r.Topic, r.Error)
		}
	}
	stamps := make([]time.Time, 100)
	for i := range stamps {
		stamps[i] = time.Now()
	}
	produceAt(t, addr, topic, 0, 0, stamps...)

	// CreatePartitions: validate only, then for real, then refused.
	if rs, err := adm.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 3}}, kafka.SetAdminValidateOnly(true)); err != nil || rs[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreatePartitions validate only: %v %v", err, rs)
	}
	rs, err := adm.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 3}})
	if err != nil || rs[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreatePartitions: %v %v", err, rs)
	}
	md, err := adm.GetMetadata(&topic, false, 10_000)
	if err != nil || len(md.Topics[topic].Partitions) != 3 {
		t.Fatalf("metadata after CreatePartitions: %v %+v", err, md)
	}
	rs, err = adm.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 2}})
	if err != nil || rs[0].Error.Code() != kafka.ErrInvalidPartitions {
		t.Errorf("CreatePartitions to fewer: %v %v, want INVALID_PARTITIONS", err, rs)
	}
	produceAt(t, addr, topic, 2, 1000, time.Now())
	if m := firstFrom(t, addr, topic, 2, 0); string(m.Value) != "v1000" || m.TopicPartition.Offset != 0 {
		t.Errorf("the new partition 2 holds %q at %v", m.Value, m.TopicPartition.Offset)
	}

	// DeleteRecords: the low watermark, ListOffsets earliest, and a
	// consumer below it reset by auto.offset.reset.
	dr, err := adm.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 60}})
	if err != nil || len(dr.DeleteRecordsResults) != 1 {
		t.Fatalf("DeleteRecords: %v %+v", err, dr)
	}
	if r := dr.DeleteRecordsResults[0]; r.TopicPartition.Error != nil || r.DeletedRecords == nil || r.DeletedRecords.LowWatermark != 60 {
		t.Fatalf("DeleteRecords: %v %+v", r.TopicPartition.Error, r.DeletedRecords)
	}
	dr, err = adm.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 101}})
	if err != nil || dr.DeleteRecordsResults[0].TopicPartition.Error == nil ||
		dr.DeleteRecordsResults[0].TopicPartition.Error.(kafka.Error).Code() != kafka.ErrOffsetOutOfRange {
		t.Errorf("DeleteRecords past the high watermark: %v %+v", err, dr)
	}
	tp0 := kafka.TopicPartition{Topic: &topic, Partition: 0}
	lo, err := adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{tp0: kafka.EarliestOffsetSpec})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range lo.ResultInfos {
		if info.Error.Code() != kafka.ErrNoError || info.Offset != 60 {
			t.Errorf("ListOffsets earliest after DeleteRecords: %v %v, want 60", info.Error, info.Offset)
		}
	}
	if m := firstFrom(t, addr, topic, 0, 5); m.TopicPartition.Offset != 60 || string(m.Value) != "v60" {
		t.Errorf("a consumer at 5 was reset to %v %q, want 60", m.TopicPartition.Offset, m.Value)
	}

	// ListOffsets MAX_TIMESTAMP: timestamps 3000, 9000, 5000 answer
	// offset 1, not the last record.
	produceAt(t, addr, times, 0, 0, time.UnixMilli(3000), time.UnixMilli(9000), time.UnixMilli(5000))
	tpt := kafka.TopicPartition{Topic: &times, Partition: 0}
	lo, err = adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{tpt: kafka.MaxTimestampOffsetSpec})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range lo.ResultInfos {
		if info.Error.Code() != kafka.ErrNoError || info.Offset != 1 || info.Timestamp != 9000 {
			t.Errorf("ListOffsets MAX_TIMESTAMP: %v offset %v timestamp %d, want 1, 9000", info.Error, info.Offset, info.Timestamp)
		}
	}

	// DescribeCluster: one broker, the controller.
	dc, err := adm.DescribeCluster(ctx)
	if err != nil || dc.ClusterID == nil || len(dc.Nodes) != 1 || dc.Controller == nil || dc.Controller.ID != dc.Nodes[0].ID {
		t.Errorf("DescribeCluster: %v %+v", err, dc)
	}

	// ElectLeaders: never needed on one broker.
	el, err := adm.ElectLeaders(ctx, kafka.NewElectLeadersRequest(kafka.ElectionTypePreferred, []kafka.TopicPartition{tp0}))
	if err != nil || len(el.TopicPartitions) != 1 {
		t.Fatalf("ElectLeaders: %v %+v", err, el)
	}
	if e, ok := el.TopicPartitions[0].Error.(kafka.Error); !ok || e.Code() != kafka.ErrElectionNotNeeded {
		t.Errorf("ElectLeaders of %s/0: %v, want ELECTION_NOT_NEEDED", topic, el.TopicPartitions[0].Error)
	}

	// ListConsumerGroupOffsets: what a group committed.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "group.id": "committer", "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 77}, {Topic: &topic, Partition: 2, Offset: 1}}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	c.Close()
	lg, err := adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: "committer",
		Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: 0}, {Topic: &topic, Partition: 1}, {Topic: &topic, Partition: 2}}}})
	if err != nil || len(lg.ConsumerGroupsTopicPartitions) != 1 {
		t.Fatalf("ListConsumerGroupOffsets: %v %+v", err, lg)
	}
	want := map[int32]kafka.Offset{0: 77, 1: kafka.OffsetInvalid, 2: 1}
	for _, tp := range lg.ConsumerGroupsTopicPartitions[0].Partitions {
		if tp.Offset != want[tp.Partition] || tp.Error != nil {
			t.Errorf("committed on %s/%d: %v %v, want %v", topic, tp.Partition, tp.Offset, tp.Error, want[tp.Partition])
		}
	}
}
