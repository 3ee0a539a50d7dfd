package kafka

// DeleteRecords (key 21): versions 0–2.
//
// Moves each partition's log start offset up to the offset given
// (passbook.Topic.DeleteRecords: fsync'd when answered, segments wholly
// below it deleted), −1 meaning the high watermark, and answers the new
// start as the low watermark. As Kafka's ReplicaManager: an offset past
// the high watermark, or negative other than −1, is OFFSET_OUT_OF_RANGE;
// one at or below the start changes nothing and answers the start; a
// topic whose cleanup.policy is compact alone is POLICY_VIOLATION (only
// delete, or compact,delete, lets records be deleted). A fetch below the
// new start is then OFFSET_OUT_OF_RANGE, as below retention's, so a
// consumer's auto.offset.reset applies, and ListOffsets EARLIEST answers
// it. The timeout is not used: the answer waits for the fsync.
//
// ACLs: Delete on each topic (TOPIC_AUTHORIZATION_FAILED for each of its
// partitions).

import (
	"context"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteRecords, 0, 2, deleteRecords) }

func deleteRecords(_ context.Context, c *conn, req *kmsg.DeleteRecordsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		var topic *passbook.Topic
		terr := errTopicDenied
		if c.allowed(acl.Delete, acl.Topic, rt.Topic) {
			topic, terr = c.s.db.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition, p.LowWatermark = rp.Partition, -1
			switch {
			case terr != nil:
				p.ErrorCode = errorCode(terr)
			case topic.Config().CleanupPolicy == passbook.CleanupCompact:
				p.ErrorCode = kerr.PolicyViolation.Code
			case rp.Offset < 0 && rp.Offset != passbook.HighWatermark:
				p.ErrorCode = kerr.OffsetOutOfRange.Code
			default:
				start, err := topic.DeleteRecords(rp.Partition, rp.Offset)
				p.ErrorCode = errorCode(err)
				if err == nil {
					p.LowWatermark = start
					c.s.log.Info("kafka: deleted records", "topic", rt.Topic, "partition", rp.Partition, "log_start_offset", start)
				} else if p.ErrorCode == kerr.UnknownServerError.Code {
					// LOGSTART could not be written (a full or failed
					// disk): the start did not move.
					p.ErrorCode = kerr.KafkaStorageError.Code
					c.s.log.Warn("kafka: delete records", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}
