package kafka

// EndTxn (key 26): versions 0–4.
//
// Commits or aborts the transactional id's ongoing transaction (txn.go):
// PrepareCommit or PrepareAbort is written to the transaction log, the
// markers to every partition of the transaction (each fsync'd), a
// commit's TxnOffsetCommit offsets to the groups, and then
// CompleteCommit or CompleteAbort; the answer comes after all of it, so
// a read_committed reader sees a committed transaction once its
// producer is told. A retry of the same decision after it completed is
// answered NONE; the other decision, or ending a transaction that never
// began, is INVALID_TXN_STATE; a request while the markers are being
// written is CONCURRENT_TRANSACTIONS; a fenced epoch PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2). v5 (KIP-890's epoch bump at every
// end) belongs to transaction.version 2, which is not advertised.
//
// ACLs: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.EndTxn, 0, 4, endTxn) }

func endTxn(_ context.Context, c *conn, req *kmsg.EndTxnRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	switch {
	case req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case !c.allowed(acl.Write, acl.TransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	default:
		err := c.s.txns.end(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = fencedCode(txnCode(err), req.Version, 2)
		if err != nil {
			c.s.log.Debug("kafka: EndTxn refused", "transactional_id", req.TransactionalID, "commit", req.Commit, "err", err)
		}
	}
	return reply{resp: resp}, nil
}
