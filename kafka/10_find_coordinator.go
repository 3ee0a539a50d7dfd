package kafka

// FindCoordinator (key 10): versions 0–4.
//
// This broker, NodeID, coordinates every group. v0–v3 ask for one key,
// v4 for a list. Transactions are not served: a transactional id's
// coordinator is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
// Kafka refuses a client that may not use transactions.
//
// ACLs: Describe on the group (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator, 0, 4, findCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

var noTransactions = "passbook does not serve transactions"

func findCoordinator(_ context.Context, c *conn, req *kmsg.FindCoordinatorRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		fc := kmsg.NewFindCoordinatorResponseCoordinator()
		fc.Key = key
		if req.CoordinatorType == coordinatorGroup && !c.allowed(acl.Describe, acl.Group, key) {
			fc.NodeID, fc.Port = -1, -1
			fc.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return fc
		}
		if req.CoordinatorType != coordinatorGroup {
			fc.NodeID, fc.Port = -1, -1
			fc.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			if req.CoordinatorType != coordinatorTransaction {
				fc.ErrorCode = kerr.InvalidRequest.Code
			}
			fc.ErrorMessage = &noTransactions
			return fc
		}
		fc.NodeID, fc.Host, fc.Port = NodeID, c.host, c.port
		return fc
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, find(key))
		}
		return reply{resp: resp}, nil
	}
	fc := find(req.CoordinatorKey)
	resp.ErrorCode, resp.ErrorMessage = fc.ErrorCode, fc.ErrorMessage
	resp.NodeID, resp.Host, resp.Port = fc.NodeID, fc.Host, fc.Port
	return reply{resp: resp}, nil
}
