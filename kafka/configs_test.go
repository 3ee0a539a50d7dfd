package kafka

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApplyConfigs(t *testing.T) {
	type cfg = passbook.TopicConfig
	for _, tc := range []struct {
		name, value string
		want        cfg
		bad         string // part of the error, naming the rule broken
	}{
		{"retention.ms", "-1", cfg{}, ""},
		{"retention.ms", "86400000", cfg{RetentionAge: 24 * time.Hour}, ""},
		{"retention.ms", "9223372036854775807", cfg{}, ""}, // Long.MAX: forever
		{"retention.ms", "0", cfg{RetentionAge: time.Millisecond}, ""},
		{"retention.ms", "-2", cfg{}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"retention.bytes", "-1", cfg{}, ""},
		{"retention.bytes", "-5", cfg{}, ""},
		{"retention.bytes", "1073741824", cfg{RetentionBytes: 1 << 30}, ""},
		{"retention.bytes", "0", cfg{RetentionBytes: 1}, ""},
		{"retention.bytes", "1k", cfg{}, "Not a number of type LONG"},
		{"segment.bytes", "1048576", cfg{SegmentBytes: 1 << 20}, ""},
		{"segment.bytes", "0", cfg{}, "Value must be at least 1"},
		{"segment.bytes", "4294967296", cfg{}, "Not a number of type INT"},
		{"segment.ms", "3600000", cfg{SegmentAge: time.Hour}, ""},
		{"segment.ms", "9223372036854775807", cfg{SegmentAge: time.Duration(maxMs) * time.Millisecond}, ""},
		{"max.message.bytes", "2000000", cfg{MaxMessageBytes: 2_000_000, MaxRecordBytes: 2_000_000}, ""},
		{"max.message.bytes", "100000", cfg{MaxMessageBytes: 100_000}, ""},
		{"max.message.bytes", "x", cfg{}, "Not a number of type INT"},
		{"cleanup.policy", "compact", cfg{CleanupPolicy: "compact"}, ""},
		{"cleanup.policy", "delete,compact", cfg{CleanupPolicy: "compact,delete"}, ""},
		{"cleanup.policy", " compact , delete ", cfg{CleanupPolicy: "compact,delete"}, ""},
		{"cleanup.policy", "compact,shred", cfg{}, "Invalid value shred"},
		{"cleanup.policy", "", cfg{}, "must not be empty"},
		{"compression.type", "zstd", cfg{Compression: "zstd"}, ""},
		{"compression.type", "brotli", cfg{}, "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"message.timestamp.type", "LogAppendTime", cfg{TimestampType: "LogAppendTime"}, ""},
		{"message.timestamp.type", "logappendtime", cfg{}, "String must be one of: CreateTime, LogAppendTime"},
		{"message.timestamp.before.max.ms", "86400000", cfg{TimestampBeforeMax: 24 * time.Hour}, ""},
		{"message.timestamp.before.max.ms", "9223372036854775807", cfg{TimestampBeforeMax: passbook.NoTimestampLimit}, ""},
		{"message.timestamp.before.max.ms", "0", cfg{TimestampBeforeMax: time.Millisecond}, ""},
		{"message.timestamp.after.max.ms", "60000", cfg{TimestampAfterMax: time.Minute}, ""},
		{"message.timestamp.after.max.ms", "-1", cfg{}, "Value must be at least 0"},
		{"min.cleanable.dirty.ratio", "0.01", cfg{MinCleanableDirtyRatio: 0.01}, ""},
		{"min.cleanable.dirty.ratio", "0", cfg{MinCleanableDirtyRatio: passbook.AnyDirtyRatio}, ""},
		{"min.cleanable.dirty.ratio", "1.5", cfg{}, "Value must be no more than 1"},
		{"delete.retention.ms", "100", cfg{DeleteRetention: 100 * time.Millisecond}, ""},
		{"min.compaction.lag.ms", "5000", cfg{MinCompactionLag: 5 * time.Second}, ""},
		{"max.compaction.lag.ms", "0", cfg{}, "Value must be at least 1"},
		{"max.compaction.lag.ms", "9223372036854775807", cfg{}, ""},
		{"min.insync.replicas", "2", cfg{Other: map[string]string{"min.insync.replicas": "2"}}, ""},
		{"min.insync.replicas", "0", cfg{}, "Value must be at least 1"},
		{"unclean.leader.election.enable", "TRUE", cfg{Other: map[string]string{"unclean.leader.election.enable": "TRUE"}}, ""},
		{"unclean.leader.election.enable", "yes", cfg{}, "Expected value to be either true or false"},
		{"leader.replication.throttled.replicas", "0:1,1:1", cfg{Other: map[string]string{"leader.replication.throttled.replicas": "0:1,1:1"}}, ""},
		{"leader.replication.throttled.replicas", "*", cfg{Other: map[string]string{"leader.replication.throttled.replicas": "*"}}, ""},
		{"leader.replication.throttled.replicas", "0-1", cfg{}, "[partitionId]:[brokerId]"},
		{"local.retention.ms", "-2", cfg{Other: map[string]string{"local.retention.ms": "-2"}}, ""},
		{"compression.gzip.level", "10", cfg{}, "between 1 and 9"},
		{"compression.zstd.level", "-5", cfg{Other: map[string]string{"compression.zstd.level": "-5"}}, ""},
		{"segment.index.bytes", "3", cfg{}, "Value must be at least 4"},
		{"no.such.config", "1", cfg{}, "Unknown topic config name: no.such.config"},
		{"flush.messages", "1", cfg{Durability: passbook.Fsync, Other: map[string]string{"flush.messages": "1"}}, ""},
		{"flush.messages", "1000", cfg{Other: map[string]string{"flush.messages": "1000"}}, ""},
		{"flush.ms", "0", cfg{Durability: passbook.Fsync, Other: map[string]string{"flush.ms": "0"}}, ""},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			var got cfg
			kv := kmsg.NewCreateTopicsRequestTopicConfig()
			kv.Name, kv.Value = tc.name, &tc.value
			err := applyConfigs(&got, []kmsg.CreateTopicsRequestTopicConfig{kv})
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) || !errors.Is(err, passbook.ErrInvalidConfig) {
					t.Fatalf("err %v, want ErrInvalidConfig saying %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestApplyConfigs_CompactionLagsConflict(t *testing.T) {
	var c passbook.TopicConfig
	lo, hi := "60000", "1000"
	kvs := []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.compaction.lag.ms", Value: &lo}, {Name: "max.compaction.lag.ms", Value: &hi}}
	if err := applyConfigs(&c, kvs); err == nil || !strings.Contains(err.Error(), "min.compaction.lag.ms (60000) > max.compaction.lag.ms (1000)") {
		t.Fatalf("err %v", err)
	}
}

func TestTopicConfigValue_Defaults(t *testing.T) {
	for _, k := range topicConfigs {
		v, isDefault := k.value(passbook.TopicConfig{})
		if !isDefault || v != k.def {
			t.Errorf("%s of a zero config: %q (default %v), want %q", k.name, v, isDefault, k.def)
		}
		if err := k.check(k.def); err != nil && k.def != "" {
			t.Errorf("%s: its default %q fails its own check: %v", k.name, k.def, err)
		}
	}
}

// Every config set and then reset reads as its default again.
func TestTopicConfig_Reset(t *testing.T) {
	for _, k := range topicConfigs {
		var c passbook.TopicConfig
		c.CleanupPolicy = passbook.CleanupDelete
		v := sampleValue(k)
		if err := k.apply(&c, &v); err != nil {
			t.Fatalf("%s=%s: %v", k.name, v, err)
		}
		if got, isDefault := k.value(c); isDefault && v != k.def {
			t.Errorf("%s=%s reads as the default %q", k.name, v, got)
		}
		k.reset(&c)
		if got, isDefault := k.value(c); !isDefault {
			t.Errorf("%s reset: %q, not the default", k.name, got)
		}
	}
}

// sampleValue is a valid value of k other than its default.
func sampleValue(k topicConfigKey) string {
	for _, v := range []string{"compact", "zstd", "LogAppendTime", "0.25", "2", "true", "false", "3", "5000", "0:1", "-1"} {
		if v != k.def && k.check(v) == nil && (k.name != "segment.bytes") {
			return v
		}
	}
	if k.name == "segment.bytes" {
		return "2097152"
	}
	return strings.Repeat("9", 3)
}
