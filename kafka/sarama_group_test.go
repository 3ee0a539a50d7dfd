package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/passbook-log/passbook/offsets"
)

// saramaMember is one sarama consumer-group member: it records what it
// consumed and marks each message for sarama's commits.
type saramaMember struct {
	mu       sync.Mutex
	claims   []int32
	consumed map[[2]int64]int
	ready    chan struct{}
	once     sync.Once
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.claims = append([]int32(nil), s.Claims()["sarama-group"]...)
	m.mu.Unlock()
	if len(s.Claims()["sarama-group"]) > 0 {
		m.once.Do(func() { close(m.ready) })
	}
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		m.consumed[[2]int64{int64(msg.Partition), msg.Offset}]++
		m.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

// Two sarama consumer-group members split a 4-partition topic, consume
// every record once between them, and commit; the commits are the offset
// store's entries for the group.
func TestSarama_ConsumerGroup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version sarama.KafkaVersion
	}{
		{"default version", sarama.DefaultVersion},
		{"max version", sarama.MaxVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, &Options{GroupMinSessionTimeout: 100 * time.Millisecond})
			topic := ts.createTopic(t, "sarama-group", 4)
			cfg := sarama.NewConfig()
			cfg.Version = tc.version
			cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
			cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
			cfg.Consumer.Group.Session.Timeout = 2 * time.Second
			cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
			cfg.Consumer.Return.Errors = true

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var members []*saramaMember
			var wg sync.WaitGroup
			var groups []sarama.ConsumerGroup
			for range 2 {
				m := &saramaMember{consumed: map[[2]int64]int{}, ready: make(chan struct{})}
				members = append(members, m)
				g, err := sarama.NewConsumerGroup([]string{ts.addr}, "sarama-consumers", cfg)
				if err != nil {
					t.Fatal(err)
				}
				groups = append(groups, g)
				wg.Go(func() {
					for ctx.Err() == nil {
						if err := g.Consume(ctx, []string{"sarama-group"}, m); err != nil && ctx.Err() == nil {
							t.Errorf("consume: %v", err)
							return
						}
					}
				})
			}
			// Both members own partitions before any record arrives, so
			// that no rebalance moves a partition mid-way.
			for _, m := range members {
				select {
				case <-m.ready:
				case <-time.After(30 * time.Second):
					t.Fatal("a member got no partitions")
				}
			}
			for deadline := time.Now().Add(30 * time.Second); ; {
				n := 0
				for _, m := range members {
					m.mu.Lock()
					n += len(m.claims)
					m.mu.Unlock()
				}
				if n == 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("members claim %d of 4 partitions", n)
				}
				time.Sleep(20 * time.Millisecond)
			}
			const perPart = 250
			for p := range int32(4) {
				fill(t, topic, p, perPart)
			}
			seen := func() (n, dups int) {
				all := map[[2]int64]int{}
				for _, m := range members {
					m.mu.Lock()
					for k, v := range m.consumed {
						all[k] += v
					}
					m.mu.Unlock()
				}
				for _, v := range all {
					dups += v - 1
				}
				return len(all), dups
			}
			for deadline := time.Now().Add(60 * time.Second); ; {
				if n, _ := seen(); n == 4*perPart {
					break
				}
				if time.Now().After(deadline) {
					n, _ := seen()
					t.Fatalf("consumed %d of %d", n, 4*perPart)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			wg.Wait()
			for _, g := range groups {
				if err := g.Close(); err != nil { // commits what was marked
					t.Fatal(err)
				}
			}
			if _, dups := seen(); dups != 0 {
				t.Fatalf("%d records consumed twice", dups)
			}
			var claims []string
			for i, m := range members {
				claims = append(claims, fmt.Sprintf("member %d: %v", i, m.claims))
			}
			for p := range int32(4) {
				off, err := ts.db.Offsets().Committed(context.Background(), offsets.Key{Consumer: "sarama-consumers", Topic: "sarama-group", Partition: p})
				if err != nil || off != perPart {
					t.Fatalf("partition %d: committed %d, %v; want %d", p, off, err, perPart)
				}
			}
			t.Logf("sarama %s: %v; %d records consumed once; negotiated: %s", tc.version, claims, 4*perPart, ts.log)
		})
	}
}
