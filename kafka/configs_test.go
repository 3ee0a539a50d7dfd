package kafka

import (
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApplyConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        passbook.TopicConfig
		bad         bool
	}{
		{"retention.ms", "-1", passbook.TopicConfig{}, false},
		{"retention.ms", "86400000", passbook.TopicConfig{RetentionAge: 24 * time.Hour}, false},
		{"retention.ms", "9223372036854775807", passbook.TopicConfig{}, false}, // Long.MAX: forever
		{"retention.ms", "0", passbook.TopicConfig{}, true},
		{"retention.ms", "-2", passbook.TopicConfig{}, true},
		{"retention.bytes", "-1", passbook.TopicConfig{}, false},
		{"retention.bytes", "1073741824", passbook.TopicConfig{RetentionBytes: 1 << 30}, false},
		{"retention.bytes", "0", passbook.TopicConfig{}, true},
		{"segment.bytes", "1048576", passbook.TopicConfig{SegmentBytes: 1 << 20}, false},
		{"segment.bytes", "0", passbook.TopicConfig{}, true},
		{"segment.ms", "3600000", passbook.TopicConfig{SegmentAge: time.Hour}, false},
		{"segment.ms", "9223372036854775807", passbook.TopicConfig{SegmentAge: time.Duration(maxMs) * time.Millisecond}, false},
		{"max.message.bytes", "2000000", passbook.TopicConfig{MaxRecordBytes: 2_000_000}, false},
		{"max.message.bytes", "x", passbook.TopicConfig{}, true},
		{"cleanup.policy", "compact", passbook.TopicConfig{CleanupPolicy: "compact"}, false},
		{"message.timestamp.before.max.ms", "86400000", passbook.TopicConfig{TimestampBeforeMax: 24 * time.Hour}, false},
		{"message.timestamp.before.max.ms", "9223372036854775807", passbook.TopicConfig{TimestampBeforeMax: passbook.NoTimestampLimit}, false},
		{"message.timestamp.before.max.ms", "0", passbook.TopicConfig{}, true},
		{"message.timestamp.after.max.ms", "60000", passbook.TopicConfig{TimestampAfterMax: time.Minute}, false},
		{"message.timestamp.after.max.ms", "9223372036854775807", passbook.TopicConfig{TimestampAfterMax: passbook.NoTimestampLimit}, false},
		{"message.timestamp.after.max.ms", "-1", passbook.TopicConfig{}, true},
		{"min.insync.replicas", "1", passbook.TopicConfig{}, true},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			var got passbook.TopicConfig
			kv := kmsg.NewCreateTopicsRequestTopicConfig()
			kv.Name, kv.Value = tc.name, &tc.value
			err := applyConfigs(&got, []kmsg.CreateTopicsRequestTopicConfig{kv})
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want error %v", err, tc.bad)
			}
			if !tc.bad && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTopicConfigValue_Defaults(t *testing.T) {
	for _, k := range topicConfigs {
		v, isDefault := k.value(passbook.TopicConfig{})
		if !isDefault || v != k.def {
			t.Errorf("%s of a zero config: %q (default %v), want %q", k.name, v, isDefault, k.def)
		}
	}
}
