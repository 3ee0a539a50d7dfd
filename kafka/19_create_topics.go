package kafka

// CreateTopics (key 19): versions 2–7.
//
// The replication factor must be 1 or −1 (this is one broker), and the
// partition count ≥ 1 or −1 for the default; manual replica assignments
// must put every partition on NodeID. Configs are the ones topicConfigs
// lists; any other is INVALID_CONFIG. validate_only checks without
// creating. From v5 the response carries the topic's settings.
//
// ACLs: Create on the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED
// for it); the settings, partition count and replication factor are in
// the response only with DescribeConfigs on the topic (else its
// topic_config_error_code is TOPIC_AUTHORIZATION_FAILED), as Kafka 4's
// controller answers.

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreateTopics, 2, 7, createTopics) }

func createTopics(_ context.Context, c *conn, req *kmsg.CreateTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	clusterCreate := c.mayCluster(acl.Create)
	for _, rt := range req.Topics {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = rt.Topic
		if seen[rt.Topic] > 1 {
			t.ErrorCode = kerr.InvalidRequest.Code
			t.ErrorMessage = errorMessage(fmt.Errorf("topic %s is named more than once", rt.Topic))
			resp.Topics = append(resp.Topics, t)
			continue
		}
		if !clusterCreate && !c.allowed(acl.Create, acl.Topic, rt.Topic) {
			t.ErrorCode, t.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
			resp.Topics = append(resp.Topics, t)
			continue
		}
		cfg, code, err := c.s.topicConfig(&rt)
		if err == nil && !req.ValidateOnly {
			var topic *passbook.Topic
			if topic, err = c.s.db.CreateTopic(rt.Topic, cfg); err == nil {
				cfg = topic.Config()
				c.s.log.Info("kafka: created topic", "topic", rt.Topic, "partitions", cfg.Partitions)
			}
			code = errorCode(err)
		} else if err == nil {
			// Validate only: everything CreateTopic would check first.
			if err = passbook.ValidTopicName(rt.Topic); err == nil {
				if _, terr := c.s.db.Topic(rt.Topic); terr == nil {
					err = fmt.Errorf("%w: %s", passbook.ErrTopicExists, rt.Topic)
				}
			}
			code = errorCode(err)
		}
		t.ErrorCode, t.ErrorMessage = code, errorMessage(err)
		if err == nil && !c.may(acl.DescribeConfigs, acl.Topic, rt.Topic) {
			// Created, but its settings are not the client's to see.
			t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if err == nil {
			t.NumPartitions, t.ReplicationFactor = int32(cfg.Partitions), 1
			for _, k := range topicConfigs {
				v, isDefault := k.value(cfg)
				rc := kmsg.NewCreateTopicsResponseTopicConfig()
				rc.Name, rc.Value = k.name, &v
				rc.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
				if isDefault {
					rc.Source = int8(kmsg.ConfigSourceDefaultConfig)
				}
				t.Configs = append(t.Configs, rc)
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

// topicConfig turns a CreateTopics request topic into a TopicConfig, or
// says why it cannot be one.
func (s *Server) topicConfig(rt *kmsg.CreateTopicsRequestTopic) (passbook.TopicConfig, int16, error) {
	var cfg passbook.TopicConfig
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return cfg, kerr.InvalidReplicationFactor.Code,
			fmt.Errorf("replication factor %d: this is a single broker, use 1 (or -1)", rt.ReplicationFactor)
	}
	switch {
	case len(rt.ReplicaAssignment) > 0:
		if rt.NumPartitions != -1 {
			return cfg, kerr.InvalidRequest.Code, fmt.Errorf("give either a partition count or a replica assignment, not both")
		}
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) || len(a.Replicas) != 1 || a.Replicas[0] != NodeID {
				return cfg, kerr.InvalidReplicaAssignment.Code,
					fmt.Errorf("replica assignment: partitions must be 0, 1, 2, … each on broker %d alone", NodeID)
			}
		}
		cfg.Partitions = len(rt.ReplicaAssignment)
	case rt.NumPartitions == -1:
		cfg.Partitions = s.o.DefaultPartitions
	case rt.NumPartitions < 1 || rt.NumPartitions > passbook.MaxPartitions:
		return cfg, kerr.InvalidPartitions.Code, fmt.Errorf("%d partitions: want 1 to %s", rt.NumPartitions, thousands.Int(passbook.MaxPartitions))
	default:
		cfg.Partitions = int(rt.NumPartitions)
	}
	if err := applyConfigs(&cfg, rt.Configs); err != nil {
		return cfg, kerr.InvalidConfig.Code, err
	}
	return cfg, 0, nil
}
