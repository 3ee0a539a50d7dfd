package kafka

// DescribeClientQuotas (key 48): versions 0–1.
//
// passbook enforces no client quotas (Kafka's producer_byte_rate,
// consumer_byte_rate, request_percentage, controller_mutation_rate):
// none can be set (AlterClientQuotas refuses them), so none is in
// force, and the answer lists no entries, for any filter — what Kafka
// answers a cluster with no quotas configured. A filter Kafka rejects
// (an unknown entity or match type, an entity type named twice) is
// INVALID_REQUEST.
//
// ACLs: DescribeConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeClientQuotas, 0, 1, describeClientQuotas) }

// Quota entity types, Kafka's ClientQuotaEntity.
var quotaEntityTypes = map[string]bool{"user": true, "client-id": true, "ip": true}

func describeClientQuotas(_ context.Context, c *conn, req *kmsg.DescribeClientQuotasRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !c.allowedCluster(acl.DescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	seen := map[string]bool{}
	for _, comp := range req.Components {
		var err error
		switch {
		case !quotaEntityTypes[comp.EntityType]:
			err = fmt.Errorf("unknown entity type %q: want user, client-id or ip", comp.EntityType)
		case seen[comp.EntityType]:
			err = fmt.Errorf("entity type %s is named twice", comp.EntityType)
		case comp.MatchType < 0 || comp.MatchType > 2:
			err = fmt.Errorf("entity type %s: unknown match type %d", comp.EntityType, comp.MatchType)
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
			return reply{resp: resp}, nil
		}
		seen[comp.EntityType] = true
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	return reply{resp: resp}, nil
}
