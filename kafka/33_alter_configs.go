package kafka

// AlterConfigs (key 33): versions 0–2.
//
// For a topic: the request's configs become the topic's whole set, as in
// Kafka — a config not named goes back to its default — checked as
// CreateTopics checks them (INVALID_CONFIG naming the key and the rule;
// an unknown name, INVALID_CONFIG; a key named twice, INVALID_REQUEST).
// A resource with any bad entry changes nothing. The change is live and
// durable before the response (passbook.DB.AlterTopicConfig);
// validate_only checks and changes nothing. For the broker (its node id,
// or empty for the cluster default: one and the same here): the configs
// that set a topic default (log.retention.ms, log.segment.bytes,
// log.cleanup.policy, message.max.bytes, …) change the defaults of the
// topics created from then on, kept in the data directory
// (topic-defaults.json) across restarts; any other is refused
// (INVALID_REQUEST, "Cannot update these configs dynamically"), as
// Kafka refuses a read-only config: the rest are serve's flags.
//
// ACLs: AlterConfigs on the topic (TOPIC_AUTHORIZATION_FAILED), or on the
// cluster for the broker (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterConfigs, 0, 2, alterConfigs) }

func alterConfigs(ctx context.Context, c *conn, req *kmsg.AlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		var ops []configOp
		for _, kv := range rr.Configs {
			ops = append(ops, configOp{name: kv.Name, value: kv.Value, op: kmsg.IncrementalAlterConfigOpSet})
		}
		code, msg := c.alterResource(ctx, rr.ResourceType, rr.ResourceName, ops, true, req.ValidateOnly)
		r := kmsg.NewAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName, r.ErrorCode, r.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
		resp.Resources = append(resp.Resources, r)
	}
	return reply{resp: resp}, nil
}

// configOp is one entry of AlterConfigs or IncrementalAlterConfigs.
type configOp struct {
	name  string
	value *string
	op    kmsg.IncrementalAlterConfigOp
}
