package kafka

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfigs are the Kafka topic configs that map onto a
// passbook.TopicConfig setting: CreateTopics accepts them and
// DescribeConfigs reports them. A zero setting means passbook's default,
// which is reported with its value and DEFAULT_CONFIG as the source.
var topicConfigs = []topicConfigKey{
	{
		name: "cleanup.policy", typ: kmsg.ConfigTypeList, def: passbook.CleanupDelete,
		doc: "delete (drop old segments by retention), compact, or compact,delete",
		get: func(c passbook.TopicConfig) string { return c.CleanupPolicy },
		set: func(c *passbook.TopicConfig, v string) error { c.CleanupPolicy = v; return nil },
	},
	{
		name: "retention.ms", typ: kmsg.ConfigTypeLong, def: "-1",
		doc: "delete segments whose newest record is older than this; -1 keeps them forever",
		get: func(c passbook.TopicConfig) string { return msOrForever(c.RetentionAge) },
		set: func(c *passbook.TopicConfig, v string) error {
			d, err := parseMsOrForever(v)
			c.RetentionAge = d
			return err
		},
	},
	{
		name: "retention.bytes", typ: kmsg.ConfigTypeLong, def: "-1",
		doc: "delete old segments once a partition holds more bytes than this; -1 means no limit",
		get: func(c passbook.TopicConfig) string { return bytesOrUnlimited(c.RetentionBytes) },
		set: func(c *passbook.TopicConfig, v string) error {
			n, err := parseInt(v, -1)
			if err == nil && n == 0 {
				return fmt.Errorf("0 would delete every closed segment; use -1 for no limit")
			}
			c.RetentionBytes = max(n, 0)
			return err
		},
	},
	{
		name: "segment.bytes", typ: kmsg.ConfigTypeInt, def: strconv.Itoa(128 << 20),
		doc: "roll the active segment at this size",
		get: func(c passbook.TopicConfig) string { return strconv.FormatInt(c.SegmentBytes, 10) },
		set: func(c *passbook.TopicConfig, v string) error {
			n, err := parseInt(v, 1)
			c.SegmentBytes = n
			return err
		},
	},
	{
		name: "segment.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10),
		doc: "roll a segment this old, by its first record",
		get: func(c passbook.TopicConfig) string { return strconv.FormatInt(c.SegmentAge.Milliseconds(), 10) },
		set: func(c *passbook.TopicConfig, v string) error {
			n, err := parseInt(v, 1)
			c.SegmentAge = time.Duration(min(n, maxMs)) * time.Millisecond
			return err
		},
	},
	{
		name: "message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt(math.MaxInt64, 10),
		doc: "refuse records stamped more than this before the broker's clock (INVALID_TIMESTAMP)",
		get: func(c passbook.TopicConfig) string { return timestampLimitString(c.TimestampBeforeMax) },
		set: func(c *passbook.TopicConfig, v string) error {
			d, err := parseTimestampLimit(v)
			c.TimestampBeforeMax = d
			return err
		},
	},
	{
		name: "message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt(time.Hour.Milliseconds(), 10),
		doc: "refuse records stamped more than this after the broker's clock (INVALID_TIMESTAMP)",
		get: func(c passbook.TopicConfig) string { return timestampLimitString(c.TimestampAfterMax) },
		set: func(c *passbook.TopicConfig, v string) error {
			d, err := parseTimestampLimit(v)
			c.TimestampAfterMax = d
			return err
		},
	},
	{
		name: "max.message.bytes", typ: kmsg.ConfigTypeInt, def: strconv.Itoa(1 << 20),
		doc: "the largest record (key, value and headers) accepted",
		get: func(c passbook.TopicConfig) string { return strconv.Itoa(c.MaxRecordBytes) },
		set: func(c *passbook.TopicConfig, v string) error {
			n, err := parseInt(v, 1)
			c.MaxRecordBytes = int(min(n, 1<<30))
			return err
		},
	},
}

type topicConfigKey struct {
	name string
	typ  kmsg.ConfigType
	def  string // the value a zero setting stands for
	doc  string
	get  func(passbook.TopicConfig) string
	set  func(*passbook.TopicConfig, string) error
}

// value is the setting's value as Kafka states it, and whether it is the
// default.
func (k *topicConfigKey) value(c passbook.TopicConfig) (string, bool) {
	v := k.get(c)
	if v == "0" || v == "" || v == k.def {
		return k.def, true
	}
	return v, false
}

func findTopicConfig(name string) *topicConfigKey {
	for i := range topicConfigs {
		if topicConfigs[i].name == name {
			return &topicConfigs[i]
		}
	}
	return nil
}

// applyConfigs sets the named Kafka configs on c.
func applyConfigs(c *passbook.TopicConfig, configs []kmsg.CreateTopicsRequestTopicConfig) error {
	for _, kv := range configs {
		k := findTopicConfig(kv.Name)
		if k == nil {
			return fmt.Errorf("%w: unknown topic config %q (passbook supports cleanup.policy, retention.ms, retention.bytes, segment.bytes, segment.ms, message.timestamp.before.max.ms, message.timestamp.after.max.ms, max.message.bytes)", passbook.ErrInvalidConfig, kv.Name)
		}
		if kv.Value == nil {
			continue // null: the default
		}
		if err := k.set(c, *kv.Value); err != nil {
			return fmt.Errorf("%w: %s=%q: %w", passbook.ErrInvalidConfig, kv.Name, *kv.Value, err)
		}
	}
	return nil
}

func msOrForever(d time.Duration) string {
	if d == 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

func bytesOrUnlimited(n int64) string {
	if n == 0 {
		return "-1"
	}
	return strconv.FormatInt(n, 10)
}

func parseMsOrForever(v string) (time.Duration, error) {
	n, err := parseInt(v, -1)
	if err != nil || n < 0 {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("0 would delete every segment at once; use -1 to keep records forever")
	}
	if n >= maxMs {
		return 0, nil // longer than a Duration holds: forever
	}
	return time.Duration(n) * time.Millisecond, nil
}

// timestampLimitString is a timestamp limit as Kafka states it: no limit
// is Long.MAX_VALUE.
func timestampLimitString(d time.Duration) string {
	return strconv.FormatInt(passbook.TimestampLimitMs(d), 10)
}

// parseTimestampLimit parses a timestamp limit of at least 1 ms; one
// longer than a time.Duration holds (Kafka's Long.MAX_VALUE) is no limit.
func parseTimestampLimit(v string) (time.Duration, error) {
	n, err := parseInt(v, 1)
	if err != nil {
		return 0, err
	}
	return passbook.TimestampLimit(n), nil
}

// maxMs is the longest time, in milliseconds, a time.Duration holds
// (about 292 years).
const maxMs = math.MaxInt64 / int64(time.Millisecond)

// parseInt parses a decimal integer of at least lo.
func parseInt(v string, lo int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo {
		return 0, fmt.Errorf("below %d", lo)
	}
	return n, nil
}
