package kafka

// AddPartitionsToTxn (key 24): versions 0–5.
//
// v0–v3 (producers): the partitions join the ongoing transaction of the
// transactional id, which begins with the first of them (txn.go). The
// producer id must be the id's (INVALID_PRODUCER_ID_MAPPING) at its
// current epoch (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v2),
// and not while a transaction is being completed
// (CONCURRENT_TRANSACTIONS). v4+ is Kafka's broker-to-coordinator form
// (KIP-890): several transactions at once, each either added as above or,
// with verify_only, checked: NONE for a partition in the transaction,
// INVALID_TXN_STATE for one that is not. v5 adds no field (its clients
// understand TRANSACTION_ABORTABLE, which this broker never needs).
//
// Per partition, as Kafka: a topic the client may not Write is
// TOPIC_AUTHORIZATION_FAILED and a topic or partition that does not
// exist UNKNOWN_TOPIC_OR_PARTITION; either leaves the others
// OPERATION_NOT_ATTEMPTED, and nothing is added.
//
// ACLs: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// for every partition), Write on each topic; v4+ needs ClusterAction on
// the cluster (CLUSTER_AUTHORIZATION_FAILED), as it is meant for brokers.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, addPartitionsToTxn) }

// txnTopics is one transaction's partitions, as a request names them.
type txnTopics []txnTopic

type txnTopic struct {
	topic string
	parts []int32
}

func addPartitionsToTxn(_ context.Context, c *conn, req *kmsg.AddPartitionsToTxnRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var tt txnTopics
		for _, rt := range req.Topics {
			tt = append(tt, txnTopic{rt.Topic, rt.Partitions})
		}
		codes := c.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tt, false, req.Version)
		for i, rt := range req.Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for j, p := range rt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return reply{resp: resp}, nil
	}
	if !c.allowedCluster(acl.ClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	for _, tx := range req.Transactions {
		var tt txnTopics
		for _, rt := range tx.Topics {
			tt = append(tt, txnTopic{rt.Topic, rt.Partitions})
		}
		codes := c.addPartitions(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tt, tx.VerifyOnly, req.Version)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, rt := range tx.Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			t.Topic = rt.Topic
			for j, p := range rt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				t.Partitions = append(t.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, t)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return reply{resp: resp}, nil
}

// addPartitions adds (or with verify, checks) one transaction's
// partitions and returns each one's error code, indexed as tt.
func (c *conn) addPartitions(id string, pid int64, epoch int16, tt txnTopics, verify bool, version int16) [][]int16 {
	codes := make([][]int16, len(tt))
	all := func(code int16) [][]int16 {
		for i := range tt {
			codes[i] = make([]int16, len(tt[i].parts))
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	if !c.allowed(acl.Write, acl.TransactionalID, id) {
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	failed := false
	var keys []partitionKey
	for i, t := range tt {
		codes[i] = make([]int16, len(t.parts))
		denied := !c.allowed(acl.Write, acl.Topic, t.topic)
		n := -1
		if !denied {
			if topic, err := c.s.db.Topic(t.topic); err == nil {
				n = topic.Partitions()
			}
		}
		for j, p := range t.parts {
			switch {
			case denied:
				codes[i][j], failed = kerr.TopicAuthorizationFailed.Code, true
			case p < 0 || int(p) >= n:
				codes[i][j], failed = kerr.UnknownTopicOrPartition.Code, true
			default:
				keys = append(keys, partitionKey{t.topic, p})
			}
		}
	}
	if failed {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = kerr.OperationNotAttempted.Code
				}
			}
		}
		return codes
	}
	if verify {
		in, err := c.s.txns.verifyPartitions(id, pid, epoch, keys)
		if err != nil {
			return all(fencedCode(txnCode(err), version, 2))
		}
		k := 0
		for i := range codes {
			for j := range codes[i] {
				if !in[k] {
					codes[i][j] = kerr.InvalidTxnState.Code
				}
				k++
			}
		}
		return codes
	}
	if err := c.s.txns.addPartitions(id, pid, epoch, keys); err != nil {
		c.s.log.Debug("kafka: AddPartitionsToTxn refused", "transactional_id", id, "err", err)
		return all(fencedCode(txnCode(err), version, 2))
	}
	return codes
}
