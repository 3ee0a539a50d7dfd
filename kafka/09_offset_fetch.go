package kafka

// OffsetFetch (key 9): versions 0–10 (v10 names topics by ID, translated
// to names before this handler and back after it: topicids.go).
//
// Reads a group's committed offsets from the offset store — whatever
// wrote them: a Kafka client's OffsetCommit, an embedded consumer of the
// same name, `passbook offsets set`. A partition with nothing committed
// gets offset −1 and no error, as from Kafka; a null topic list (v2+)
// asks for every committed offset of the group. v8+ asks for several
// groups at once. With require_stable (v7+, KIP-447), a partition whose
// offsets an ongoing transaction holds (TxnOffsetCommit, not yet
// committed or aborted) gets UNSTABLE_OFFSET_COMMIT and offset −1: the
// client retries until the transaction ends, and so never starts from
// an offset about to move. Without it, the offset committed so far is
// returned. Leader epochs are −1. From v9 a
// member of a KIP-848 group reads at its member epoch (UNKNOWN_MEMBER_ID,
// STALE_MEMBER_EPOCH; fenceConsumerOffsetFetch in group848.go).
//
// ACLs: Describe on the group (GROUP_AUTHORIZATION_FAILED), Describe on
// each topic asked for (TOPIC_AUTHORIZATION_FAILED for its partitions);
// asked for every topic, only those the client may Describe.

import (
	"context"
	"errors"
	"slices"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetFetch, 0, 10, offsetFetch) }

func offsetFetch(ctx context.Context, c *conn, req *kmsg.OffsetFetchRequest) (reply, error) {
	ctx = context.WithoutCancel(ctx)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		topics, code := c.fetchOffsets(ctx, req.Group, req.Topics)
		if req.RequireStable {
			c.s.txns.markUnstable(req.Group, topics)
		}
		resp.Topics, resp.ErrorCode = topics, code
		if req.Version < 2 && code != 0 {
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
		return reply{resp: resp}, nil
	}
	for _, rg := range req.Groups {
		var want []kmsg.OffsetFetchRequestTopic
		if rg.Topics != nil {
			want = []kmsg.OffsetFetchRequestTopic{}
			for _, rt := range rg.Topics {
				want = append(want, kmsg.OffsetFetchRequestTopic{Topic: rt.Topic, Partitions: rt.Partitions})
			}
		}
		topics, code := c.fetchOffsets(ctx, rg.Group, want)
		if code == 0 && req.Version >= 9 {
			// A KIP-848 group's member reads at its epoch (group848.go).
			if code = c.s.groups.fenceConsumerOffsetFetch(rg.Group, rg.MemberID, rg.MemberEpoch); code != 0 {
				topics = nil
			}
		}
		if req.RequireStable {
			c.s.txns.markUnstable(rg.Group, topics)
		}
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group, g.ErrorCode = rg.Group, code
		for _, t := range topics {
			gt := kmsg.NewOffsetFetchResponseGroupTopic()
			gt.Topic = t.Topic
			for _, p := range t.Partitions {
				gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				gt.Partitions = append(gt.Partitions, gp)
			}
			g.Topics = append(g.Topics, gt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return reply{resp: resp}, nil
}

// fetchOffsets is the coordinator's fetchOffsets behind the ACLs:
// Describe on the group, else GROUP_AUTHORIZATION_FAILED; Describe on
// each topic asked for, else TOPIC_AUTHORIZATION_FAILED and offset −1 for
// its partitions; of every committed offset (want nil), those of the
// topics the client may Describe.
func (c *conn) fetchOffsets(ctx context.Context, group string, want []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if !c.allowed(acl.Describe, acl.Group, group) {
		var out []kmsg.OffsetFetchResponseTopic // the partitions asked for, at −1
		for _, rt := range want {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
				t.Partitions = append(t.Partitions, rp)
			}
			out = append(out, t)
		}
		return out, kerr.GroupAuthorizationFailed.Code
	}
	if want == nil {
		topics, code := c.s.groups.fetchOffsets(ctx, group, nil)
		return slices.DeleteFunc(topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !c.may(acl.Describe, acl.Topic, t.Topic) }), code
	}
	var allowed []kmsg.OffsetFetchRequestTopic
	denied := map[int]bool{}
	for i, rt := range want {
		if c.allowed(acl.Describe, acl.Topic, rt.Topic) {
			allowed = append(allowed, rt)
		} else {
			denied[i] = true
		}
	}
	var got []kmsg.OffsetFetchResponseTopic
	code := int16(0)
	if len(allowed) > 0 {
		got, code = c.s.groups.fetchOffsets(ctx, group, allowed)
	}
	if len(denied) == 0 {
		return got, code
	}
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(want))
	next := 0
	for i, rt := range want {
		if !denied[i] {
			out = append(out, got[next])
			next++
			continue
		}
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
			t.Partitions = append(t.Partitions, rp)
		}
		out = append(out, t)
	}
	return out, code
}

// fetchOffsets reads the offsets group committed on the partitions asked
// for, or on every partition when want is nil. The error code is for the
// whole group.
func (co *coordinator) fetchOffsets(ctx context.Context, group string, want []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, int16) {
	part := func(p int32, e *offsets.Entry) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, kmsg.StringPtr("")
		if e != nil {
			rp.Offset, rp.Metadata = e.Offset, kmsg.StringPtr(e.Metadata)
		}
		return rp
	}
	var out []kmsg.OffsetFetchResponseTopic
	if want == nil {
		if group == "" { // not every consumer's offsets
			return nil, 0
		}
		list, err := co.store.List(ctx, offsets.Filter{Consumer: group})
		if err != nil {
			return nil, co.storeErrorCode(err)
		}
		for i := range list {
			e := &list[i]
			if len(out) == 0 || out[len(out)-1].Topic != e.Topic {
				t := kmsg.NewOffsetFetchResponseTopic()
				t.Topic = e.Topic
				out = append(out, t)
			}
			t := &out[len(out)-1]
			t.Partitions = append(t.Partitions, part(e.Partition, e))
		}
		return out, 0
	}
	code := int16(0)
	for _, rt := range want {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = rt.Topic
		committed := map[int32]*offsets.Entry{}
		if group != "" && rt.Topic != "" && code == 0 {
			list, err := co.store.List(ctx, offsets.Filter{Consumer: group, Topic: rt.Topic})
			if err != nil {
				code = co.storeErrorCode(err)
			}
			for i := range list {
				committed[list[i].Partition] = &list[i]
			}
		}
		for _, p := range rt.Partitions {
			t.Partitions = append(t.Partitions, part(p, committed[p]))
		}
		out = append(out, t)
	}
	return out, code
}

// storeErrorCode maps an offset store failure to a Kafka error code: a
// store closing under a shutdown sends the client to find the
// coordinator again.
func (co *coordinator) storeErrorCode(err error) int16 {
	if errors.Is(err, offsets.ErrClosed) || errors.Is(err, context.Canceled) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if errors.Is(err, offsets.ErrUnavailable) {
		// The store can no longer make a commit durable (it logged why,
		// once): retriable, as Kafka answers when it cannot append to
		// __consumer_offsets; the client retries, and finds the
		// coordinator again once the server is restarted.
		return kerr.CoordinatorNotAvailable.Code
	}
	co.log.Warn("kafka: offset store failed", "err", err)
	return kerr.UnknownServerError.Code
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT for the partitions of
// topics whose offsets of group a transaction holds.
func (tc *txnCoordinator) markUnstable(group string, topics []kmsg.OffsetFetchResponseTopic) {
	held := tc.unstable(group)
	if len(held) == 0 {
		return
	}
	for i := range topics {
		for j := range topics[i].Partitions {
			p := &topics[i].Partitions[j]
			if p.ErrorCode == 0 && held[partitionKey{topics[i].Topic, p.Partition}] {
				p.Offset, p.Metadata, p.ErrorCode = -1, kmsg.StringPtr(""), kerr.UnstableOffsetCommit.Code
			}
		}
	}
}
