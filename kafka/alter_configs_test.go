package kafka

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// configServer is a server over a data directory without a segment-size
// floor, so that tests make many small segments.
func configServer(t *testing.T, opts *Options) (*testServer, *kadm.Client) {
	t.Helper()
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, db, opts)
	return ts, kadm.NewClient(ts.client(t))
}

// describe returns a topic's configs by name: value and source.
func describe(t *testing.T, adm *kadm.Client, topic string) map[string]*kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]*kadm.Config{}
	for i := range rc.Configs {
		out[rc.Configs[i].Key] = &rc.Configs[i]
	}
	return out
}

func wantConfigs(t *testing.T, got map[string]*kadm.Config, want map[string]string) {
	t.Helper()
	for k, v := range want {
		c, ok := got[k]
		if !ok || c.MaybeValue() != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			if !ok {
				c = &kadm.Config{}
			}
			t.Errorf("%s = %q (source %v), want %q set for the topic", k, c.MaybeValue(), c.Source, v)
		}
	}
}

func TestCreateTopics_StreamsAndConnectConfigSets(t *testing.T) {
	_, adm := configServer(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		configs map[string]string
	}{
		// What Kafka Streams sets on a changelog and a repartition topic.
		{"app-store-changelog", map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime", "min.compaction.lag.ms": "0", "segment.bytes": "1048576"}},
		{"app-repartition", map[string]string{"cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "segment.bytes": "52428800", "retention.ms": "-1", "segment.ms": "600000"}},
		// What Connect sets on its config, offset and status topics.
		{"connect-offsets", map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2", "unclean.leader.election.enable": "false"}},
		{"connect-status", map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "604800000", "min.insync.replicas": "1", "preallocate": "false", "leader.replication.throttled.replicas": "*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]*string{}
			for k, v := range tc.configs {
				cfg[k] = kadm.StringPtr(v)
			}
			r, err := adm.CreateTopic(ctx, 1, -1, cfg, tc.name)
			if err == nil {
				err = r.Err
			}
			if err != nil {
				t.Fatalf("create: %v (%s)", err, r.ErrMessage)
			}
			got := describe(t, adm, tc.name)
			for k, v := range tc.configs {
				c := got[k]
				def, _ := findTopicConfig(k).value(passbook.TopicConfig{})
				if c.MaybeValue() != v && !(v == def && c.Source == kmsg.ConfigSourceDefaultConfig) {
					t.Errorf("%s = %q (source %v), want %q", k, c.MaybeValue(), c.Source, v)
				}
			}
			if len(got) != len(topicConfigs) {
				t.Errorf("described %d configs, want every one of %d", len(got), len(topicConfigs))
			}
		})
	}
}

func TestAlterConfigs_Topic(t *testing.T) {
	ts, adm := configServer(t, nil)
	ctx := context.Background()
	if r, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "retention.ms": kadm.StringPtr("3600000")}, "t"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}

	t.Run("incremental set keeps the rest", func(t *testing.T) {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("1000000")},
			{Op: kadm.SetConfig, Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr("0.1")},
		}, "t")
		if err != nil || rs[0].Err != nil {
			t.Fatalf("alter: %v %v", err, rs)
		}
		wantConfigs(t, describe(t, adm, "t"), map[string]string{"retention.bytes": "1000000", "retention.ms": "3600000", "min.insync.replicas": "2", "min.cleanable.dirty.ratio": "0.1"})
		if cfg := mustTopic(t, ts, "t").Config(); cfg.RetentionBytes != 1_000_000 || cfg.MinCleanableDirtyRatio != 0.1 {
			t.Fatalf("topic config %+v", cfg)
		}
	})
	t.Run("append and subtract a list", func(t *testing.T) {
		for _, step := range []struct {
			op   kadm.IncrementalOp
			v    string
			want string
		}{{kadm.AppendConfig, "compact", "compact,delete"}, {kadm.SubtractConfig, "delete", "compact"}, {kadm.AppendConfig, "delete", "compact,delete"}} {
			rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: step.op, Name: "cleanup.policy", Value: kadm.StringPtr(step.v)}}, "t")
			if err != nil || rs[0].Err != nil {
				t.Fatalf("%v %s: %v %v", step.op, step.v, err, rs)
			}
			if got := describe(t, adm, "t")["cleanup.policy"].MaybeValue(); got != step.want {
				t.Fatalf("after %v %s: cleanup.policy %q, want %q", step.op, step.v, got, step.want)
			}
		}
	})
	t.Run("a bad entry changes nothing", func(t *testing.T) {
		before := describe(t, adm, "t")
		for _, bad := range [][]kadm.AlterConfig{
			{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("60000")}, {Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("lots")}},
			{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("60000")}, {Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")}},
			{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}},
			{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: kadm.StringPtr("50000")}, {Op: kadm.SetConfig, Name: "max.compaction.lag.ms", Value: kadm.StringPtr("100")}},
		} {
			rs, err := adm.AlterTopicConfigs(ctx, bad, "t")
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(rs[0].Err, kerr.InvalidConfig) || rs[0].ErrMessage == "" {
				t.Fatalf("%v: %v %q, want INVALID_CONFIG with a message", bad, rs[0].Err, rs[0].ErrMessage)
			}
		}
		after := describe(t, adm, "t")
		for k, c := range before {
			if after[k].MaybeValue() != c.MaybeValue() {
				t.Errorf("%s changed from %q to %q by refused requests", k, c.MaybeValue(), after[k].MaybeValue())
			}
		}
	})
	t.Run("validate only", func(t *testing.T) {
		rs, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "t")
		if err != nil || rs[0].Err != nil {
			t.Fatalf("validate: %v %v", err, rs)
		}
		if got := describe(t, adm, "t")["retention.ms"].MaybeValue(); got != "3600000" {
			t.Fatalf("validate only changed retention.ms to %s", got)
		}
	})
	t.Run("legacy AlterConfigs replaces the whole set", func(t *testing.T) {
		rs, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, "t")
		if err != nil || rs[0].Err != nil {
			t.Fatalf("alter: %v %v", err, rs)
		}
		got := describe(t, adm, "t")
		wantConfigs(t, got, map[string]string{"retention.ms": "7200000"})
		for _, k := range []string{"min.insync.replicas", "retention.bytes", "cleanup.policy"} {
			if got[k].Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("%s = %q (source %v) after AlterConfigs without it, want the default", k, got[k].MaybeValue(), got[k].Source)
			}
		}
	})
	t.Run("unknown topic", func(t *testing.T) {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "nope")
		if err != nil || !errors.Is(rs[0].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("%v %v", err, rs)
		}
	})
}

func mustTopic(t *testing.T, ts *testServer, name string) *passbook.Topic {
	t.Helper()
	tp, err := ts.db.Topic(name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestAlterConfigs_RetentionAppliesLive(t *testing.T) {
	ts, adm := configServer(t, nil)
	ctx := context.Background()
	if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("4096")}, "logs"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	cl := ts.client(t, kgo.DefaultProduceTopic("logs"), kgo.ProducerLinger(0))
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte{byte(i)}, 200)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := mustTopic(t, ts, "logs").Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	segs := l.SegmentCount()
	if n, _ := l.Retain(); n != 0 || segs < 3 {
		t.Fatalf("%d segments; retention deleted %d with no limit", segs, n)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("0")}}, "logs")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	if n, err := l.Retain(); err != nil || n == 0 {
		t.Fatalf("retention after retention.bytes=0: %d segments deleted, %v", n, err)
	}
	if l.SegmentCount() != 1 || l.StartOffset() == 0 {
		t.Fatalf("after retention: %d bytes, start %d", l.Size(), l.StartOffset())
	}
	starts, err := adm.ListStartOffsets(ctx, "logs")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("logs", 0); o.Offset != l.StartOffset() {
		t.Fatalf("ListOffsets start %d, log start %d", o.Offset, l.StartOffset())
	}
}

func TestAlterConfigs_MaxMessageBytesLive(t *testing.T) {
	ts, adm := configServer(t, nil)
	ctx := context.Background()
	if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("4096")}, "big"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	value := bytes.Repeat([]byte("compressible "), 1000) // 13,000 bytes; a few hundred in zstd
	plain := ts.client(t, kgo.DefaultProduceTopic("big"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	zstd := ts.client(t, kgo.DefaultProduceTopic("big"), kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	if err := zstd.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatalf("a 13 KB record compressed under max.message.bytes=4096: %v", err)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("the same record uncompressed: %v, want MESSAGE_TOO_LARGE", err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("65536")}}, "big")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatalf("uncompressed after max.message.bytes=65536: %v", err)
	}
}

func TestCreateTopics_BrokerSideSettingsSeenByConsumer(t *testing.T) {
	ts, adm := configServer(t, nil)
	ctx := context.Background()
	for name, cfg := range map[string]map[string]*string{
		"stamped": {"message.timestamp.type": kadm.StringPtr("LogAppendTime")},
		"zstd":    {"compression.type": kadm.StringPtr("zstd")},
	} {
		if r, err := adm.CreateTopic(ctx, 1, 1, cfg, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	gzip := ts.client(t, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	plain := ts.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	long := time.UnixMilli(1_000_000_000_000) // 2001: far before now
	began := time.Now()
	for _, r := range []struct {
		cl  *kgo.Client
		rec *kgo.Record
	}{
		{gzip, &kgo.Record{Topic: "stamped", Value: []byte("a"), Timestamp: long}},
		{gzip, &kgo.Record{Topic: "zstd", Value: []byte(strings.Repeat("gzip sent ", 50))}},
		{plain, &kgo.Record{Topic: "zstd", Value: []byte(strings.Repeat("none sent ", 50))}},
	} {
		if err := r.cl.ProduceSync(ctx, r.rec).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", r.rec.Topic, err)
		}
	}
	cons := ts.client(t, kgo.ConsumeTopics("stamped", "zstd"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string][]*kgo.Record{}
	for len(got["stamped"])+len(got["zstd"]) < 3 {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cons.PollFetches(fctx)
		cancel()
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = append(got[r.Topic], r) })
	}
	st := got["stamped"][0]
	if st.Attrs.TimestampType() != 1 || st.Timestamp.Before(began.Add(-time.Second)) {
		t.Errorf("LogAppendTime topic: timestamp type %d, time %v; want 1 and the broker's time (after %v)", st.Attrs.TimestampType(), st.Timestamp, began)
	}
	// The produce response's log_append_time is the time stored in the
	// batch (kgo does not read it: a raw Produce asks).
	b, err := batch.Append(nil, []batch.Record{{Value: []byte("b"), Timestamp: long}}, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 12, -1, 10_000 // v12: by topic name
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "stamped"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, ts.client(t, kgo.MaxVersions(kversionsProduce12())))
	if err != nil {
		t.Fatal(err)
	}
	pr := resp.Topics[0].Partitions[0]
	if pr.ErrorCode != 0 {
		t.Fatalf("raw produce v%d: error %d %v", req.Version, pr.ErrorCode, pr.ErrorMessage)
	}
	stored, err := mustTopic(t, ts, "stamped").Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	var storedMs int64 = -2
	for rec, err := range stored.Records(pr.BaseOffset) {
		if err != nil {
			t.Fatal(err)
		}
		storedMs = rec.Timestamp.UnixMilli()
		break
	}
	if pr.ErrorCode != 0 || pr.LogAppendTime != storedMs || storedMs < began.UnixMilli()-1000 {
		t.Errorf("produce response: error %d, log_append_time %d; the stored record's time %d", pr.ErrorCode, pr.LogAppendTime, storedMs)
	}
	for _, r := range got["zstd"] {
		if r.Attrs.CompressionType() != 4 {
			t.Errorf("compression.type=zstd: record %q stored with codec %d, want zstd (4)", r.Value[:9], r.Attrs.CompressionType())
		}
	}
}

func TestDescribeConfigs_Broker(t *testing.T) {
	ts, adm := configServer(t, &Options{DefaultPartitions: 3, MaxConnections: 77})
	ctx := context.Background()
	rcs, err := adm.DescribeBrokerConfigs(ctx, NodeID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker: %+v", rcs)
	}
	got := map[string]*kadm.Config{}
	for i := range rcs[0].Configs {
		got[rcs[0].Configs[i].Key] = &rcs[0].Configs[i]
	}
	for _, w := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"num.partitions", "3", kmsg.ConfigSourceStaticBrokerConfig},
		{"max.connections", "77", kmsg.ConfigSourceStaticBrokerConfig},
		{"default.replication.factor", "1", kmsg.ConfigSourceDefaultConfig},
		{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
		{"auto.create.topics.enable", "true", kmsg.ConfigSourceDefaultConfig},
		{"log.retention.ms", "-1", kmsg.ConfigSourceDefaultConfig},
		{"connections.max.idle.ms", "600000", kmsg.ConfigSourceDefaultConfig},
	} {
		c, ok := got[w.name]
		if !ok {
			t.Errorf("%s not described", w.name)
			continue
		}
		if c.MaybeValue() != w.value || c.Source != w.source {
			t.Errorf("%s = %q (source %v), want %q (%v)", w.name, c.MaybeValue(), c.Source, w.value, w.source)
		}
	}
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.partitions", Value: kadm.StringPtr("5")}}, NodeID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !errors.Is(rs[0].Err, kerr.InvalidRequest) || !strings.Contains(rs[0].ErrMessage, "num.partitions") {
		t.Fatalf("alter broker: %+v, want INVALID_REQUEST naming the config", rs)
	}
	// Read-only, as every broker config here, and synonyms when asked.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "", []string{"num.partitions"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, ts.client(t))
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.Resources[0].Configs; len(cs) != 1 || !cs[0].ReadOnly || len(cs[0].ConfigSynonyms) != 1 || cs[0].ConfigSynonyms[0].Name != "num.partitions" {
		t.Fatalf("num.partitions of the cluster default: %+v", cs)
	}
}

// kversionsProduce12 caps Produce at v12, which names topics (v13 gives
// topic IDs).
func kversionsProduce12() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	return v
}

func TestAlterConfigs_BrokerTopicDefaults(t *testing.T) {
	ts, adm := configServer(t, nil)
	ctx := context.Background()
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}
	for _, bad := range []struct {
		alters []kadm.AlterConfig
		want   error
	}{
		{[]kadm.AlterConfig{set("log.retention.ms", "3600000"), set("num.partitions", "4")}, kerr.InvalidRequest},
		{[]kadm.AlterConfig{set("log.retention.ms", "soon")}, kerr.InvalidConfig},
	} {
		rs, err := adm.AlterBrokerConfigs(ctx, bad.alters, NodeID)
		if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, bad.want) {
			t.Fatalf("%v: %v %+v, want %v", bad.alters, err, rs, bad.want)
		}
	}
	if d := ts.db.SetTopicDefaults(); d.RetentionAge != 0 {
		t.Fatalf("refused requests set %+v", d)
	}
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", "3600000"), set("log.cleanup.policy", "compact")}, NodeID)
	if err != nil || len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("alter the broker: %v %+v", err, rs)
	}
	brs, err := adm.DescribeBrokerConfigs(ctx, NodeID)
	if err != nil || len(brs) != 1 {
		t.Fatalf("describe the broker: %v %+v", err, brs)
	}
	for _, c := range brs[0].Configs {
		switch c.Key {
		case "log.retention.ms", "log.cleanup.policy":
			if c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
				t.Errorf("%s = %q, source %v; want DYNAMIC_BROKER_CONFIG", c.Key, c.MaybeValue(), c.Source)
			}
		}
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "after"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if cfg := mustTopic(t, ts, "after").Config(); cfg.RetentionAge != time.Hour || cfg.CleanupPolicy != passbook.CleanupCompact {
		t.Fatalf("a topic created after the change: %+v", cfg)
	}
	// Deleting the dynamic config puts back the static default.
	if rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.cleanup.policy"}}, NodeID); err != nil || rs[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, rs)
	}
	if d := ts.db.DefaultTopicConfig(); d.CleanupPolicy == passbook.CleanupCompact || d.RetentionAge != time.Hour {
		t.Fatalf("after deleting log.cleanup.policy: %+v", d)
	}
}
