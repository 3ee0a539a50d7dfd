package kafka

// ConsumerGroupHeartbeat (key 68): versions 0–1 (KIP-848).
//
// A member of a consumer-protocol group joins (epoch 0), heartbeats with
// its epoch and the partitions it owns, and leaves (epoch −1; −2 for a
// static member that will be back): the broker computes the assignment
// and answers each heartbeat with the member's epoch and, when it
// changed or the request was a full one, its assignment (see
// group848.go). v0 members are named by the coordinator; v1 members name
// themselves and may subscribe by regular expression
// (subscribed_topic_regex, matched against the whole topic name with
// Go's regexp, RE2 syntax as Kafka's RE2/J). The heartbeat interval
// given back and the session timeout are the broker's
// (group.consumer.heartbeat.interval.ms, 5 s, and
// group.consumer.session.timeout.ms, 45 s, Kafka's defaults).
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED); Describe on each
// subscribed topic named (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, consumerGroupHeartbeat) }

func consumerGroupHeartbeat(_ context.Context, c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) (reply, error) {
	fail := func(e *heartbeatError) (reply, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode, resp.ErrorMessage = e.err.Code, kmsg.StringPtr(e.msg)
		return reply{resp: resp}, nil
	}
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		return fail(hbErr(kerr.GroupAuthorizationFailed, "Not authorized to read group %s.", req.Group))
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.allowed(acl.Describe, acl.Topic, t) {
			return fail(hbErr(kerr.TopicAuthorizationFailed, "Not authorized to describe topic %s.", t))
		}
	}
	if e := c.s.groups.validateHeartbeat(req); e != nil {
		return fail(e)
	}
	topics := map[string]topicMeta{}
	for _, t := range c.s.db.Topics() {
		topics[t.Name()] = topicMeta{name: t.Name(), id: t.ID(), partitions: int32(t.Partitions())}
	}
	resp, e := c.s.groups.consumerHeartbeat(heartbeatReq{ConsumerGroupHeartbeatRequest: req,
		clientID: c.clientID, clientHost: c.clientHost(), topics: topics})
	if e != nil {
		return fail(e)
	}
	resp.Version = req.Version
	return reply{resp: resp}, nil
}
