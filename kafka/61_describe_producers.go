package kafka

// DescribeProducers (key 61): version 0.
//
// Per partition, the producers it knows (producers.go: those that wrote
// to it since the server started, and those found in the last
// Options.ProducerStateBytes of its log), each with its epoch, the
// sequence number of its last batch, that batch's max timestamp, the
// coordinator epoch (0 for a transactional producer: this broker has
// always been its coordinator; −1 for an idempotent one) and the first
// offset of its transaction open on the partition, −1 if none (from the
// storage engine's open transactions, which also name a producer whose
// open transaction began before the tail that was read). kafka-
// transactions.sh describe-producers and kadm's DescribeProducers read
// it to find a hanging transaction.
//
// ACLs: Read on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions), as Kafka.

import (
	"cmp"
	"context"
	"slices"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeProducers, 0, 0, describeProducers) }

func describeProducers(_ context.Context, c *conn, req *kmsg.DescribeProducersRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeProducersResponseTopic()
		t.Topic = rt.Topic
		allowed := c.allowed(acl.Read, acl.Topic, rt.Topic)
		topic, terr := c.s.db.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			switch {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case terr != nil:
				rp.ErrorCode = errorCode(terr)
			default:
				l, err := topic.Partition(p)
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
					break
				}
				rp.ActiveProducers = c.s.activeProducers(rt.Topic, p, l)
			}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

// activeProducers is DescribeProducers' answer for one partition.
func (s *Server) activeProducers(topic string, part int32, l *storage.Log) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	open := map[int64]int64{}
	for _, o := range l.OpenTxns() {
		open[o.ProducerID] = o.FirstOffset
	}
	var out []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	seen := map[int64]bool{}
	add := func(id int64, epoch int16, lastSeq int32, lastMs int64) {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = id, int32(epoch), lastSeq, lastMs
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, -1
		if s.txns.byPID(id) != nil {
			ap.CoordinatorEpoch = coordinatorEpoch
		}
		if first, ok := open[id]; ok {
			ap.CurrentTxnStartOffset = first
		}
		out = append(out, ap)
		seen[id] = true
	}
	for _, p := range s.producers.describe(topic, part, l) {
		add(p.id, p.epoch, p.lastSequence, p.lastMs)
	}
	for _, o := range l.OpenTxns() {
		if !seen[o.ProducerID] {
			add(o.ProducerID, o.ProducerEpoch, -1, -1)
		}
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeProducersResponseTopicPartitionActiveProducer) int {
		return cmp.Compare(a.ProducerID, b.ProducerID)
	})
	return out
}
