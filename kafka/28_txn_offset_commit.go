package kafka

// TxnOffsetCommit (key 28): versions 0–4.
//
// The offsets a transaction commits for a group, once AddOffsetsToTxn
// has added the group to it (INVALID_TXN_STATE otherwise). They are held
// by the transaction — written to the transaction log before the answer,
// so a restart does not lose them — and applied to the group's committed
// offsets only when the transaction commits (txn.go); an abort drops
// them. Meanwhile OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for those partitions (KIP-447). v3+ names the
// member and its generation: they are checked as OffsetCommit checks
// them (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS;
// a group the server does not know refuses generations ≥ 0 with
// ILLEGAL_GENERATION), so a zombie of an old generation cannot commit
// through a transaction either (KIP-447). The producer checks are
// AddPartitionsToTxn's: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3), CONCURRENT_TRANSACTIONS. Per
// partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE (over
// 4 KiB), INVALID_REQUEST for a negative offset. v5 (KIP-890's implicit
// AddOffsetsToTxn) belongs to transaction.version 2, not advertised.
//
// ACLs: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// Read on the group (GROUP_AUTHORIZATION_FAILED), each for every
// partition; Read on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions; the others are committed).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 4, txnOffsetCommit) }

func txnOffsetCommit(_ context.Context, c *conn, req *kmsg.TxnOffsetCommitRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, rt := range req.Topics {
		codes[i] = make([]int16, len(rt.Partitions))
	}
	defer func() {
		for i, rt := range req.Topics {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for j, rp := range rt.Partitions {
				p := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, codes[i][j]
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}()
	all := func(code int16) (reply, error) {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return reply{resp: resp}, nil
	}
	switch {
	case req.TransactionalID == "":
		return all(kerr.InvalidRequest.Code)
	case !c.allowed(acl.Write, acl.TransactionalID, req.TransactionalID):
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	case !c.allowed(acl.Read, acl.Group, req.Group):
		return all(kerr.GroupAuthorizationFailed.Code)
	case req.Group == "":
		return all(kerr.InvalidGroupID.Code)
	}
	var offs []txnOffset
	for i, rt := range req.Topics {
		if !c.allowed(acl.Read, acl.Topic, rt.Topic) {
			for j := range codes[i] {
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			}
			continue
		}
		n, err := c.s.groups.partitions(rt.Topic)
		for j, rp := range rt.Partitions {
			switch {
			case err != nil || rp.Partition < 0 || int(rp.Partition) >= n:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxCommitMetadata:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			case rp.Offset < 0:
				codes[i][j] = kerr.InvalidRequest.Code
			default:
				o := txnOffset{Group: req.Group, Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				offs = append(offs, o)
			}
		}
	}
	if len(offs) == 0 && len(req.Topics) > 0 {
		return reply{resp: resp}, nil // every partition refused on its own, as Kafka answers
	}
	fence := func() int16 {
		if req.Version < 3 || req.MemberID == "" && req.Generation < 0 {
			return 0 // no member named: a producer outside the group, as before KIP-447
		}
		co := c.s.groups
		co.mu.Lock()
		defer co.mu.Unlock()
		return co.fenceCommitLocked(req.Group, req.MemberID, req.Generation)
	}
	code, err := c.s.txns.commitOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, offs, fence)
	if err != nil {
		code = fencedCode(txnCode(err), req.Version, 3)
		c.s.log.Debug("kafka: TxnOffsetCommit refused", "transactional_id", req.TransactionalID, "group", req.Group, "err", err)
	}
	if code != 0 {
		// The partitions refused on their own keep their codes.
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
	}
	return reply{resp: resp}, nil
}
