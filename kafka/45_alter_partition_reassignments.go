package kafka

// AlterPartitionReassignments (key 45): versions 0–1.
//
// A cluster of one broker has nowhere to move a replica. A reassignment
// to the partition's replicas as they are — [NodeID] — is a no-op that
// succeeds, as Kafka's controller answers a reassignment to the current
// replicas. Any other is INVALID_REPLICA_ASSIGNMENT saying why: an
// empty list, a replica named twice, or a broker other than NodeID
// ("no broker with that ID is registered", in Kafka's words); more than
// one replica changes the replication factor, which v1 without
// allow_replication_factor_change refuses with INVALID_REPLICATION_FACTOR
// before that. Cancelling (null replicas) is NO_REASSIGNMENT_IN_PROGRESS:
// none ever is. A topic or partition that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION.
//
// ACLs: Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top).

import (
	"context"
	"fmt"
	"slices"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterPartitionAssignments, 0, 1, alterPartitionReassignments) }

func alterPartitionReassignments(_ context.Context, c *conn, req *kmsg.AlterPartitionAssignmentsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !c.allowedCluster(acl.Alter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		t.Topic = rt.Topic
		topic, terr := c.s.db.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition = rp.Partition
			var code int16
			var err error
			switch {
			case terr != nil || rp.Partition < 0 || int(rp.Partition) >= topic.Partitions():
				code, err = kerr.UnknownTopicOrPartition.Code, fmt.Errorf("no such partition as %s-%d", rt.Topic, rp.Partition)
			case rp.Replicas == nil:
				code, err = kerr.NoReassignmentInProgress.Code, fmt.Errorf("no reassignment of %s-%d is in progress: this is a single broker, nothing is ever moved", rt.Topic, rp.Partition)
			default:
				code, err = reassignment(rp.Replicas, req.Version >= 1 && !req.AllowReplicationFactorChange)
			}
			p.ErrorCode, p.ErrorMessage = code, errorMessage(err)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

// reassignment checks a partition's target replicas: only [NodeID], the
// replicas it has, is one a single broker can take.
func reassignment(replicas []int32, keepFactor bool) (int16, error) {
	switch {
	case len(replicas) == 0:
		return kerr.InvalidReplicaAssignment.Code, fmt.Errorf("the manual partition assignment includes an empty replica list")
	case len(replicas) != len(slices.Compact(slices.Sorted(slices.Values(replicas)))):
		return kerr.InvalidReplicaAssignment.Code, fmt.Errorf("the manual partition assignment %v names a replica twice", replicas)
	case keepFactor && len(replicas) != 1:
		return kerr.InvalidReplicationFactor.Code, fmt.Errorf("the replication factor is 1 (a single broker); %d replicas would change it", len(replicas))
	}
	for _, r := range replicas {
		if r != NodeID {
			return kerr.InvalidReplicaAssignment.Code, fmt.Errorf("the manual partition assignment includes broker %d, but no broker with that ID is registered: this is a single broker, %d", r, NodeID)
		}
	}
	return 0, nil
}
