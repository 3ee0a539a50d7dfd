package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInput_Kafka is the Kafka protocol's column of the bad-input
// table in docs/reliability.md: every kind of bad input and the error
// code a client gets, on a connection that stays usable, with nothing
// written. (Requests the server cannot parse close the connection:
// TestBadInput_ConnectionClosed.)
func TestBadInput_Kafka(t *testing.T) {
	ts := startServer(t, &Options{DisableAutoCreateTopics: true})
	topic := ts.createTopic(t, "orders", 2)
	if _, err := ts.db.CreateTopic("small", passbook.TopicConfig{MaxRecordBytes: 100}); err != nil {
		t.Fatal(err)
	}
	l, _ := topic.Partition(0)
	valid := testBatch(t, 2, 10)
	rc := dialRaw(t, ts.addr)
	produce := func(acks int16, topic string, p int32, records []byte) int16 {
		resp := rc.do(produceRequest(7, acks, topic, p, records)).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	create := func(name string, partitions int32, configs map[string]string) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 4, 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		return rc.do(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	fetch := func(topic string, p int32, offset int64) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes = 11, 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	metadata := func(name string) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 7, true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		return rc.do(req).(*kmsg.MetadataResponse).Topics[0].ErrorCode
	}
	badCRC := append([]byte(nil), valid...)
	badCRC[len(badCRC)-1] ^= 0xff
	magic1 := append([]byte(nil), valid...)
	magic1[16] = 1
	for _, tc := range []struct {
		name string
		run  func() int16
		want *kerr.Error
	}{
		{"oversized/record", func() int16 { return produce(-1, "small", 0, testBatch(t, 1, 200)) }, kerr.MessageTooLarge},
		{"oversized/topic name", func() int16 { return create(strings.Repeat("a", 250), 1, nil) }, kerr.InvalidTopicException},
		{"malformed/crc", func() int16 { return produce(-1, "orders", 0, badCRC) }, kerr.CorruptMessage},
		{"malformed/truncated batch", func() int16 { return produce(-1, "orders", 0, valid[:len(valid)-3]) }, kerr.CorruptMessage},
		{"wrong type/magic 1", func() int16 { return produce(-1, "orders", 0, magic1) }, kerr.UnsupportedForMessageFormat},
		{"wrong type/config", func() int16 { return create("t1", 1, map[string]string{"retention.ms": "a week"}) }, kerr.InvalidConfig},
		{"wrong type/acks", func() int16 { return produce(2, "orders", 0, valid) }, kerr.InvalidRequiredAcks},
		{"out of range/fetch offset", func() int16 { return fetch("orders", 0, 99) }, kerr.OffsetOutOfRange},
		{"out of range/partition", func() int16 { return produce(-1, "orders", 7, valid) }, kerr.UnknownTopicOrPartition},
		{"out of range/partitions", func() int16 { return create("t2", 20_000, nil) }, kerr.InvalidPartitions},
		{"unknown name/produce", func() int16 { return produce(-1, "nope", 0, valid) }, kerr.UnknownTopicOrPartition},
		{"unknown name/fetch", func() int16 { return fetch("nope", 0, 0) }, kerr.UnknownTopicOrPartition},
		{"unknown name/config", func() int16 { return create("t3", 1, map[string]string{"colour": "blue"}) }, kerr.InvalidConfig},
		{"path-like/create", func() int16 { return create("../x", 1, nil) }, kerr.InvalidTopicException},
		{"path-like/metadata", func() int16 { return metadata("../x") }, kerr.InvalidTopicException},
		{"path-like/produce", func() int16 { return produce(-1, "../x", 0, valid) }, kerr.InvalidTopicException},
		{"empty/topic name", func() int16 { return create("", 1, nil) }, kerr.InvalidTopicException},
		{"empty/records", func() int16 { return produce(-1, "orders", 0, nil) }, kerr.CorruptMessage},
		{"unicode/topic name", func() int16 { return create("commandes-été", 1, nil) }, kerr.InvalidTopicException},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.run()
			if got != tc.want.Code {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(got), tc.want)
			}
			t.Logf("%v", kerr.ErrorForCode(got))
		})
	}
	// Unicode keys, values and headers are data: they come back as sent.
	t.Run("unicode/data", func(t *testing.T) {
		cl := ts.client(t, kgo.DefaultProduceTopic("orders"), kgo.ConsumeTopics("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		rec := &kgo.Record{Partition: 1, Key: []byte("clé"), Value: []byte("valeur-日本-🔑"), Headers: []kgo.RecordHeader{{Key: "en-tête", Value: []byte("ü")}}}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		got := consumeFromPartition(t, ts.addr, "orders", 1, 0)
		if string(got.Key) != "clé" || string(got.Value) != "valeur-日本-🔑" || got.Headers[0].Key != "en-tête" {
			t.Fatalf("read back %+v", got)
		}
	})
	if l.Head() != 0 || len(ts.db.Topics()) != 2 {
		t.Fatalf("head %d, %d topics after refused input", l.Head(), len(ts.db.Topics()))
	}
}

// consumeFromPartition reads one record of partition p from offset from.
func consumeFromPartition(t *testing.T, addr, topic string, p int32, from int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}
