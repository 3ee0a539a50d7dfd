package kafka

// LeaveGroup (key 13): versions 0–5.
//
// A member leaving (a consumer closing) is removed at once and the group
// rebalances without waiting for its session to time out. v0–v2 name one
// member; v3+ a list, each found by member id, or by instance id for a
// static member (both given, they must name the same member, else
// FENCED_INSTANCE_ID). A member not in the group gets UNKNOWN_MEMBER_ID.
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.LeaveGroup, 0, 5, leaveGroup) }

func leaveGroup(_ context.Context, c *conn, req *kmsg.LeaveGroupRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	codes, code := c.s.groups.leave(req.Group, leaving)
	resp.ErrorCode = code
	if req.Version < 3 {
		if code == 0 {
			resp.ErrorCode = codes[0]
		}
		return reply{resp: resp}, nil
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return reply{resp: resp}, nil
}

// leave removes members from a group, and returns an error code for
// each and one for the whole request.
func (co *coordinator) leave(name string, leaving []kmsg.LeaveGroupRequestMember) ([]int16, int16) {
	codes := make([]int16, len(leaving))
	if name == "" {
		return codes, kerr.InvalidGroupID.Code
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mu.closed {
		return codes, kerr.CoordinatorNotAvailable.Code
	}
	g := co.groupLocked(name, false)
	left := false
	for i, lm := range leaving {
		codes[i] = kerr.UnknownMemberID.Code
		if g == nil {
			continue
		}
		if g.fencedInstanceLocked(lm.MemberID, lm.InstanceID) {
			codes[i] = kerr.FencedInstanceID.Code
		} else if m := g.findLocked(lm.MemberID, lm.InstanceID); m != nil {
			co.log.Info("kafka: group member left", "group", name, "member", m.id)
			g.removeMemberLocked(m)
			codes[i], left = 0, true
		} else if m := g.pending[lm.MemberID]; m != nil && lm.MemberID != "" {
			m.stopTimer()
			delete(g.pending, m.id)
			codes[i], left = 0, true
		}
	}
	if left {
		g.memberLeftLocked()
	}
	return codes, 0
}

// findLocked returns the member with id memberID, or, when that is
// empty, the static member with instanceID.
func (g *group) findLocked(memberID string, instanceID *string) *member {
	if memberID != "" {
		return g.members[memberID]
	}
	if instanceID == nil {
		return nil
	}
	for _, m := range g.members {
		if m.instanceID != nil && *m.instanceID == *instanceID {
			return m
		}
	}
	return nil
}

// fencedInstanceLocked reports whether a request names a static
// member's instance id with another member id: an old incarnation of a
// restarted static member (Kafka's FENCED_INSTANCE_ID).
func (g *group) fencedInstanceLocked(memberID string, instanceID *string) bool {
	if instanceID == nil || memberID == "" {
		return false
	}
	m := g.findLocked("", instanceID)
	return m != nil && m.id != memberID
}
