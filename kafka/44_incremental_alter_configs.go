package kafka

// IncrementalAlterConfigs (key 44): versions 0–1.
//
// For a topic: each entry SETs a config, DELETEs it (back to its
// default), or, for a list config (cleanup.policy, the replication
// throttles), APPENDs or SUBTRACTs values; configs not named keep their
// values. Values are checked as CreateTopics checks them
// (INVALID_CONFIG naming the key and the rule; APPEND or SUBTRACT on a
// config that is not a list, INVALID_CONFIG; an unknown name,
// INVALID_CONFIG; a key named twice, INVALID_REQUEST). A resource with
// any bad entry changes nothing; the change is live and durable before
// the response; validate_only checks and changes nothing. For the
// broker: as AlterConfigs.
//
// ACLs: AlterConfigs on the topic, or on the cluster for the broker.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, incrementalAlterConfigs) }

func incrementalAlterConfigs(ctx context.Context, c *conn, req *kmsg.IncrementalAlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		var ops []configOp
		for _, kv := range rr.Configs {
			ops = append(ops, configOp{name: kv.Name, value: kv.Value, op: kv.Op})
		}
		code, msg := c.alterResource(ctx, rr.ResourceType, rr.ResourceName, ops, false, req.ValidateOnly)
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName, r.ErrorCode, r.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
		resp.Resources = append(resp.Resources, r)
	}
	return reply{resp: resp}, nil
}

// alterResource applies ops to one resource of AlterConfigs (replace: the
// ops are the whole set) or IncrementalAlterConfigs, and returns the
// resource's error code and message.
func (c *conn) alterResource(ctx context.Context, rt kmsg.ConfigResourceType, name string, ops []configOp, replace, validateOnly bool) (int16, *string) {
	switch rt {
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !c.allowedCluster(acl.AlterConfigs) {
			return kerr.ClusterAuthorizationFailed.Code, nil
		}
		if rt == kmsg.ConfigResourceTypeBrokerLogger {
			return kerr.InvalidRequest.Code, errorMessage(fmt.Errorf("broker loggers: passbook's log level is serve's -v, fixed while it runs"))
		}
		if name != "" && name != strconv.Itoa(NodeID) {
			return kerr.InvalidRequest.Code, errorMessage(fmt.Errorf("no broker %q: this cluster's one broker is %d", name, NodeID))
		}
		return c.alterBroker(ctx, ops, replace, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
	default:
		return kerr.InvalidRequest.Code, errorMessage(fmt.Errorf("resource type %v: only topics and the broker have configs", rt))
	}
	if !c.allowed(acl.AlterConfigs, acl.Topic, name) {
		return kerr.TopicAuthorizationFailed.Code, nil
	}
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.name] {
			return kerr.InvalidRequest.Code, errorMessage(ruleErr("Error due to duplicate config keys: %s", o.name))
		}
		seen[o.name] = true
	}
	_, err := c.s.db.AlterTopicConfig(ctx, name, validateOnly, func(cfg *passbook.TopicConfig) error {
		return alterTopicConfig(cfg, ops, replace)
	})
	if err != nil {
		return errorCode(err), errorMessage(err)
	}
	return 0, nil
}

// alterBroker applies ops to the broker's configs: those that set a
// topic default (log.retention.ms, message.max.bytes, …: brokerConfigs
// with a topic config) change the defaults of new topics, durably
// (passbook.DB.SetDefaultTopicConfig); any other refuses the request, as
// Kafka refuses a config it cannot change dynamically.
func (c *conn) alterBroker(ctx context.Context, ops []configOp, replace, validateOnly bool) (int16, *string) {
	var static []string
	topicOps := make([]configOp, 0, len(ops))
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.name] {
			return kerr.InvalidRequest.Code, errorMessage(ruleErr("Error due to duplicate config keys: %s", o.name))
		}
		seen[o.name] = true
		k := findBrokerConfig(o.name)
		if k == nil || k.topic == "" {
			static = append(static, o.name)
			continue
		}
		topicOps = append(topicOps, configOp{name: k.topic, value: o.value, op: o.op})
	}
	if len(static) > 0 {
		return kerr.InvalidRequest.Code, errorMessage(ruleErr("Cannot update these configs dynamically: Set(%s): passbook's other broker configs are serve's flags, fixed while it runs (restart it with new flags)", strings.Join(static, ", ")))
	}
	_, err := c.s.db.SetDefaultTopicConfig(ctx, validateOnly, func(cfg *passbook.TopicConfig) error {
		if replace {
			*cfg = passbook.TopicConfig{}
		}
		return alterTopicConfig(cfg, topicOps, false)
	})
	if err != nil {
		return errorCode(err), errorMessage(err)
	}
	return 0, nil
}

// alterTopicConfig applies ops to cfg: Kafka's checks, then the changes.
func alterTopicConfig(cfg *passbook.TopicConfig, ops []configOp, replace bool) error {
	if replace {
		for i := range topicConfigs {
			topicConfigs[i].reset(cfg)
		}
	}
	for _, o := range ops {
		k := findTopicConfig(o.name)
		if k == nil {
			return unknownTopicConfig(o.name)
		}
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if o.value == nil {
				return fmt.Errorf("%w: Null value not supported for: %s", passbook.ErrInvalidConfig, o.name)
			}
			if err := k.apply(cfg, o.value); err != nil {
				return err
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			k.reset(cfg)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if k.typ != kmsg.ConfigTypeList {
				return fmt.Errorf("%w: Config value append is not allowed for config key: %s", passbook.ErrInvalidConfig, o.name)
			}
			cur, _ := k.value(*cfg)
			items := splitList(cur)
			for _, v := range splitList(deref(o.value)) {
				if o.op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, v) {
					items = append(items, v)
				}
				if o.op == kmsg.IncrementalAlterConfigOpSubtract {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			nv := strings.Join(items, ",")
			if err := k.apply(cfg, &nv); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unknown operation %d for %s", passbook.ErrInvalidConfig, o.op, o.name)
		}
	}
	return checkCompactionLags(*cfg)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
