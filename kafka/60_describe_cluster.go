package kafka

// DescribeCluster (key 60): versions 0–2.
//
// The cluster is this one broker: NodeID at the host and port the
// connection's Metadata advertises, no rack, never fenced; the cluster
// ID is Options.ClusterID and the controller is NodeID itself. Only the
// broker endpoint type is served (v1+): an unknown type gets
// UNSUPPORTED_ENDPOINT_TYPE, the controller type
// MISMATCHED_ENDPOINT_TYPE, as Kafka's brokers answer.
//
// ACLs, as Kafka's AuthHelper.computeDescribeClusterResponse: anyone
// may describe the cluster; its authorized operations, when asked for,
// are those of the connection with Describe on the cluster and 0
// without it.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeCluster, 0, 2, describeCluster) }

// The endpoint types of DescribeCluster v1+ (Kafka's EndpointType).
const (
	endpointBroker     = 1
	endpointController = 2
)

func describeCluster(_ context.Context, c *conn, req *kmsg.DescribeClusterRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != endpointBroker {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "unsupported endpoint type"
		if req.EndpointType == endpointController {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			msg = "this is a broker endpoint, not a controller's"
		}
		resp.ErrorMessage = &msg
		return reply{resp: resp}, nil
	}
	resp.EndpointType = endpointBroker
	resp.ClusterID = c.s.o.ClusterID
	resp.ControllerID = NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = NodeID, c.host, c.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if c.allowedCluster(acl.Describe) {
			resp.ClusterAuthorizedOperations = c.authorizedOperations(acl.Cluster, acl.ClusterName)
		}
	}
	return reply{resp: resp}, nil
}
