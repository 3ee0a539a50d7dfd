package kafka

// InitProducerID (key 22): versions 0–4.
//
// Gives an idempotent producer a new producer id, epoch 0, as Kafka does
// for a producer without a transactional id (also when it asks, v3+, to
// bump the epoch of the id it has). Ids come from the offset store's
// sequence "kafka-producer-id" (offsets.SQLite.NextID): fsync'd before
// the answer, so never handed out twice, even across a power loss.
// Advertising this API makes franz-go produce idempotently by default.
// Transactions are not served: a transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (an empty one, as Kafka, with
// INVALID_REQUEST).
//
// ACLs, Kafka 4's (KIP-679): an idempotent producer needs
// IdempotentWrite on the cluster or Write on some topic
// (CLUSTER_AUTHORIZATION_FAILED); a transactional one would need Write
// on its transactional id.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 4, initProducerID) }

func initProducerID(ctx context.Context, c *conn, req *kmsg.InitProducerIDRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return reply{resp: resp}, nil
	case req.TransactionalID != nil:
		c.allowed(acl.Write, acl.TransactionalID, *req.TransactionalID) // counted if denied
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
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
