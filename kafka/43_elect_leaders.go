package kafka

// ElectLeaders (key 43): versions 0–2.
//
// As a cluster of one broker answers: every partition's leader is its
// one replica, NodeID, which is also its preferred replica and alive, so
// a preferred (0) or unclean (1) election is never needed —
// ELECTION_NOT_NEEDED for each partition named, and, when none is named
// (all partitions), an empty result, as Kafka's controller leaves out the
// partitions that already have the leader wanted. A topic or partition
// that does not exist is UNKNOWN_TOPIC_OR_PARTITION; an election type
// other than 0 or 1 is INVALID_REQUEST.
//
// ACLs: Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED, at the top
// from v1 and for each partition).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ElectLeaders, 0, 2, electLeaders) }

func electLeaders(_ context.Context, c *conn, req *kmsg.ElectLeadersRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	code := int16(0)
	var msg *string
	switch {
	case !c.allowedCluster(acl.Alter):
		code = kerr.ClusterAuthorizationFailed.Code
	case req.ElectionType != 0 && req.ElectionType != 1:
		code, msg = kerr.InvalidRequest.Code, errorMessage(fmt.Errorf("election type %d: want 0 (preferred) or 1 (unclean)", req.ElectionType))
	}
	if code != 0 {
		resp.ErrorCode = code
	}
	for _, rt := range req.Topics {
		t := kmsg.NewElectLeadersResponseTopic()
		t.Topic = rt.Topic
		topic, terr := c.s.db.Topic(rt.Topic)
		for _, part := range rt.Partitions {
			p := kmsg.NewElectLeadersResponseTopicPartition()
			p.Partition = part
			switch {
			case code != 0:
				p.ErrorCode, p.ErrorMessage = code, msg
			case terr != nil:
				p.ErrorCode, p.ErrorMessage = kerr.UnknownTopicOrPartition.Code, errorMessage(fmt.Errorf("no such topic as %s", rt.Topic))
			case part < 0 || int(part) >= topic.Partitions():
				p.ErrorCode, p.ErrorMessage = kerr.UnknownTopicOrPartition.Code, errorMessage(fmt.Errorf("no such partition as %s-%d", rt.Topic, part))
			default:
				p.ErrorCode = kerr.ElectionNotNeeded.Code
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}
