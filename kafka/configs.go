package kafka

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfigs are every topic config Kafka 4 defines (its LogConfig),
// with Kafka's types and validators. CreateTopics, AlterConfigs and
// IncrementalAlterConfigs accept them, DescribeConfigs reports them, and
// docs/kafka.md's table of configs is generated from this list
// (TestDocs_Tables). The honoured ones map onto a passbook.TopicConfig
// setting; the others have no meaning on one broker and are kept in
// TopicConfig.Other, stored with the topic and reported as set.
var topicConfigs = []topicConfigKey{
	{
		name: "cleanup.policy", typ: kmsg.ConfigTypeList, def: passbook.CleanupDelete, synonym: "log.cleanup.policy",
		check: listIn("compact", "delete"), rule: "a list of compact, delete",
		effect: "delete: retention deletes old segments; compact: a cleaner keeps each key's newest record (and retention is off, as in Kafka); both, in any order: both",
		get:    func(c passbook.TopicConfig) string { return c.CleanupPolicy },
		set: func(c *passbook.TopicConfig, v string) {
			var compact, del bool
			for _, p := range splitList(v) {
				compact, del = compact || p == "compact", del || p == "delete"
			}
			switch {
			case compact && del:
				c.CleanupPolicy = passbook.CleanupCompactDelete
			case compact:
				c.CleanupPolicy = passbook.CleanupCompact
			default:
				c.CleanupPolicy = passbook.CleanupDelete
			}
		},
	},
	{
		name: "compression.type", typ: kmsg.ConfigTypeString, def: passbook.CompressionProducer, synonym: "compression.type",
		check: stringIn("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), rule: "uncompressed, zstd, lz4, snappy, gzip or producer",
		effect: "producer keeps each batch as sent; a codec name stores that codec, recompressing a batch sent in another",
		get:    func(c passbook.TopicConfig) string { return c.Compression },
		set:    func(c *passbook.TopicConfig, v string) { c.Compression = v },
	},
	other("compression.gzip.level", kmsg.ConfigTypeInt, "-1", "compression.gzip.level", gzipLevel, "-1 or [1, 9]",
		"no effect: passbook compresses at each codec's default level (gzip's, lz4's, zstd's 3)"),
	other("compression.lz4.level", kmsg.ConfigTypeInt, "9", "compression.lz4.level", intBetween(1, 17), "[1, 17]",
		"no effect: passbook compresses at each codec's default level"),
	other("compression.zstd.level", kmsg.ConfigTypeInt, "3", "compression.zstd.level", intBetween(-131072, 22), "[-131072, 22]",
		"no effect: passbook compresses at each codec's default level"),
	{
		name: "delete.retention.ms", typ: kmsg.ConfigTypeLong, def: "86400000", synonym: "log.cleaner.delete.retention.ms",
		check: longAtLeast(0), rule: "[0, ...]",
		effect: "a tombstone stays this long on a compacted topic after the cleaner first saw it (0 is taken as 1 ms)",
		get:    func(c passbook.TopicConfig) string { return msString(c.DeleteRetention) },
		set: func(c *passbook.TopicConfig, v string) {
			c.DeleteRetention = msDuration(max(mustLong(v), 1))
		},
	},
	other("file.delete.delay.ms", kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms", longAtLeast(0), "[0, ...]",
		"no effect: a deleted segment's files go when its last reader lets go of them (readers pin segments), so no delay is needed for reads in flight"),
	other("flush.messages", kmsg.ConfigTypeLong, strconv.FormatInt(math.MaxInt64, 10), "log.flush.interval.messages", longAtLeast(1), "[1, ...]",
		"at creation, 1 (fsync every message) makes the topic's durability fsync: every append fsync'd before it is acknowledged (group commit); any other value, or a later change, has no effect: fsync is the topic's durability (passbook topic create --durability)"),
	other("flush.ms", kmsg.ConfigTypeLong, strconv.FormatInt(math.MaxInt64, 10), "log.flush.interval.ms", longAtLeast(0), "[0, ...]",
		"at creation, 0 makes the topic's durability fsync, as flush.messages=1 does; any other value, or a later change, has no effect"),
	other("follower.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", throttledReplicas, "* or a list of partition:broker",
		"no effect: one broker has no followers to throttle"),
	other("index.interval.bytes", kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes", intBetween(0, math.MaxInt32), "[0, ...]",
		"no effect: the sparse index interval is fixed when a partition opens (4 KiB)"),
	other("leader.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", throttledReplicas, "* or a list of partition:broker",
		"no effect: one broker replicates to no one"),
	other("local.retention.bytes", kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes", longAtLeast(-2), "[-2, ...]",
		"no effect: no tiered storage; retention.bytes applies"),
	other("local.retention.ms", kmsg.ConfigTypeLong, "-2", "log.local.retention.ms", longAtLeast(-2), "[-2, ...]",
		"no effect: no tiered storage; retention.ms applies"),
	{
		name: "max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt(math.MaxInt64, 10), synonym: "log.cleaner.max.compaction.lag.ms",
		check: longAtLeast(1), rule: "[1, ...]",
		effect: "the cleaner cleans a dirty segment older than this whatever the dirty ratio, and a compacted topic's active segment rolls at this age",
		get:    func(c passbook.TopicConfig) string { return msOrMax(c.MaxCompactionLag) },
		set:    func(c *passbook.TopicConfig, v string) { c.MaxCompactionLag = msOrNone(mustLong(v)) },
	},
	{
		name: "max.message.bytes", typ: kmsg.ConfigTypeInt, def: strconv.Itoa(passbook.DefaultMaxMessageBytes), synonym: "message.max.bytes",
		check: intBetween(0, 1<<30), rule: "[0, 1073741824]",
		effect: "the largest batch a producer may append, on its stored (compressed) size, as sent and after a recompression (MESSAGE_TOO_LARGE); raises the record limit to match",
		get:    func(c passbook.TopicConfig) string { return strconv.Itoa(c.EffectiveMaxMessageBytes()) },
		isDef:  func(c passbook.TopicConfig) bool { return c.MaxMessageBytes == 0 },
		set: func(c *passbook.TopicConfig, v string) {
			n := max(int(mustLong(v)), 1)
			c.MaxMessageBytes = n
			if rec := c.MaxRecordBytes; rec == 0 && n > 1<<20 || rec > 0 && n > rec {
				c.MaxRecordBytes = min(n, passbook.MaxMaxRecordBytes)
			}
		},
	},
	other("message.downconversion.enable", kmsg.ConfigTypeBoolean, "true", "log.message.downconversion.enable", boolean, "true or false",
		"no effect: removed in Kafka 4, accepted for older tools; passbook serves only record batch v2"),
	{
		name: "message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt(time.Hour.Milliseconds(), 10), synonym: "log.message.timestamp.after.max.ms",
		check: longAtLeast(0), rule: "[0, ...]",
		effect: "a record stamped further ahead of the broker's clock is refused (INVALID_TIMESTAMP); 0 is taken as 1 ms",
		get:    func(c passbook.TopicConfig) string { return timestampLimitString(c.TimestampAfterMax) },
		set: func(c *passbook.TopicConfig, v string) {
			c.TimestampAfterMax = passbook.TimestampLimit(max(mustLong(v), 1))
		},
	},
	{
		name: "message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt(math.MaxInt64, 10), synonym: "log.message.timestamp.before.max.ms",
		check: longAtLeast(0), rule: "[0, ...]",
		effect: "a record stamped further behind the broker's clock is refused (INVALID_TIMESTAMP); 0 is taken as 1 ms",
		get:    func(c passbook.TopicConfig) string { return timestampLimitString(c.TimestampBeforeMax) },
		set: func(c *passbook.TopicConfig, v string) {
			c.TimestampBeforeMax = passbook.TimestampLimit(max(mustLong(v), 1))
		},
	},
	{
		name: "message.timestamp.type", typ: kmsg.ConfigTypeString, def: passbook.CreateTime, synonym: "log.message.timestamp.type",
		check: stringIn(passbook.CreateTime, passbook.LogAppendTime), rule: "CreateTime or LogAppendTime",
		effect: "LogAppendTime: the broker stamps each batch with its clock (max timestamp and attribute bit; the produce response's log_append_time)",
		get:    func(c passbook.TopicConfig) string { return c.TimestampType },
		set:    func(c *passbook.TopicConfig, v string) { c.TimestampType = v },
	},
	{
		name: "min.cleanable.dirty.ratio", typ: kmsg.ConfigTypeDouble, def: "0.5", synonym: "log.cleaner.min.cleanable.ratio",
		check: doubleBetween(0, 1), rule: "[0, 1]",
		effect: "the background cleaner runs once this share of a compacted partition's closed segments is dirty",
		get: func(c passbook.TopicConfig) string {
			if c.MinCleanableDirtyRatio < 0 {
				return "0.0"
			}
			return strconv.FormatFloat(c.MinCleanableDirtyRatio, 'f', -1, 64)
		},
		set: func(c *passbook.TopicConfig, v string) {
			if r, _ := strconv.ParseFloat(strings.TrimSpace(v), 64); r == 0 {
				c.MinCleanableDirtyRatio = passbook.AnyDirtyRatio
			} else {
				c.MinCleanableDirtyRatio = r
			}
		},
	},
	{
		name: "min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: "0", synonym: "log.cleaner.min.compaction.lag.ms",
		check: longAtLeast(0), rule: "[0, ...]",
		effect: "the cleaner leaves alone records younger than this (by their segment's newest timestamp)",
		get:    func(c passbook.TopicConfig) string { return msString(c.MinCompactionLag) },
		set:    func(c *passbook.TopicConfig, v string) { c.MinCompactionLag = msDuration(mustLong(v)) },
	},
	other("min.insync.replicas", kmsg.ConfigTypeInt, "1", "min.insync.replicas", intBetween(1, math.MaxInt32), "[1, ...]",
		"no effect: the one broker is every in-sync replica; acks=all waits for the topic's durability"),
	other("preallocate", kmsg.ConfigTypeBoolean, "false", "log.preallocate", boolean, "true or false",
		"no effect: segments grow as written"),
	other("remote.log.copy.disable", kmsg.ConfigTypeBoolean, "false", "", boolean, "true or false",
		"no effect: no tiered storage"),
	other("remote.log.delete.on.disable", kmsg.ConfigTypeBoolean, "false", "", boolean, "true or false",
		"no effect: no tiered storage"),
	other("remote.storage.enable", kmsg.ConfigTypeBoolean, "false", "", boolean, "true or false",
		"no effect: no tiered storage; every segment stays local"),
	{
		name: "retention.bytes", typ: kmsg.ConfigTypeLong, def: "-1", synonym: "log.retention.bytes",
		check: longAny, rule: "any; negative for no limit",
		effect: "old segments are deleted once a partition holds more than this (0 keeps only the active segment)",
		get:    func(c passbook.TopicConfig) string { return bytesOrUnlimited(c.RetentionBytes) },
		set: func(c *passbook.TopicConfig, v string) {
			n := mustLong(v)
			switch {
			case n < 0:
				c.RetentionBytes = 0
			case n == 0:
				c.RetentionBytes = 1 // passbook's zero is no limit; 1 byte keeps only the active segment, as Kafka's 0
			default:
				c.RetentionBytes = n
			}
		},
	},
	{
		name: "retention.ms", typ: kmsg.ConfigTypeLong, def: "-1", synonym: "log.retention.ms",
		check: longAtLeast(-1), rule: "[-1, ...]",
		effect: "segments whose newest record is older than this are deleted; -1 keeps them forever (passbook's default; 0 is taken as 1 ms)",
		get:    func(c passbook.TopicConfig) string { return msOrForever(c.RetentionAge) },
		set: func(c *passbook.TopicConfig, v string) {
			if n := mustLong(v); n < 0 {
				c.RetentionAge = 0
			} else {
				c.RetentionAge = msOrNone(max(n, 1))
			}
		},
	},
	{
		name: "segment.bytes", typ: kmsg.ConfigTypeInt, def: strconv.Itoa(128 << 20), synonym: "log.segment.bytes",
		check: intBetween(1, math.MaxInt32), rule: "[1048576, ...] (Kafka 4's floor; at most 2 GiB)",
		effect: "the active segment rolls at this size",
		get:    func(c passbook.TopicConfig) string { return strconv.FormatInt(c.SegmentBytes, 10) },
		set:    func(c *passbook.TopicConfig, v string) { c.SegmentBytes = mustLong(v) },
	},
	other("segment.index.bytes", kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes", intBetween(4, math.MaxInt32), "[4, ...]",
		"no effect: a segment's index grows with it; segment.bytes bounds both"),
	other("segment.jitter.ms", kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms", longAtLeast(0), "[0, ...]",
		"no effect: with one broker's partitions, rolls need no spreading"),
	{
		name: "segment.ms", typ: kmsg.ConfigTypeLong, def: strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10), synonym: "log.roll.ms",
		check: longAtLeast(1), rule: "[1, ...]",
		effect: "the active segment rolls at this age, by its first record",
		get:    func(c passbook.TopicConfig) string { return strconv.FormatInt(c.SegmentAge.Milliseconds(), 10) },
		set:    func(c *passbook.TopicConfig, v string) { c.SegmentAge = msDuration(mustLong(v)) },
	},
	other("unclean.leader.election.enable", kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable", boolean, "true or false",
		"no effect: one broker has no other replica to elect"),
}

// topicConfigKey is one Kafka topic config.
type topicConfigKey struct {
	name    string
	typ     kmsg.ConfigType
	def     string // the value a default setting is reported as
	synonym string // the broker config that sets its default in Kafka, if any
	check   func(v string) error
	rule    string // the valid values, for docs/kafka.md
	effect  string // what it does here, or why it does nothing
	// get and set map an honoured config onto its TopicConfig setting;
	// set runs only on a value check accepted. Configs without them are
	// kept in TopicConfig.Other.
	get   func(passbook.TopicConfig) string
	set   func(*passbook.TopicConfig, string)
	isDef func(passbook.TopicConfig) bool // when the default is not get's "" or "0"
}

// other is a config with no effect on one broker, kept as set.
func other(name string, typ kmsg.ConfigType, def, synonym string, check func(string) error, rule, effect string) topicConfigKey {
	return topicConfigKey{name: name, typ: typ, def: def, synonym: synonym, check: check, rule: rule, effect: effect}
}

// honoured reports whether the engine acts on the config.
func (k *topicConfigKey) honoured() bool { return k.set != nil }

// value is the config's value as Kafka states it, and whether it is the
// default.
func (k *topicConfigKey) value(c passbook.TopicConfig) (string, bool) {
	if !k.honoured() {
		if v, ok := c.Other[k.name]; ok {
			return v, false
		}
		return k.def, true
	}
	v := k.get(c)
	if k.isDef != nil {
		return v, k.isDef(c)
	}
	if v == "0" || v == "" || v == k.def {
		return k.def, true
	}
	return v, false
}

// apply sets the config to v on c, or says why v is not valid. A nil v
// puts back the default.
func (k *topicConfigKey) apply(c *passbook.TopicConfig, v *string) error {
	if v == nil {
		k.reset(c)
		return nil
	}
	if err := k.check(*v); err != nil {
		return fmt.Errorf("%w: Invalid value %s for configuration %s: %s", passbook.ErrInvalidConfig, *v, k.name, err)
	}
	if !k.honoured() {
		if c.Other == nil {
			c.Other = map[string]string{}
		}
		c.Other[k.name] = *v
		return nil
	}
	k.set(c, *v)
	return nil
}

// reset puts back the config's default.
func (k *topicConfigKey) reset(c *passbook.TopicConfig) {
	if !k.honoured() {
		delete(c.Other, k.name)
		return
	}
	var zero passbook.TopicConfig
	switch k.name { // the setting's zero value is its default
	case "cleanup.policy":
		c.CleanupPolicy = passbook.CleanupDelete
	case "compression.type":
		c.Compression = zero.Compression
	case "delete.retention.ms":
		c.DeleteRetention = 0
	case "max.compaction.lag.ms":
		c.MaxCompactionLag = 0
	case "max.message.bytes":
		c.MaxMessageBytes = 0
	case "message.timestamp.after.max.ms":
		c.TimestampAfterMax = 0
	case "message.timestamp.before.max.ms":
		c.TimestampBeforeMax = 0
	case "message.timestamp.type":
		c.TimestampType = ""
	case "min.cleanable.dirty.ratio":
		c.MinCleanableDirtyRatio = 0
	case "min.compaction.lag.ms":
		c.MinCompactionLag = 0
	case "retention.bytes":
		c.RetentionBytes = 0
	case "retention.ms":
		c.RetentionAge = 0
	case "segment.bytes":
		c.SegmentBytes = 0
	case "segment.ms":
		c.SegmentAge = 0
	default:
		panic("kafka: no default for honoured topic config " + k.name)
	}
}

func findTopicConfig(name string) *topicConfigKey {
	for i := range topicConfigs {
		if topicConfigs[i].name == name {
			return &topicConfigs[i]
		}
	}
	return nil
}

// unknownTopicConfig is Kafka's error for a name it does not define.
func unknownTopicConfig(name string) error {
	return fmt.Errorf("%w: Unknown topic config name: %s", passbook.ErrInvalidConfig, name)
}

// applyConfigs sets the named Kafka configs on c (CreateTopics).
func applyConfigs(c *passbook.TopicConfig, configs []kmsg.CreateTopicsRequestTopicConfig) error {
	for _, kv := range configs {
		k := findTopicConfig(kv.Name)
		if k == nil {
			return unknownTopicConfig(kv.Name)
		}
		if err := k.apply(c, kv.Value); err != nil {
			return err
		}
	}
	if c.Other["flush.messages"] == "1" || strings.TrimSpace(c.Other["flush.ms"]) == "0" {
		// Kafka's way to ask for an fsync per message: passbook's
		// durability fsync does that (with group commit).
		c.Durability = passbook.Fsync
	}
	return checkCompactionLags(*c)
}

// checkCompactionLags is Kafka's LogConfig.validateValues.
func checkCompactionLags(c passbook.TopicConfig) error {
	if c.MaxCompactionLag > 0 && c.MinCompactionLag > c.MaxCompactionLag {
		return fmt.Errorf("%w: conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)",
			passbook.ErrInvalidConfig, c.MinCompactionLag.Milliseconds(), c.MaxCompactionLag.Milliseconds())
	}
	return nil
}

// The validators: each returns Kafka's wording of the rule a value broke.

// ruleError is a broken rule in Kafka's words, capitalized as Kafka
// writes them: clients show them after "Invalid value X for
// configuration Y: ".
type ruleError string

func (e ruleError) Error() string { return string(e) }

func ruleErr(format string, args ...any) error { return ruleError(fmt.Sprintf(format, args...)) }

func parseLong(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, ruleErr("Not a number of type LONG")
	}
	return n, nil
}

func mustLong(v string) int64 { n, _ := parseLong(v); return n }

func longAny(v string) error { _, err := parseLong(v); return err }

func longAtLeast(lo int64) func(string) error {
	return func(v string) error {
		n, err := parseLong(v)
		if err != nil {
			return err
		}
		if n < lo {
			return ruleErr("Value must be at least %d", lo)
		}
		return nil
	}
}

func intBetween(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return ruleErr("Not a number of type INT")
		}
		if n < lo {
			return ruleErr("Value must be at least %d", lo)
		}
		if n > hi {
			return ruleErr("Value must be no more than %d", hi)
		}
		return nil
	}
}

func gzipLevel(v string) error {
	if err := intBetween(math.MinInt32, math.MaxInt32)(v); err != nil {
		return err
	}
	if n := mustLong(v); n != -1 && (n < 1 || n > 9) {
		return ruleErr("Value must be between 1 and 9, or -1 for the default")
	}
	return nil
}

func doubleBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			return ruleErr("Not a number of type DOUBLE")
		}
		if f < lo {
			return ruleErr("Value must be at least %v", lo)
		}
		if f > hi {
			return ruleErr("Value must be no more than %v", hi)
		}
		return nil
	}
}

func boolean(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false":
		return nil
	}
	return ruleErr("Expected value to be either true or false")
}

func stringIn(valid ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(valid, v) {
			return nil
		}
		return ruleErr("String must be one of: %s", strings.Join(valid, ", "))
	}
}

// splitList splits a Kafka LIST value: comma-separated, spaces trimmed.
func splitList(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func listIn(valid ...string) func(string) error {
	return func(v string) error {
		items := splitList(v)
		if len(items) == 0 {
			return ruleErr("Configuration must not be empty; valid values are: %s", strings.Join(valid, ", "))
		}
		for _, p := range items {
			if !slices.Contains(valid, p) {
				return ruleErr("Invalid value %s; valid values are: %s", p, strings.Join(valid, ", "))
			}
		}
		return nil
	}
}

// throttledReplicas is Kafka's ThrottledReplicaListValidator: empty, *,
// or partition:broker pairs.
func throttledReplicas(v string) error {
	items := splitList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, p := range items {
		a, b, ok := strings.Cut(p, ":")
		_, errA := strconv.ParseInt(strings.TrimSpace(a), 10, 32)
		_, errB := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || errA != nil || errB != nil {
			return ruleErr("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
	}
	return nil
}

// Value formatting and parsing.

func msString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func msDuration(ms int64) time.Duration { return time.Duration(min(ms, maxMs)) * time.Millisecond }

// msOrNone is ms as a Duration; one longer than a Duration holds (such as
// Kafka's Long.MAX_VALUE) is zero, passbook's none.
func msOrNone(ms int64) time.Duration {
	if ms >= maxMs {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// msOrMax is a limit whose none is Kafka's Long.MAX_VALUE.
func msOrMax(d time.Duration) string {
	if d == 0 {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return msString(d)
}

func msOrForever(d time.Duration) string {
	if d == 0 {
		return "-1"
	}
	return msString(d)
}

func bytesOrUnlimited(n int64) string {
	if n == 0 {
		return "-1"
	}
	return strconv.FormatInt(n, 10)
}

// timestampLimitString is a timestamp limit as Kafka states it: no limit
// is Long.MAX_VALUE.
func timestampLimitString(d time.Duration) string {
	return strconv.FormatInt(passbook.TimestampLimitMs(d), 10)
}

// maxMs is the longest time, in milliseconds, a time.Duration holds
// (about 292 years).
const maxMs = math.MaxInt64 / int64(time.Millisecond)
