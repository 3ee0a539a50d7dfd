package kafka

import (
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConfigs are the broker configs DescribeConfigs reports for the
// broker (resource type BROKER): each one's real value here, from the
// server's Options (serve's flags) and the data directory's topic
// defaults. A value other than passbook's default was set by a flag:
// STATIC_BROKER_CONFIG. Those that set a topic default (log.*,
// message.max.bytes) can change while the server runs (AlterConfigs;
// DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG once changed);
// the others are read-only.
var brokerConfigs = []brokerConfigKey{
	{name: "auto.create.topics.enable", typ: kmsg.ConfigTypeBoolean, doc: "Metadata creates missing topics a client asks for (serve --auto-create-topics)",
		get: func(s *Server, _ Options) string { return strconv.FormatBool(!s.o.DisableAutoCreateTopics) }},
	{name: "broker.id", typ: kmsg.ConfigTypeInt, doc: "this broker's id", get: func(*Server, Options) string { return strconv.Itoa(NodeID) }},
	{name: "node.id", typ: kmsg.ConfigTypeInt, doc: "this broker's id", get: func(*Server, Options) string { return strconv.Itoa(NodeID) }},
	{name: "connections.max.idle.ms", typ: kmsg.ConfigTypeLong, doc: "a connection idle this long is closed (serve --connections-max-idle)",
		get: func(s *Server, d Options) string { return msString(s.o.ConnectionsMaxIdle) }, def: func(d Options) string { return msString(d.ConnectionsMaxIdle) }},
	{name: "default.replication.factor", typ: kmsg.ConfigTypeInt, doc: "one broker: every partition has one replica",
		get: func(*Server, Options) string { return "1" }},
	{name: "fetch.max.bytes", typ: kmsg.ConfigTypeInt, doc: "most record bytes in one fetch response (serve --fetch-max-bytes)",
		get: func(s *Server, _ Options) string { return strconv.Itoa(s.o.FetchMaxBytes) }, def: func(d Options) string { return strconv.Itoa(d.FetchMaxBytes) }},
	{name: "group.consumer.assignors", typ: kmsg.ConfigTypeList, doc: "the server-side assignors of KIP-848 groups; the first is the default",
		get: func(s *Server, _ Options) string { return strings.Join(s.groups.consumerConfig().assignors, ",") }, def: func(Options) string { return "uniform,range" }},
	{name: "group.consumer.heartbeat.interval.ms", typ: kmsg.ConfigTypeInt, doc: "heartbeat interval of KIP-848 group members (serve --group-consumer-heartbeat-interval)",
		get: func(s *Server, _ Options) string { return msString(s.groups.consumerConfig().heartbeat) }, def: func(Options) string { return msString(defaultConsumerHeartbeatInterval) }},
	{name: "group.consumer.max.size", typ: kmsg.ConfigTypeInt, doc: "most members of a KIP-848 group (serve --group-consumer-max-size)",
		get: func(s *Server, _ Options) string { return strconv.Itoa(s.groups.consumerConfig().maxSize) }, def: func(Options) string { return strconv.Itoa(defaultConsumerMaxSize) }},
	{name: "group.consumer.session.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "session timeout of KIP-848 group members (serve --group-consumer-session-timeout)",
		get: func(s *Server, _ Options) string { return msString(s.groups.consumerConfig().session) }, def: func(Options) string { return msString(defaultConsumerSessionTimeout) }},
	{name: "group.max.session.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "longest session timeout a group member may ask for (serve --group-max-session-timeout)",
		get: func(s *Server, _ Options) string { return msString(s.o.GroupMaxSessionTimeout) }, def: func(d Options) string { return msString(d.GroupMaxSessionTimeout) }},
	{name: "group.min.session.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "shortest session timeout a group member may ask for (serve --group-min-session-timeout)",
		get: func(s *Server, _ Options) string { return msString(s.o.GroupMinSessionTimeout) }, def: func(d Options) string { return msString(d.GroupMinSessionTimeout) }},
	{name: "log.cleanup.policy", typ: kmsg.ConfigTypeList, doc: "cleanup.policy of new topics", topic: "cleanup.policy"},
	{name: "log.retention.bytes", typ: kmsg.ConfigTypeLong, doc: "retention.bytes of new topics", topic: "retention.bytes"},
	{name: "log.retention.ms", typ: kmsg.ConfigTypeLong, doc: "retention.ms of new topics", topic: "retention.ms"},
	{name: "log.retention.hours", typ: kmsg.ConfigTypeInt, doc: "retention.ms of new topics, in hours (-1: forever)",
		get: func(s *Server, _ Options) string {
			if d := s.db.DefaultTopicConfig().RetentionAge; d > 0 {
				return strconv.FormatInt(int64(d/time.Hour), 10)
			}
			return "-1"
		}, def: func(Options) string { return "-1" }},
	{name: "log.roll.ms", typ: kmsg.ConfigTypeLong, doc: "segment.ms of new topics", topic: "segment.ms"},
	{name: "log.segment.bytes", typ: kmsg.ConfigTypeInt, doc: "segment.bytes of new topics", topic: "segment.bytes"},
	{name: "log.message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong, doc: "message.timestamp.before.max.ms of new topics", topic: "message.timestamp.before.max.ms"},
	{name: "log.message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong, doc: "message.timestamp.after.max.ms of new topics", topic: "message.timestamp.after.max.ms"},
	{name: "log.cleaner.delete.retention.ms", typ: kmsg.ConfigTypeLong, doc: "delete.retention.ms of new topics", topic: "delete.retention.ms"},
	{name: "log.cleaner.min.cleanable.ratio", typ: kmsg.ConfigTypeDouble, doc: "min.cleanable.dirty.ratio of new topics", topic: "min.cleanable.dirty.ratio"},
	{name: "max.connections", typ: kmsg.ConfigTypeInt, doc: "most client connections open at once (serve --max-connections)",
		get: func(s *Server, _ Options) string { return strconv.Itoa(s.o.MaxConnections) }, def: func(d Options) string { return strconv.Itoa(d.MaxConnections) }},
	{name: "max.connections.per.ip", typ: kmsg.ConfigTypeInt, doc: "most connections from one address (serve --max-connections-per-ip)",
		get: func(s *Server, _ Options) string { return strconv.Itoa(s.o.MaxConnectionsPerIP) }, def: func(d Options) string { return strconv.Itoa(d.MaxConnectionsPerIP) }},
	{name: "message.max.bytes", typ: kmsg.ConfigTypeInt, doc: "max.message.bytes of new topics", topic: "max.message.bytes"},
	{name: "num.partitions", typ: kmsg.ConfigTypeInt, doc: "partitions of auto-created topics and of CreateTopics asking for the default (serve --default-partitions)",
		get: func(s *Server, _ Options) string {
			if n := s.o.DefaultPartitions; n > 0 {
				return strconv.Itoa(n)
			}
			return strconv.Itoa(max(s.db.DefaultTopicConfig().Partitions, 1))
		}, def: func(Options) string { return "1" }},
	{name: "offsets.topic.replication.factor", typ: kmsg.ConfigTypeShort, doc: "one broker: one replica",
		get: func(*Server, Options) string { return "1" }},
	{name: "queued.max.request.bytes", typ: kmsg.ConfigTypeLong, doc: "memory for requests being read, over all connections (serve --queued-max-request-bytes)",
		get: func(s *Server, _ Options) string { return strconv.FormatInt(s.o.QueuedMaxRequestBytes, 10) }, def: func(d Options) string { return strconv.FormatInt(d.QueuedMaxRequestBytes, 10) }},
	{name: "request.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "a request must arrive, and its response be read, within this (serve --request-timeout)",
		get: func(s *Server, _ Options) string { return msString(s.o.RequestTimeout) }, def: func(d Options) string { return msString(d.RequestTimeout) }},
	{name: "socket.request.max.bytes", typ: kmsg.ConfigTypeInt, doc: "largest request accepted (serve --socket-request-max-bytes)",
		get: func(s *Server, _ Options) string { return strconv.Itoa(s.o.SocketRequestMaxBytes) }, def: func(d Options) string { return strconv.Itoa(d.SocketRequestMaxBytes) }},
	{name: "transaction.state.log.replication.factor", typ: kmsg.ConfigTypeShort, doc: "one broker: one replica",
		get: func(*Server, Options) string { return "1" }},
	{name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, doc: "one broker has no other replica to elect",
		get: func(*Server, Options) string { return "false" }},
}

// brokerConfigKey is one broker config. A config with topic set reports
// the data directory's default for that topic config; get otherwise. A
// config without def has one value only (no flag sets it).
type brokerConfigKey struct {
	name  string
	typ   kmsg.ConfigType
	doc   string
	topic string
	get   func(s *Server, defaults Options) string
	def   func(defaults Options) string
}

// value is the config's value on s, and whether it is passbook's default.
func (k *brokerConfigKey) value(s *Server) (string, bool) {
	defaults := (&Options{}).withDefaults()
	if k.topic != "" {
		tk := findTopicConfig(k.topic)
		v, _ := tk.value(s.db.DefaultTopicConfig())
		var zero passbook.TopicConfig
		zero.CleanupPolicy = passbook.CleanupDelete
		d, _ := tk.value(zero)
		return v, v == d
	}
	v := k.get(s, defaults)
	if k.def == nil {
		return v, true
	}
	return v, v == k.def(defaults)
}

func findBrokerConfig(name string) *brokerConfigKey {
	for i := range brokerConfigs {
		if brokerConfigs[i].name == name {
			return &brokerConfigs[i]
		}
	}
	return nil
}

// dynamic reports whether the config can change while the server runs:
// it sets a topic default.
func (k *brokerConfigKey) dynamic() bool { return k.topic != "" }

// setDynamically reports whether the config's value was set while
// running (SetDefaultTopicConfig).
func (k *brokerConfigKey) setDynamically(s *Server) bool {
	if !k.dynamic() {
		return false
	}
	_, isDefault := findTopicConfig(k.topic).value(s.db.SetTopicDefaults())
	return !isDefault
}
