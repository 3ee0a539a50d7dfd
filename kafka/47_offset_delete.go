package kafka

// OffsetDelete (key 47): version 0.
//
// Deletes a group's committed offsets of some partitions from the offset
// store, as Kafka's GroupCoordinator does: the partitions of a topic
// that the group's members are subscribed to get
// GROUP_SUBSCRIBED_TO_TOPIC and keep their offsets; a group with
// members that are not consumers (a protocol type other than
// "consumer", whose subscriptions the broker cannot read) is
// NON_EMPTY_GROUP; a group with neither members nor offsets is
// GROUP_ID_NOT_FOUND; a topic or partition that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION. A partition with no offset to delete
// succeeds. While the group rebalances, before a protocol is chosen,
// every protocol's subscription of every member counts. A KIP-848
// group's members' subscriptions (names and regex) count the same way.
//
// ACLs, as Kafka's KafkaApis.handleDeleteOffsetsRequest: Delete on the
// group (else GROUP_AUTHORIZATION_FAILED for the whole request), then
// Read on each topic (else TOPIC_AUTHORIZATION_FAILED for its
// partitions, whether it exists or not).

import (
	"context"
	"errors"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetDelete, 0, 0, offsetDelete) }

func offsetDelete(ctx context.Context, c *conn, req *kmsg.OffsetDeleteRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !c.allowed(acl.Delete, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	// codes is each partition's answer by topic; those left at −1 are
	// the coordinator's to decide.
	codes := map[string]map[int32]int16{}
	want := map[string][]int32{}
	for _, rt := range req.Topics {
		if codes[rt.Topic] == nil {
			codes[rt.Topic] = map[int32]int16{}
		}
		code := int16(-1)
		partitions := 0
		if !c.allowed(acl.Read, acl.Topic, rt.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		} else if t, err := c.s.db.Topic(rt.Topic); errors.Is(err, passbook.ErrUnknownTopic) {
			code = kerr.UnknownTopicOrPartition.Code
		} else if err != nil {
			code = errorCode(err)
		} else {
			partitions = t.Partitions()
		}
		for _, rp := range rt.Partitions {
			switch {
			case code >= 0:
				codes[rt.Topic][rp.Partition] = code
			case rp.Partition < 0 || int(rp.Partition) >= partitions:
				codes[rt.Topic][rp.Partition] = kerr.UnknownTopicOrPartition.Code
			default:
				codes[rt.Topic][rp.Partition] = -1
				want[rt.Topic] = append(want[rt.Topic], rp.Partition)
			}
		}
	}
	if code := c.s.groups.deleteOffsets(context.WithoutCancel(ctx), req.Group, want, codes); code != 0 {
		resp.ErrorCode = code
		return reply{resp: resp}, nil
	}
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetDeleteResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, codes[rt.Topic][rp.Partition]
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

// deleteOffsets deletes group's offsets of the partitions in want (by
// topic) that its members are not subscribed to, setting each one's code
// in codes, and returns the group's error code (0 if it may).
func (co *coordinator) deleteOffsets(ctx context.Context, name string, want map[string][]int32, codes map[string]map[int32]int16) int16 {
	if name == "" {
		return kerr.InvalidGroupID.Code
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groupLocked(name, false)
	cg := co.mu.cgroups[name]
	if (g == nil || len(g.members) == 0) && (cg == nil || len(cg.members) == 0) {
		list, err := co.store.List(ctx, offsets.Filter{Consumer: name})
		if err != nil {
			return co.storeErrorCode(err)
		}
		if len(list) == 0 {
			return kerr.GroupIDNotFound.Code
		}
	}
	subscribed := map[string]bool{}
	if g != nil && len(g.members) > 0 {
		if g.protocolType != "consumer" {
			return kerr.NonEmptyGroup.Code
		}
		for _, m := range g.members {
			for _, p := range m.protocols {
				if g.protocol != "" && p.Name != g.protocol {
					continue
				}
				var meta kmsg.ConsumerMemberMetadata
				if err := meta.ReadFrom(p.Metadata); err != nil {
					continue // unreadable: JoinGroup let it through, the leader decides
				}
				for _, t := range meta.Topics {
					subscribed[t] = true
				}
			}
		}
	}
	if cg != nil {
		for topic := range want {
			for _, m := range cg.members {
				if m.subscribes(topic) {
					subscribed[topic] = true
				}
			}
		}
	}
	var n int
	for topic, ps := range want {
		if subscribed[topic] {
			for _, p := range ps {
				codes[topic][p] = kerr.GroupSubscribedToTopic.Code
			}
			continue
		}
		deleted, err := co.store.Delete(ctx, offsets.Filter{Consumer: name, Topic: topic, Partitions: ps})
		code := int16(0)
		if err != nil {
			code = co.storeErrorCode(err)
		}
		for _, p := range ps {
			codes[topic][p] = code
		}
		n += deleted
	}
	if n > 0 {
		co.log.Info("kafka: deleted offsets", "group", name, "offsets", n)
	}
	return 0
}
