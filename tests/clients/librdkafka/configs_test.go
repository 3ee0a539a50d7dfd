package librdkafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// topicConfigs describes topic's configs through the AdminClient.
func topicConfigs(t *testing.T, adm *kafka.AdminClient, topic string) map[string]kafka.ConfigEntryResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("describe %s: %v", topic, rs)
	}
	return rs[0].Config
}

// TestConfigs_AdminClient: confluent-kafka-go's AdminClient against
// passbook serve creates topics with Kafka Streams' and Connect's config
// sets, describes them, changes them with AlterConfigs and
// IncrementalAlterConfigs (validate only, set, delete, append), is
// refused a bad value with nothing changed, and describes the broker.
func TestConfigs_AdminClient(t *testing.T) {
	addr := startServe(t, "--default-partitions", "2")
	adm := adminClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sets := map[string]map[string]string{
		"app-store-changelog": {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime", "segment.bytes": "1048576", "min.compaction.lag.ms": "1000"},
		"app-repartition":     {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800", "message.timestamp.type": "CreateTime"},
		"connect-configs":     {"cleanup.policy": "compact", "min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
	}
	var specs []kafka.TopicSpecification
	for name, cfg := range sets {
		specs = append(specs, kafka.TopicSpecification{Topic: name, NumPartitions: 1, ReplicationFactor: 1, Config: cfg})
	}
	specs = append(specs, kafka.TopicSpecification{Topic: "bad", NumPartitions: 1, ReplicationFactor: 1, Config: map[string]string{"retention.ms": "soon"}})
	rs, err := adm.CreateTopics(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		want := kafka.ErrNoError
		if r.Topic == "bad" {
			want = kafka.ErrInvalidConfig
		}
		if r.Error.Code() != want {
			t.Errorf("create %s: %v, want %v", r.Topic, r.Error, want)
		}
	}
	if r := rs[len(rs)-1]; !strings.Contains(r.Error.String(), "retention.ms") {
		t.Errorf("refused create says %q, not the key", r.Error)
	}
	for name, cfg := range sets {
		got := topicConfigs(t, adm, name)
		for k, v := range cfg {
			if e := got[k]; e.Value != v {
				t.Errorf("%s: %s = %q (source %v), want %q", name, k, e.Value, e.Source, v)
			}
		}
	}
	if e := topicConfigs(t, adm, "connect-configs")["min.insync.replicas"]; e.Source != kafka.ConfigSourceDynamicTopic || e.IsReadOnly {
		t.Errorf("min.insync.replicas: source %v, read-only %v; want set for the topic, writable", e.Source, e.IsReadOnly)
	}

	alter := func(incremental, validateOnly bool, entries ...kafka.ConfigEntry) kafka.ConfigResourceResult {
		t.Helper()
		res := []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: "app-repartition", Config: entries}}
		var rs []kafka.ConfigResourceResult
		var err error
		if incremental {
			rs, err = adm.IncrementalAlterConfigs(ctx, res, kafka.SetAdminValidateOnly(validateOnly))
		} else {
			rs, err = adm.AlterConfigs(ctx, res, kafka.SetAdminValidateOnly(validateOnly))
		}
		if err != nil || len(rs) != 1 {
			t.Fatalf("alter: %v %v", err, rs)
		}
		return rs[0]
	}
	set := func(k, v string) kafka.ConfigEntry {
		return kafka.ConfigEntry{Name: k, Value: v, IncrementalOperation: kafka.AlterConfigOpTypeSet}
	}

	if r := alter(true, true, set("retention.ms", "60000")); r.Error.Code() != kafka.ErrNoError {
		t.Fatalf("validate only: %v", r.Error)
	}
	if got := topicConfigs(t, adm, "app-repartition")["retention.ms"].Value; got != "-1" {
		t.Fatalf("validate only changed retention.ms to %s", got)
	}
	if r := alter(true, false, set("retention.ms", "60000"), set("max.message.bytes", "lots")); r.Error.Code() != kafka.ErrInvalidConfig {
		t.Fatalf("a bad entry: %v, want INVALID_CONFIG", r.Error)
	}
	if got := topicConfigs(t, adm, "app-repartition")["retention.ms"].Value; got != "-1" {
		t.Fatalf("a refused request changed retention.ms to %s", got)
	}
	if r := alter(true, false, set("retention.ms", "60000"),
		kafka.ConfigEntry{Name: "cleanup.policy", Value: "compact", IncrementalOperation: kafka.AlterConfigOpTypeAppend},
		kafka.ConfigEntry{Name: "segment.bytes", IncrementalOperation: kafka.AlterConfigOpTypeDelete}); r.Error.Code() != kafka.ErrNoError {
		t.Fatalf("incremental alter: %v", r.Error)
	}
	got := topicConfigs(t, adm, "app-repartition")
	if got["retention.ms"].Value != "60000" || got["cleanup.policy"].Value != "compact,delete" || got["segment.bytes"].Source != kafka.ConfigSourceDefault {
		t.Fatalf("after incremental alter: retention.ms %v, cleanup.policy %v, segment.bytes %v (%v)",
			got["retention.ms"], got["cleanup.policy"], got["segment.bytes"], got["segment.bytes"].Source)
	}
	// AlterConfigs replaces the whole set.
	if r := alter(false, false, kafka.ConfigEntry{Name: "retention.bytes", Value: "1048576", Operation: kafka.AlterOperationSet}); r.Error.Code() != kafka.ErrNoError {
		t.Fatalf("alter: %v", r.Error)
	}
	got = topicConfigs(t, adm, "app-repartition")
	if got["retention.bytes"].Value != "1048576" || got["retention.ms"].Source != kafka.ConfigSourceDefault || got["cleanup.policy"].Value != "delete" {
		t.Fatalf("after AlterConfigs: retention.bytes %v, retention.ms %v (%v), cleanup.policy %v", got["retention.bytes"], got["retention.ms"], got["retention.ms"].Source, got["cleanup.policy"])
	}

	// The broker.
	brs, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: "0"}})
	if err != nil || len(brs) != 1 || brs[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("describe broker: %v %v", err, brs)
	}
	if e := brs[0].Config["num.partitions"]; e.Value != "2" || e.Source != kafka.ConfigSourceStaticBroker || !e.IsReadOnly {
		t.Errorf("num.partitions: %q source %v read-only %v; want 2, static, read-only", e.Value, e.Source, e.IsReadOnly)
	}
	if e := brs[0].Config["message.max.bytes"]; e.Value != "1048588" || e.Source != kafka.ConfigSourceDefault {
		t.Errorf("message.max.bytes: %q source %v", e.Value, e.Source)
	}
	ars, err := adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: "0", Config: []kafka.ConfigEntry{set("num.partitions", "5")}}})
	if err != nil || len(ars) != 1 || ars[0].Error.Code() != kafka.ErrInvalidRequest {
		t.Fatalf("alter the broker: %v %v, want INVALID_REQUEST", err, ars)
	}
}
