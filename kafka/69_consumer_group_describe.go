package kafka

// ConsumerGroupDescribe (key 69): versions 0–1 (KIP-848).
//
// A consumer-protocol group's state (Empty, Assigning, Reconciling,
// Stable), its group and assignment epochs, its assignor and each
// member's epoch, subscription, current and target assignment. A name
// that is not a consumer group gets GROUP_ID_NOT_FOUND, as from Kafka
// (a classic group: "is not a consumer group").
//
// ACLs: Describe on each group (GROUP_AUTHORIZATION_FAILED for it); its
// authorized operations are filled in when asked for.

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, consumerGroupDescribe) }

func consumerGroupDescribe(_ context.Context, c *conn, req *kmsg.ConsumerGroupDescribeRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range req.Groups {
		var g kmsg.ConsumerGroupDescribeResponseGroup
		if !c.allowed(acl.Describe, acl.Group, name) {
			g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		} else {
			g = c.s.groups.describeConsumerGroup(name, req.Version)
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = c.authorizedOperations(acl.Group, name)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return reply{resp: resp}, nil
}

// describeConsumerGroup describes one consumer group.
func (co *coordinator) describeConsumerGroup(name string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = name
	fail := func(e *kerr.Error, msg string) kmsg.ConsumerGroupDescribeResponseGroup {
		d.ErrorCode, d.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		return d
	}
	if name == "" {
		return fail(kerr.InvalidGroupID, "GroupId can't be empty.")
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.mu.cgroups[name]
	if g == nil {
		if co.mu.groups[name] != nil {
			return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", name))
		}
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", name))
	}
	d.State, d.Epoch, d.AssignmentEpoch = g.stateLocked(), g.epoch, g.assignmentEpoch
	d.AssignorName = g.assignor
	if d.AssignorName == "" {
		d.AssignorName = g.preferredAssignorLocked()
	}
	for _, m := range g.sortedMembersLocked() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = append([]string{}, m.topics...)
		if m.regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
		}
		dm.Assignment = g.describeAssignment(m.assigned)
		dm.TargetAssignment = g.describeAssignment(g.target[m.id])
		if version >= 1 {
			dm.MemberType = 1 // the consumer protocol
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
