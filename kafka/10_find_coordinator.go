package kafka

// FindCoordinator (key 10): versions 0–6 (v5 only lets the answer be
// TRANSACTION_ABORTABLE; v6 adds key type 2, share groups, which are not
// served: INVALID_REQUEST, as Kafka without a share coordinator).
//
// This broker, NodeID, coordinates every group (key type 0) and every
// transactional id (key type 1; see txn.go). v0–v3 ask for one key, v4
// for a list. An empty transactional id, or another key type, is
// INVALID_REQUEST, as from Kafka.
//
// ACLs: Describe on the group (GROUP_AUTHORIZATION_FAILED), Describe on
// the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator, 0, 6, findCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

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
		if req.CoordinatorType == coordinatorTransaction && key != "" && !c.allowed(acl.Describe, acl.TransactionalID, key) {
			fc.NodeID, fc.Port = -1, -1
			fc.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return fc
		}
		if req.CoordinatorType != coordinatorGroup && (req.CoordinatorType != coordinatorTransaction || key == "") {
			fc.NodeID, fc.Port = -1, -1
			fc.ErrorCode = kerr.InvalidRequest.Code
			msg := "a transactional id may not be empty"
			if req.CoordinatorType != coordinatorTransaction {
				msg = "unknown coordinator key type"
			}
			fc.ErrorMessage = &msg
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
