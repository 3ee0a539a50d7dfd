package kafka

// DescribeTopicPartitions (key 75): version 0.
//
// The topics named (or, with none named, every topic the client may
// Describe, others left out in silence), by name, each with its topic ID
// and partitions as Metadata describes them (leader NodeID, leader epoch
// 0, replicas and ISR [NodeID], no eligible leader replicas, none
// offline), paged as Kafka's broker pages them: at most
// response_partition_limit partitions (and never more than 2,000, Kafka's
// max.request.partition.size.limit) in one response, starting at the
// cursor's topic and partition; when partitions are left, next_cursor
// names the first of them. A named topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name no topic
// can have); a cursor with a negative partition is INVALID_REQUEST for
// every topic named.
//
// ACLs: Describe on each topic (TOPIC_AUTHORIZATION_FAILED for a topic
// named, listed after the others, with no ID); topic_authorized_operations
// are the client's operations on each topic.

import (
	"context"
	"slices"
	"strings"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeTopicPartitions, 0, 0, describeTopicPartitions) }

// maxDescribePartitions is Kafka's max.request.partition.size.limit.
const maxDescribePartitions = 2000

func describeTopicPartitions(_ context.Context, c *conn, req *kmsg.DescribeTopicPartitionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	if req.Cursor != nil && req.Cursor.Partition < 0 {
		// Kafka's InvalidRequestException: each topic named fails.
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeTopicPartitionsResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(rt.Topic), kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, t)
		}
		return reply{resp: resp}, nil
	}
	from := ""
	if req.Cursor != nil {
		from = req.Cursor.Topic
	}
	all := len(req.Topics) == 0
	var names []string
	if all {
		for _, t := range c.s.db.Topics() {
			names = append(names, t.Name())
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.Compare(n, from) < 0 })
	remaining := min(int(req.ResponsePartitionLimit), maxDescribePartitions)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if all && !c.may(acl.Describe, acl.Topic, name) {
			continue // listed only if the client may see it, as Metadata
		}
		if !all && !c.allowed(acl.Describe, acl.Topic, name) {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			denied = append(denied, rt)
			continue
		}
		if remaining <= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		t, err := c.s.db.Topic(name)
		if err != nil {
			if all {
				continue // deleted meanwhile
			}
			rt.ErrorCode = errorCode(err)
			if passbook.ValidTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.ID()
		rt.AuthorizedOperations = c.authorizedOperations(acl.Topic, name)
		first := 0
		if req.Cursor != nil && name == req.Cursor.Topic {
			first = int(req.Cursor.Partition)
		}
		n := t.Partitions()
		end := min(n, first+remaining)
		for p := first; p < end; p++ {
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.LeaderEpoch = int32(p), NodeID, leaderEpoch
			rp.Replicas, rp.ISR = []int32{NodeID}, []int32{NodeID}
			rp.EligibleLeaderReplicas, rp.LastKnownELR, rp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if end < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(end)}
			break
		}
		remaining -= max(end-first, 0)
	}
	resp.Topics = append(resp.Topics, denied...)
	return reply{resp: resp}, nil
}
