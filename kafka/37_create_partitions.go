package kafka

// CreatePartitions (key 37): versions 0–3.
//
// Grows a topic to count partitions (passbook.DB.AddPartitions: durable
// when answered, all or nothing across a crash). As Kafka's controller:
// a count not above the topic's is INVALID_PARTITIONS ("already has",
// "would not be an increase"), and so is one above passbook.MaxPartitions
// (10,000, the most a topic may have here); a manual assignment must name
// one replica, broker NodeID, for each new partition
// (INVALID_REPLICA_ASSIGNMENT otherwise); a topic named twice is
// INVALID_REQUEST; validate_only checks all that and changes nothing.
// Consumer groups on the topic see the new partitions at their next
// Metadata, and rebalance onto them as with Kafka.
//
// ACLs: Alter on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"errors"
	"fmt"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreatePartitions, 0, 3, createPartitions) }

func createPartitions(ctx context.Context, c *conn, req *kmsg.CreatePartitionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		t := kmsg.NewCreatePartitionsResponseTopic()
		t.Topic = rt.Topic
		var code int16
		var err error
		switch {
		case seen[rt.Topic] > 1:
			code, err = kerr.InvalidRequest.Code, fmt.Errorf("topic %s is named more than once", rt.Topic)
		case !c.allowed(acl.Alter, acl.Topic, rt.Topic):
			code, err = kerr.TopicAuthorizationFailed.Code, fmt.Errorf("not authorized to alter topic %s", rt.Topic)
		default:
			code, err = c.growTopic(ctx, &rt, req.ValidateOnly)
		}
		t.ErrorCode, t.ErrorMessage = code, errorMessage(err)
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

// growTopic answers one topic of a CreatePartitions request.
func (c *conn) growTopic(ctx context.Context, rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, error) {
	if err := c.s.db.CheckAddPartitions(rt.Topic, int(rt.Count)); err != nil {
		return partitionsCode(err), err
	}
	if rt.Assignment != nil {
		t, err := c.s.db.Topic(rt.Topic)
		if err != nil {
			return errorCode(err), err
		}
		if add := int(rt.Count) - t.Partitions(); len(rt.Assignment) != add {
			return kerr.InvalidReplicaAssignment.Code, fmt.Errorf("attempted to add %d additional partition(s), but %d assignment(s) were specified", add, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != NodeID {
				return kerr.InvalidReplicaAssignment.Code, fmt.Errorf("assignment %d names replicas %v: this is a single broker, each new partition's replicas must be [%d]", i, a.Replicas, NodeID)
			}
		}
	}
	if validateOnly {
		return 0, nil
	}
	t, err := c.s.db.AddPartitions(ctx, rt.Topic, int(rt.Count))
	if err != nil {
		c.s.log.Warn("kafka: add partitions", "topic", rt.Topic, "count", rt.Count, "err", err)
		return partitionsCode(err), err
	}
	c.s.log.Info("kafka: added partitions", "topic", rt.Topic, "partitions", t.Partitions())
	return 0, nil
}

// partitionsCode is errorCode, with INVALID_PARTITIONS for a count
// AddPartitions refuses.
func partitionsCode(err error) int16 {
	if errors.Is(err, passbook.ErrInvalidPartitions) {
		return kerr.InvalidPartitions.Code
	}
	return errorCode(err)
}
