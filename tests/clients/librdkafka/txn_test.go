package librdkafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// txnProducer is librdkafka's transactional producer of id, its
// transactions initialized.
func txnProducer(t *testing.T, addr, id string) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":      addr,
		"transactional.id":       id,
		"transaction.timeout.ms": 60_000,
		"linger.ms":              5,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	return p
}

// produceIn produces values to partition 0 of topic in p's open
// transaction and waits for their delivery.
func produceIn(t *testing.T, p *kafka.Producer, topic string, values ...string) {
	t.Helper()
	deliveries := make(chan kafka.Event, len(values))
	for _, v := range values {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: 0}, Value: []byte(v)}, deliveries); err != nil {
			t.Fatal(err)
		}
	}
	for range values {
		if m := (<-deliveries).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatalf("delivery: %v", m.TopicPartition.Error)
		}
	}
}

// readTopic reads partition 0 of topic from the start with isolation
// level iso up to an END record it produces first, outside any
// transaction, and returns the values before it other than ENDs.
func readTopic(t *testing.T, addr, topic, iso string) []string {
	t.Helper()
	mark := fmt.Sprintf("END-%d", time.Now().UnixNano())
	plain, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	done := make(chan kafka.Event, 1)
	if err := plain.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: 0}, Value: []byte(mark)}, done); err != nil {
		t.Fatal(err)
	}
	if m := (<-done).(*kafka.Message); m.TopicPartition.Error != nil {
		t.Fatal(m.TopicPartition.Error)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"group.id":           "reader-" + mark,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"isolation.level":    iso,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: ptr(topic), Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		switch v := string(m.Value); {
		case v == mark:
			return got
		case !strings.HasPrefix(v, "END-"):
			got = append(got, v)
		}
	}
	t.Fatalf("%s: no %s after %v", iso, mark, got)
	return nil
}

// librdkafka's transactional producer: commits, aborts, offsets sent in
// a transaction, and a broker SIGKILLed with a transaction open that the
// producer then commits.
func TestTxn_LibrdkafkaProducer(t *testing.T) {
	srv := launch(t, t.TempDir())
	const topic = "rdk-txn"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}); err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create topic: %v %v", err, res)
	}
	p := txnProducer(t, srv.Addr, "rdk")
	step := func(what string, values []string, commit bool, offset kafka.Offset) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("%s: begin: %v", what, err)
		}
		produceIn(t, p, topic, values...)
		if offset >= 0 {
			md, err := kafka.NewTestConsumerGroupMetadata("rdk-etl")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.SendOffsetsToTransaction(ctx, []kafka.TopicPartition{{Topic: ptr(topic), Partition: 0, Offset: offset}}, md); err != nil {
				t.Fatalf("%s: send offsets: %v", what, err)
			}
		}
		end := p.CommitTransaction
		if !commit {
			end = p.AbortTransaction
		}
		if err := end(ctx); err != nil {
			t.Fatalf("%s: end: %v", what, err)
		}
	}
	groupOffset := func() kafka.Offset {
		t.Helper()
		res, err := adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: "rdk-etl", Partitions: []kafka.TopicPartition{{Topic: ptr(topic), Partition: 0}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.ConsumerGroupsTopicPartitions[0].Partitions[0].Offset
	}
	step("a commit", []string{"c-0", "c-1"}, true, -1)
	step("an abort with offsets", []string{"a-0"}, false, 5)
	if o := groupOffset(); o >= 0 {
		t.Fatalf("the aborted transaction's offset reached the group: %v", o)
	}
	step("a commit with offsets", []string{"o-0"}, true, 3)
	if o := groupOffset(); o != 3 {
		t.Fatalf("the group's offset after the commit: %v, want 3", o)
	}

	// The broker is killed with a transaction open; the producer goes
	// on and commits it once the broker is back.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceIn(t, p, topic, "k-0")
	srv.Restart()
	produceIn(t, p, topic, "k-1")
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}

	if got, want := readTopic(t, srv.Addr, topic, "read_committed"), []string{"c-0", "c-1", "o-0", "k-0", "k-1"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %v, want %v", got, want)
	}
	if got, want := readTopic(t, srv.Addr, topic, "read_uncommitted"), []string{"c-0", "c-1", "a-0", "o-0", "k-0", "k-1"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %v, want %v", got, want)
	}
}

// A second librdkafka producer with the same transactional id fences the
// first: its commit fails as fenced, and read_committed never sees it.
func TestTxn_LibrdkafkaZombieFenced(t *testing.T) {
	addr := startServe(t)
	const topic = "rdk-zombie"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zombie := txnProducer(t, addr, "rdk-z")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceIn(t, zombie, topic, "zombie")
	fresh := txnProducer(t, addr, "rdk-z")
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceIn(t, fresh, topic, "fresh")
	if err := fresh.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	err := zombie.CommitTransaction(ctx)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if kerr, ok := err.(kafka.Error); !ok || !kerr.IsFatal() && kerr.Code() != kafka.ErrFenced && kerr.Code() != kafka.ErrProducerFenced && kerr.Code() != kafka.ErrInvalidProducerEpoch {
		t.Fatalf("the fenced producer's commit: %v", err)
	}
	if got := readTopic(t, addr, topic, "read_committed"); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("read_committed: %v", got)
	}
}
