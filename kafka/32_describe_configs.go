package kafka

// DescribeConfigs (key 32): versions 1–4.
//
// For a topic: every topic config Kafka defines (topicConfigs), each with
// its value and whether it is passbook's default (DEFAULT_CONFIG) or was
// set for the topic (DYNAMIC_TOPIC_CONFIG); none are read-only or
// sensitive. For the broker (its node id, or empty for the cluster's
// default): the broker configs of brokerConfigs with their real values,
// DEFAULT_CONFIG, STATIC_BROKER_CONFIG (set by a serve flag) or, for a
// topic default changed with AlterConfigs, DYNAMIC_BROKER_CONFIG
// (DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster default); only those
// are writable. Synonyms (v1+) when asked: for a topic config, itself as
// set and the broker config that gives its default; documentation (v3+)
// when asked. ConfigNames selects configs by name; an unknown one is
// left out, as Kafka does.
//
// ACLs: DescribeConfigs on the topic (TOPIC_AUTHORIZATION_FAILED), or on
// the cluster for the broker (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/passbook-log/passbook"
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
				break
			}
			r.Configs = describeBroker(c.s, rr.ResourceName, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
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
			r.Configs = describeTopic(t.Config(), rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
		default:
			r.ErrorCode = kerr.InvalidRequest.Code
			r.ErrorMessage = errorMessage(fmt.Errorf("resource type %v: only topics and the broker are described", rr.ResourceType))
		}
		resp.Resources = append(resp.Resources, r)
	}
	return reply{resp: resp}, nil
}

// describeTopic is a topic's configs as DescribeConfigs reports them.
func describeTopic(cfg passbook.TopicConfig, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range topicConfigs {
		k := &topicConfigs[i]
		if names != nil && !slices.Contains(names, k.name) {
			continue
		}
		v, isDefault := k.value(cfg)
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.Value, rc.IsDefault, rc.ConfigType = k.name, &v, isDefault, k.typ
		rc.Source = kmsg.ConfigSourceDynamicTopicConfig
		if isDefault {
			rc.Source = kmsg.ConfigSourceDefaultConfig
		}
		if synonyms {
			if !isDefault {
				rc.ConfigSynonyms = append(rc.ConfigSynonyms, synonym(k.name, v, kmsg.ConfigSourceDynamicTopicConfig))
			}
			if k.synonym != "" {
				rc.ConfigSynonyms = append(rc.ConfigSynonyms, synonym(k.synonym, k.def, kmsg.ConfigSourceDefaultConfig))
			}
		}
		if docs {
			doc := k.effect
			rc.Documentation = &doc
		}
		out = append(out, rc)
	}
	return out
}

// describeBroker is the broker's configs as DescribeConfigs reports them;
// name is the resource name asked for (empty: the cluster default, where
// Kafka reports no static configs, only defaults).
func describeBroker(s *Server, name string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range brokerConfigs {
		k := &brokerConfigs[i]
		if names != nil && !slices.Contains(names, k.name) {
			continue
		}
		v, isDefault := k.value(s)
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.Value, rc.IsDefault, rc.ConfigType, rc.ReadOnly = k.name, &v, isDefault, k.typ, !k.dynamic()
		rc.Source = kmsg.ConfigSourceStaticBrokerConfig
		switch {
		case k.setDynamically(s) && name == "":
			rc.Source, rc.IsDefault = kmsg.ConfigSourceDynamicDefaultBrokerConfig, false
		case k.setDynamically(s):
			rc.Source, rc.IsDefault = kmsg.ConfigSourceDynamicBrokerConfig, false
		case isDefault:
			rc.Source = kmsg.ConfigSourceDefaultConfig
		}
		if synonyms {
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, synonym(k.name, v, rc.Source))
		}
		if docs {
			doc := k.doc
			rc.Documentation = &doc
		}
		out = append(out, rc)
	}
	return out
}

func synonym(name, value string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Source = name, source
	sy.Value = &value
	return sy
}
