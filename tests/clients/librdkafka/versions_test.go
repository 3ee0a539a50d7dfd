package librdkafka

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// sentVersions collects, from librdkafka's protocol debug log ("Sent
// FetchRequest (v16, …)"), the highest version of each request it sent.
type sentVersions struct {
	mu  sync.Mutex
	max map[string]int
}

var sentRE = regexp.MustCompile(`Sent (\w+)Request \(v(\d+)`)

// collect reads logs until an event named "end".
func (s *sentVersions) collect(logs chan kafka.LogEvent) {
	for ev := range logs {
		if ev.Name == "end" {
			return
		}
		for _, m := range sentRE.FindAllStringSubmatch(ev.Message, -1) {
			v, _ := strconv.Atoi(m[2])
			s.mu.Lock()
			if old, ok := s.max[m[1]]; !ok || v > old {
				s.max[m[1]] = v
			}
			s.mu.Unlock()
		}
	}
}

func (s *sentVersions) get(api string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.max[api]
	return v, ok
}

// TestVersions_NewestNegotiated: the bundled librdkafka 2.11 sends the
// newest version it has of each API it uses — Fetch v16 (topics by ID),
// Metadata v13, Produce v10, OffsetCommit/OffsetFetch v9 … — and with
// them an idempotent producer writes and a consumer group reads back
// and commits.
func TestVersions_NewestNegotiated(t *testing.T) {
	addr := startServe(t)
	const topic, n = "versions", 500
	sent := &sentVersions{max: map[string]int{}}
	logs := make(chan kafka.LogEvent, 1024)
	done := make(chan struct{})
	go func() { sent.collect(logs); close(done) }()
	debug := kafka.ConfigMap{"debug": "protocol", "go.logs.channel.enable": true, "go.logs.channel": logs}

	pc := kafka.ConfigMap{"bootstrap.servers": addr, "enable.idempotence": true, "linger.ms": 5}
	for k, v := range debug {
		pc[k] = v
	}
	p, err := kafka.NewProducer(&pc)
	if err != nil {
		t.Fatal(err)
	}
	deliveries := make(chan kafka.Event, n)
	for i := range n {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: 0},
			Value:          fmt.Appendf(nil, "v%d", i),
		}
		if err := p.Produce(msg, deliveries); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if m := (<-deliveries).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatalf("delivery %d: %v", i, m.TopicPartition.Error)
		}
	}
	p.Close()

	cc := kafka.ConfigMap{"bootstrap.servers": addr, "group.id": "versions-group", "auto.offset.reset": "earliest", "enable.auto.commit": false}
	for k, v := range debug {
		cc[k] = v
	}
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; {
		m, err := c.ReadMessage(-1)
		if err != nil {
			t.Fatal(err)
		}
		if int(m.TopicPartition.Offset) != i || string(m.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d value %q", i, m.TopicPartition.Offset, m.Value)
		}
		i++
	}
	if _, err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	committed, err := c.Committed([]kafka.TopicPartition{{Topic: ptr(topic), Partition: 0}}, 10000)
	if err != nil || len(committed) != 1 || committed[0].Offset != n {
		t.Fatalf("committed %v (%v), want offset %d", committed, err, n)
	}
	c.Close()
	// Both clients are closed: what they logged is in the channel ahead
	// of this (the channel is never closed, as a client might still log).
	logs <- kafka.LogEvent{Name: "end"}
	<-done

	for api, want := range map[string]int{
		"Metadata":        13,
		"Produce":         10,
		"InitProducerId":  4,
		"Fetch":           16,
		"ListOffsets":     7,
		"FindCoordinator": 2,
		"OffsetFetch":     9,
		"OffsetCommit":    9,
	} {
		if got, ok := sent.get(api); !ok || got != want {
			t.Errorf("%s: librdkafka sent v%d (sent: %v), want v%d", api, got, ok, want)
		}
	}
}
