package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/kafka"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A Kafka consumer group's commits are entries of the offset store:
// `passbook lag` and `passbook offsets list` show the group like any
// embedded consumer.
func TestCLI_KafkaGroupInLagAndOffsets(t *testing.T) {
	data := t.TempDir()
	db, err := passbook.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		recs := make([]passbook.Record, 10)
		for i := range recs {
			recs[i].Value = fmt.Appendf(nil, "order-%d-%d", p, i)
		}
		if _, err := topic.AppendTo(p, recs, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := kafka.NewServer(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background(), ln)

	// A franz-go group consumes 7 records of partition 0 and all of
	// partition 1, and commits.
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.ConsumerGroup("kafka-billing"),
		kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keep []*kgo.Record
	for got := 0; got < 20; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 20", got)
		}
		for _, r := range fs.Records() {
			got++
			if r.Partition == 1 || r.Offset < 7 {
				keep = append(keep, r)
			}
		}
	}
	if err := cl.CommitRecords(ctx, keep...); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCLI(t, "", "--data", data, "lag")
	if code != 0 {
		t.Fatalf("lag: exit %d: %s", code, errOut)
	}
	for _, want := range [][]string{
		{"kafka-billing", "orders", "0", "7", "10", "3", "0"},
		{"kafka-billing", "orders", "1", "10", "10", "0", "0"},
	} {
		if !hasRow(out, want) {
			t.Errorf("lag does not show %v:\n%s", want, out)
		}
	}
	out, errOut, code = runCLI(t, "", "--data", data, "offsets", "list", "--consumer", "kafka-billing")
	if code != 0 {
		t.Fatalf("offsets list: exit %d: %s", code, errOut)
	}
	if !hasRow(out, []string{"kafka-billing", "orders", "0", "7"}) || !hasRow(out, []string{"kafka-billing", "orders", "1", "10"}) {
		t.Errorf("offsets list:\n%s", out)
	}
}

// hasRow reports whether a line of out starts with the fields want.
func hasRow(out string, want []string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(want) && strings.Join(f[:len(want)], " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}
