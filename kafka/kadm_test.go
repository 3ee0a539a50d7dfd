package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKadm_ListOffsets(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "times", 1)
	cl := ts.client(t, kgo.ProducerLinger(0))
	base := time.UnixMilli(1_700_000_000_000)
	// Ten records one second apart, each produced alone so that each is
	// its own batch and the time index sees every one.
	for i := range 10 {
		r := &kgo.Record{Topic: "times", Value: value(i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	check := func(name string, got kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ok := got.Lookup("times", 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Fatalf("%s: got %+v, want offset %d", name, o, want)
		}
	}
	got, err := adm.ListStartOffsets(ctx, "times")
	check("earliest", got, err, 0)
	got, err = adm.ListEndOffsets(ctx, "times")
	check("latest", got, err, 10)
	for _, tc := range []struct {
		ms   int64
		want int64
	}{
		{base.UnixMilli() - 1, 0},
		{base.UnixMilli(), 0},
		{base.UnixMilli() + 1, 1},
		{base.Add(4 * time.Second).UnixMilli(), 4},
		{base.Add(9 * time.Second).UnixMilli(), 9},
		{base.Add(time.Hour).UnixMilli(), 10}, // after every record: kadm asks again for the end
	} {
		got, err := adm.ListOffsetsAfterMilli(ctx, tc.ms, "times")
		check("after "+time.UnixMilli(tc.ms).UTC().Format(time.TimeOnly), got, err, tc.want)
	}
	got, err = adm.ListMaxTimestampOffsets(ctx, "times")
	check("max timestamp", got, err, 9)

	// The raw answer for a time after every record is -1, as Kafka's.
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "times"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = base.Add(time.Hour).UnixMilli()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := dialRaw(t, ts.addr).do(req).(*kmsg.ListOffsetsResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
		t.Fatalf("after the last record: %+v, want offset -1 timestamp -1", p)
	}
	t.Logf("franz-go negotiated: %s", ts.log)
}

func TestKadm_CreateDescribeDeleteTopics(t *testing.T) {
	ts := startServer(t, &Options{DefaultPartitions: 2})
	adm := kadm.NewClient(ts.client(t))
	ctx := context.Background()

	created, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{
		"retention.ms": kadm.StringPtr("3600000"), "cleanup.policy": kadm.StringPtr("delete"),
		"max.message.bytes": kadm.StringPtr("2000000"),
	}, "orders")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	topic, err := ts.db.Topic("orders")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := topic.Config(); cfg.Partitions != 4 || cfg.RetentionAge != time.Hour || cfg.MaxRecordBytes != 2_000_000 {
		t.Fatalf("created with %+v", cfg)
	}
	if created, err := adm.CreateTopic(ctx, -1, -1, nil, "defaulted"); err != nil || created.Err != nil {
		t.Fatalf("create with defaults: %v %v", err, created.Err)
	} else if created.NumPartitions != 2 {
		t.Fatalf("default partitions %d, want 2", created.NumPartitions)
	}

	for _, tc := range []struct {
		name, topic string
		partitions  int32
		replication int16
		configs     map[string]*string
		want        error
	}{
		{"exists", "orders", 1, 1, nil, kerr.TopicAlreadyExists},
		{"bad name", "no/slash", 1, 1, nil, kerr.InvalidTopicException},
		{"dot name", "..", 1, 1, nil, kerr.InvalidTopicException},
		{"replication 3", "r3", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"zero partitions", "p0", 0, 1, nil, kerr.InvalidPartitions},
		{"unknown config", "uc", 1, 1, map[string]*string{"min.insync.replica": kadm.StringPtr("2")}, kerr.InvalidConfig},
		{"bad config value", "bv", 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig},
		{"bad cleanup policy", "bp", 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("shred")}, kerr.InvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := adm.CreateTopic(ctx, tc.partitions, tc.replication, tc.configs, tc.topic)
			if err == nil {
				err = r.Err
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v (%s), want %v", err, r.ErrMessage, tc.want)
			}
		})
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe: %v %v", err, rc.Err)
	}
	want := map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"retention.ms":      {"3600000", kmsg.ConfigSourceDynamicTopicConfig},
		"max.message.bytes": {"2000000", kmsg.ConfigSourceDynamicTopicConfig},
		"cleanup.policy":    {"delete", kmsg.ConfigSourceDefaultConfig},
		"retention.bytes":   {"-1", kmsg.ConfigSourceDefaultConfig},
		"segment.bytes":     {"134217728", kmsg.ConfigSourceDefaultConfig},
	}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if c.Value == nil || *c.Value != w.value || c.Source != w.source {
				t.Errorf("%s = %v (source %v), want %s (source %v)", c.Key, c.MaybeValue(), c.Source, w.value, w.source)
			}
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("configs not described: %v", want)
	}
	if rcs, err := adm.DescribeTopicConfigs(ctx, "nope"); err == nil {
		if rc, _ := rcs.On("nope", nil); !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("describe unknown topic: %v", rc.Err)
		}
	}

	dels, err := adm.DeleteTopics(ctx, "orders", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if d := dels["orders"]; d.Err != nil {
		t.Fatalf("delete: %v", d.Err)
	}
	if d := dels["nope"]; !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete a missing topic: %v", d.Err)
	}
	if _, err := ts.db.Topic("orders"); err == nil {
		t.Fatal("topic still exists after delete")
	}
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := tds.Names(); len(names) != 1 || names[0] != "defaulted" {
		t.Fatalf("topics after delete: %v", names)
	}
	t.Logf("kadm negotiated: %s", ts.log)
}
