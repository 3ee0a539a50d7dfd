package kafka

// InitProducerID (key 22): versions 0–5 (v5 only lets the answer be
// TRANSACTION_ABORTABLE).
//
// Gives an idempotent producer a new producer id, epoch 0, as Kafka does
// for a producer without a transactional id (also when it asks, v3+, to
// bump the epoch of the id it has). Ids come from the offset store's
// sequence "kafka-producer-id" (offsets.SQLite.NextID): fsync'd before
// the answer, so never handed out twice, even across a power loss.
// Advertising this API makes franz-go produce idempotently by default.
//
// With a transactional id it is the transaction coordinator's
// handleInitProducerId (txn.go): the id keeps one producer id, and each
// call bumps its epoch, fencing the producer that had it (its requests
// then get PRODUCER_FENCED — INVALID_PRODUCER_EPOCH before v4 — and its
// batches INVALID_PRODUCER_EPOCH). An ongoing transaction is aborted
// first and the call answered CONCURRENT_TRANSACTIONS, for the client to
// retry, as Kafka does; v3+ may name the producer id and epoch it has
// (KIP-360) to bump its own epoch after an error. transaction.timeout.ms
// must be in (0, transaction.max.timeout.ms] (INVALID_TRANSACTION_TIMEOUT).
// An empty transactional id is INVALID_REQUEST, as from Kafka.
//
// ACLs, Kafka 4's (KIP-679): an idempotent producer needs
// IdempotentWrite on the cluster or Write on some topic
// (CLUSTER_AUTHORIZATION_FAILED); a transactional one needs Write on its
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 5, initProducerID) }

func initProducerID(ctx context.Context, c *conn, req *kmsg.InitProducerIDRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return reply{resp: resp}, nil
	case req.TransactionalID != nil && !c.allowed(acl.Write, acl.TransactionalID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return reply{resp: resp}, nil
	case req.TransactionalID != nil:
		expectPID, expectEpoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			expectPID, expectEpoch = req.ProducerID, req.ProducerEpoch
		}
		pid, epoch, err := c.s.txns.initProducer(context.WithoutCancel(ctx), *req.TransactionalID, req.TransactionTimeoutMillis, expectPID, expectEpoch)
		if err != nil {
			resp.ErrorCode = fencedCode(txnCode(err), req.Version, 4)
			c.s.log.Debug("kafka: InitProducerID refused", "remote", c.remote, "transactional_id", *req.TransactionalID, "err", err)
			return reply{resp: resp}, nil
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		c.s.log.Debug("kafka: transactional producer", "remote", c.remote, "client", c.clientID, "transactional_id", *req.TransactionalID, "producer", pid, "epoch", epoch)
		return reply{resp: resp}, nil
	case !c.mayCluster(acl.IdempotentWrite) && !c.mayWriteSomeTopic():
		c.allowedCluster(acl.IdempotentWrite) // counted and logged
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	id, err := c.s.db.Offsets().NextID(context.WithoutCancel(ctx), offsets.KafkaProducerIDSequence)
	if err != nil {
		resp.ErrorCode = c.s.groups.storeErrorCode(err)
		return reply{resp: resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	c.s.log.Debug("kafka: new producer id", "remote", c.remote, "client", c.clientID, "producer", id)
	return reply{resp: resp}, nil
}
