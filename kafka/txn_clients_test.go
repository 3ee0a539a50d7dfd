package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readValues produces an END sentinel to partition 0 of topic, outside
// any transaction, and returns the values read with isolation iso before
// the first END.
func readValues(t *testing.T, ts *testServer, topic string, iso kgo.IsolationLevel) []string {
	t.Helper()
	// A sentinel after everything, outside any transaction.
	plain := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("END")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl := ts.client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v after %v", topic, ctx.Err(), out)
		}
		end := false
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "END" {
				end = true
			} else {
				out = append(out, string(r.Value))
			}
		})
		if end {
			return out
		}
	}
}

// sarama's transactional producer: a committed transaction is read by a
// read_committed reader, an aborted one only by a read_uncommitted one.
func TestTxn_SaramaProducer(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "sarama-txn", 1)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "sarama"
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(prefix string, n int, commit bool) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-txn", Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))}); err != nil {
				t.Fatal(err)
			}
		}
		end := prod.CommitTxn
		if !commit {
			end = prod.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
	}
	send("committed", 3, true)
	send("aborted", 2, false)
	send("again", 1, true)
	if got := fmt.Sprint(readValues(t, ts, "sarama-txn", kgo.ReadCommitted())); got != "[committed-0 committed-1 committed-2 again-0]" {
		t.Errorf("read_committed: %s", got)
	}
	if got := fmt.Sprint(readValues(t, ts, "sarama-txn", kgo.ReadUncommitted())); got != "[committed-0 committed-1 committed-2 aborted-0 aborted-1 again-0]" {
		t.Errorf("read_uncommitted: %s", got)
	}
}
