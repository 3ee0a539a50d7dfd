package kafka

// OffsetForLeaderEpoch (key 23): versions 0–4.
//
// One broker, one leader epoch: every partition is at leaderEpoch (0)
// from its first offset, as Metadata, Fetch and ListOffsets say. The
// answer is Kafka's (Partition.lastOffsetForLeaderEpoch over a leader
// epoch cache holding the one epoch):
//
//   - current_leader_epoch (v2+) −1 skips the check; one below the
//     broker's is FENCED_LEADER_EPOCH (the client's metadata is older
//     than the leader), one above is UNKNOWN_LEADER_EPOCH (newer than
//     the broker knows).
//   - leader_epoch 0, the current one, ends at the high watermark: epoch
//     0, end offset the head.
//   - leader_epoch −1, or any above 0 (an epoch the broker never had), is
//     epoch −1, end offset −1 (UNDEFINED_EPOCH_OFFSET).
//   - a leader_epoch below −1, below the earliest, is that epoch with the
//     log start offset, where epoch 0 begins now.
//
// ACLs: ClusterAction on the cluster (a follower's request) or Describe on
// the topic (TOPIC_AUTHORIZATION_FAILED for each of its partitions).

import (
	"context"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, offsetForLeaderEpoch) }

func offsetForLeaderEpoch(_ context.Context, c *conn, req *kmsg.OffsetForLeaderEpochRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	cluster := c.mayCluster(acl.ClusterAction)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		var topic *passbook.Topic
		terr := errTopicDenied
		if cluster || c.allowed(acl.Describe, acl.Topic, rt.Topic) {
			topic, terr = c.s.db.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition, p.LeaderEpoch, p.EndOffset = rp.Partition, -1, -1
			if terr != nil {
				p.ErrorCode = errorCode(terr)
				t.Partitions = append(t.Partitions, p)
				continue
			}
			l, err := topic.Partition(rp.Partition)
			switch {
			case err != nil:
				p.ErrorCode = errorCode(err)
			case req.Version >= 2 && rp.CurrentLeaderEpoch != -1 && rp.CurrentLeaderEpoch < leaderEpoch:
				p.ErrorCode = kerr.FencedLeaderEpoch.Code
			case req.Version >= 2 && rp.CurrentLeaderEpoch > leaderEpoch:
				p.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == leaderEpoch:
				p.LeaderEpoch, p.EndOffset = leaderEpoch, l.Head()
			case rp.LeaderEpoch < -1:
				p.LeaderEpoch, p.EndOffset = rp.LeaderEpoch, l.StartOffset()
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}
