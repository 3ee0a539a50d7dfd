package kafka

// ListPartitionReassignments (key 46): version 0.
//
// No reassignment is ever in progress on a single broker
// (AlterPartitionReassignments moves nothing), so the answer lists none:
// for all partitions (null topics) and for those named, as Kafka's
// controller leaves out every partition not being reassigned, and
// topics or partitions that do not exist.
//
// ACLs: Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListPartitionReassignments, 0, 0, listPartitionReassignments) }

func listPartitionReassignments(_ context.Context, c *conn, req *kmsg.ListPartitionReassignmentsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !c.allowedCluster(acl.Describe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	return reply{resp: resp}, nil
}
