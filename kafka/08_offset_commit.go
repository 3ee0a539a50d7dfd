package kafka

// OffsetCommit (key 8): versions 0–10 (librdkafka wants 1–2 covered;
// v10 names topics by ID, translated to names before this handler and
// back after it: topicids.go, where an ID no topic has is
// UNKNOWN_TOPIC_ID).
//
// A Kafka group's committed offsets are the offset store's entries for
// the consumer named as the group: `passbook lag` and `passbook offsets`
// show them, an embedded consumer of that name reads them, and what it
// commits OffsetFetch returns. The commit is written through
// offsets.Store.CommitEntries (one transaction, with the metadata), as
// durable as the store's Synchronous option says (by default it survives
// the server being killed). Retention times (v2–v4) and timestamps (v1)
// are ignored: committed offsets are kept until deleted.
//
// Fencing follows Kafka: a commit with generation < 0 is a plain commit, allowed while the group has no members (a group
// that only stores offsets, or an admin tool); otherwise the member must
// be in the group (UNKNOWN_MEMBER_ID) at the group's generation
// (ILLEGAL_GENERATION: a member from before a rebalance may not move
// the offsets of partitions that are someone else's now), and not while
// the group waits for its leader's assignment (REBALANCE_IN_PROGRESS).
// A group the server does not know — it restarted, and forgot its
// members — refuses generations ≥ 0 with ILLEGAL_GENERATION, so its
// members join again. A KIP-848 group fences by member epoch instead
// (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID; see fenceConsumerCommitLocked
// in group848.go). Per partition: an unknown topic or partition gets
// UNKNOWN_TOPIC_OR_PARTITION, metadata over 4 KiB
// OFFSET_METADATA_TOO_LARGE, a negative offset INVALID_REQUEST (the
// store keeps offsets ≥ 0; "no offset" is no entry); the rest is
// committed.
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED for every
// partition), then Read on each topic (TOPIC_AUTHORIZATION_FAILED for
// its partitions; the others are committed).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetCommit, 0, 10, offsetCommit) }

func offsetCommit(ctx context.Context, c *conn, req *kmsg.OffsetCommitRequest) (reply, error) {
	// ACLs first, as Kafka: Read on the group for the whole request,
	// then Read on each topic; only the allowed topics go on.
	code := int16(0)
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		code = kerr.GroupAuthorizationFailed.Code
	}
	denied := map[int]bool{}
	allowed := *req
	allowed.Topics = nil
	for i, rt := range req.Topics {
		if code == 0 && c.allowed(acl.Read, acl.Topic, rt.Topic) {
			allowed.Topics = append(allowed.Topics, rt)
		} else {
			denied[i] = true
		}
	}
	var done *kmsg.OffsetCommitResponse
	if code == 0 && (len(allowed.Topics) > 0 || len(req.Topics) == 0) {
		// Not cut short by a shutdown: a commit that was read is answered.
		done = c.s.groups.commit(context.WithoutCancel(ctx), &allowed)
	}
	if len(denied) == 0 {
		return reply{resp: done}, nil
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	next := 0
	for i, rt := range req.Topics {
		if !denied[i] {
			resp.Topics = append(resp.Topics, done.Topics[next])
			next++
			continue
		}
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
			if code != 0 {
				p.ErrorCode = code
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}

func (co *coordinator) commit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, rt := range req.Topics {
		codes[i] = make([]int16, len(rt.Partitions))
	}
	defer func() {
		for i, rt := range req.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for j, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, codes[i][j]
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}()
	all := func(code int16) *kmsg.OffsetCommitResponse {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return resp
	}
	if req.Group == "" {
		return all(kerr.InvalidGroupID.Code)
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	// Also once the coordinator has closed, in a shutdown: a commit that
	// was read is still written (the offset store closes after the
	// server), so the member does not read its records again.
	if code, ok := co.fenceConsumerCommitLocked(req); ok { // a KIP-848 group: group848.go
		if code != 0 {
			return all(code)
		}
	} else if code := co.fenceCommitLocked(req.Group, req.MemberID, req.Generation); code != 0 {
		return all(code)
	}

	var entries []offsets.Entry
	type at struct{ i, j int }
	var where []at
	for i, rt := range req.Topics {
		n, err := co.partitions(rt.Topic)
		for j, rp := range rt.Partitions {
			switch {
			case err != nil || rp.Partition < 0 || int(rp.Partition) >= n:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxCommitMetadata:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			case rp.Offset < 0:
				codes[i][j] = kerr.InvalidRequest.Code
			default:
				e := offsets.Entry{Key: offsets.Key{Consumer: req.Group, Topic: rt.Topic, Partition: rp.Partition}, Offset: rp.Offset}
				if rp.Metadata != nil {
					e.Metadata = *rp.Metadata
				}
				entries = append(entries, e)
				where = append(where, at{i, j})
			}
		}
	}
	if len(entries) == 0 {
		return resp
	}
	if err := co.store.CommitEntries(ctx, entries); err != nil {
		code := co.storeErrorCode(fmt.Errorf("commit offsets of group %s: %w", req.Group, err))
		for _, w := range where {
			codes[w.i][w.j] = code
		}
	}
	return resp
}

// fenceCommitLocked decides whether a member at a generation may commit
// the group's offsets, and returns the error code if not.
func (co *coordinator) fenceCommitLocked(name, memberID string, generation int32) int16 {
	if cg := co.mu.cgroups[name]; cg != nil { // a KIP-848 group (TxnOffsetCommit): group848.go
		return cg.fenceMemberEpochLocked(memberID, generation)
	}
	g := co.groupLocked(name, false)
	if g == nil || len(g.members) == 0 {
		if generation < 0 {
			return 0 // a group that only stores offsets
		}
		if g == nil {
			return kerr.IllegalGeneration.Code
		}
		return kerr.UnknownMemberID.Code
	}
	m := g.members[memberID]
	switch {
	case g.state == stateCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	case m == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	m.touch()
	return 0
}
