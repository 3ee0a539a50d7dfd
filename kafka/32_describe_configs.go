package kafka

// DescribeConfigs (key 32): versions 1–4.
//
// For a topic: the settings topicConfigs lists, each with its value and
// whether it is passbook's default (DEFAULT_CONFIG) or was set for the
// topic (DYNAMIC_TOPIC_CONFIG); none are read-only or sensitive. For the
// broker: an empty list — it has no Kafka-named settings. Documentation
// is included when asked for (v3+).
//
// ACLs: DescribeConfigs on the topic (TOPIC_AUTHORIZATION_FAILED), or on
// the cluster for the broker (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeConfigs, 1, 4, describeConfigs) }

func describeConfigs(_ context.Context, c *conn, req *kmsg.DescribeConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeBroker:
			if !c.allowedCluster(acl.DescribeConfigs) {
				r.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(NodeID) {
				r.ErrorCode = kerr.InvalidRequest.Code
				r.ErrorMessage = errorMessage(fmt.Errorf("no broker %q: this cluster's one broker is %d", rr.ResourceName, NodeID))
			}
		case kmsg.ConfigResourceTypeTopic:
			if !c.allowed(acl.DescribeConfigs, acl.Topic, rr.ResourceName) {
				r.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			t, err := c.s.db.Topic(rr.ResourceName)
			if err != nil {
				r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
				break
			}
			cfg := t.Config()
			for _, k := range topicConfigs {
				if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, k.name) {
					continue
				}
				v, isDefault := k.value(cfg)
				rc := kmsg.NewDescribeConfigsResponseResourceConfig()
				rc.Name, rc.Value, rc.IsDefault = k.name, &v, isDefault
				rc.Source = kmsg.ConfigSourceDynamicTopicConfig
				if isDefault {
					rc.Source = kmsg.ConfigSourceDefaultConfig
				}
				rc.ConfigType = k.typ
				if req.IncludeDocumentation {
					rc.Documentation = &k.doc
				}
				r.Configs = append(r.Configs, rc)
			}
		default:
			r.ErrorCode = kerr.InvalidRequest.Code
			r.ErrorMessage = errorMessage(fmt.Errorf("resource type %v: only topics and the broker are described", rr.ResourceType))
		}
		resp.Resources = append(resp.Resources, r)
	}
	return reply{resp: resp}, nil
}
