package kafka

// AddOffsetsToTxn (key 25): versions 0–4.
//
// The group's offsets join the transactional id's ongoing transaction,
// which begins if it had not: TxnOffsetCommit may then give the offsets
// the transaction commits (28_txn_offset_commit.go). The same checks as
// AddPartitionsToTxn: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
//
// ACLs: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// then Read on the group (GROUP_AUTHORIZATION_FAILED), as Kafka.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, addOffsetsToTxn) }

func addOffsetsToTxn(_ context.Context, c *conn, req *kmsg.AddOffsetsToTxnRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case !c.allowed(acl.Write, acl.TransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.allowed(acl.Read, acl.Group, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	default:
		err := c.s.txns.addGroup(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		resp.ErrorCode = fencedCode(txnCode(err), req.Version, 2)
		if err != nil {
			c.s.log.Debug("kafka: AddOffsetsToTxn refused", "transactional_id", req.TransactionalID, "group", req.Group, "err", err)
		}
	}
	return reply{resp: resp}, nil
}
