package kafka

import (
	"fmt"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicConfigEntry is one Kafka topic config of a topic, as
// DescribeConfigs reports it, for passbook topic config.
type TopicConfigEntry struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Default bool   `json:"default"` // false: set for the topic
	// NoEffect says the config means nothing on one broker (it is kept
	// and reported, and does nothing): docs/kafka.md says why.
	NoEffect bool `json:"no_effect,omitempty"`
}

// TopicConfigEntries is every Kafka topic config of cfg, by name.
func TopicConfigEntries(cfg passbook.TopicConfig) []TopicConfigEntry {
	out := make([]TopicConfigEntry, 0, len(topicConfigs))
	for i := range topicConfigs {
		k := &topicConfigs[i]
		v, isDefault := k.value(cfg)
		out = append(out, TopicConfigEntry{Name: k.name, Value: v, Default: isDefault, NoEffect: !k.honoured()})
	}
	return out
}

// TopicConfigNoEffect reports whether name is a Kafka topic config with
// no effect on one broker.
func TopicConfigNoEffect(name string) bool {
	k := findTopicConfig(name)
	return k != nil && !k.honoured()
}

// CheckTopicConfig says why value is not valid for the Kafka topic config
// name (or why name is not one), with Kafka's wording; nil when it is.
func CheckTopicConfig(name, value string) error {
	var c passbook.TopicConfig
	k := findTopicConfig(name)
	if k == nil {
		return unknownTopicConfig(name)
	}
	return k.apply(&c, &value)
}

// AlterTopicConfig sets the Kafka topic configs of set (by name) on cfg
// and puts those named in del back to their defaults, as
// IncrementalAlterConfigs does; for DB.AlterTopicConfig.
func AlterTopicConfig(cfg *passbook.TopicConfig, set map[string]string, del []string) error {
	var ops []configOp
	for _, name := range del {
		ops = append(ops, configOp{name: name, op: kmsg.IncrementalAlterConfigOpDelete})
	}
	for name, v := range set {
		ops = append(ops, configOp{name: name, value: &v, op: kmsg.IncrementalAlterConfigOpSet})
	}
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.name] {
			return fmt.Errorf("%w: %s is both set and deleted", passbook.ErrInvalidConfig, o.name)
		}
		seen[o.name] = true
	}
	return alterTopicConfig(cfg, ops, false)
}
