package librdkafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestSmoke_ProduceConsume: librdkafka's idempotent producer writes
// 1,000 records, and a consumer group reads them back in order, once,
// with their offsets 0 … 999; a second run of the group starts after its
// committed offset.
func TestSmoke_ProduceConsume(t *testing.T) {
	addr := startServe(t)
	const topic, n = "smoke", 1000

	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"enable.idempotence": true,
		"linger.ms":          5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deliveries := make(chan kafka.Event, n)
	for i := range n {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: 0},
			Key:            fmt.Appendf(nil, "k%d", i),
			Value:          fmt.Appendf(nil, "v%d", i),
		}
		if err := p.Produce(msg, deliveries); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		m := (<-deliveries).(*kafka.Message)
		if m.TopicPartition.Error != nil {
			t.Fatalf("delivery %d: %v", i, m.TopicPartition.Error)
		}
	}

	got := consume(t, addr, "smoke-group", topic, n)
	for i, m := range got {
		if int(m.TopicPartition.Offset) != i || string(m.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d value %q", i, m.TopicPartition.Offset, m.Value)
		}
	}
	if more := consume(t, addr, "smoke-group", topic, 0); len(more) != 0 {
		t.Fatalf("the group read %d records again after committing them", len(more))
	}
}

// consume reads want records with a consumer in group, committing them
// synchronously, and returns them. With want 0 it reads for two seconds
// and returns whatever came.
func consume(t *testing.T, addr, group, topic string, want int) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"group.id":           group,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	var got []*kafka.Message
	deadline := time.Now().Add(30 * time.Second)
	if want == 0 {
		deadline = time.Now().Add(2 * time.Second)
	}
	for (want == 0 || len(got) < want) && time.Now().Before(deadline) {
		m, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if want > 0 && len(got) < want {
		t.Fatalf("read %d of %d records in 30 s", len(got), want)
	}
	if len(got) > 0 {
		if _, err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func ptr[T any](v T) *T { return &v }
