package kafka

// Heartbeat (key 12): versions 0–4.
//
// A member's heartbeat keeps its session alive (any of its group
// requests does). The answer tells it what to do: nothing (NONE), join
// again (REBALANCE_IN_PROGRESS), or start over as a new member
// (UNKNOWN_MEMBER_ID — it was removed, or the server restarted and
// forgot its groups — or ILLEGAL_GENERATION). A static member replaced
// by its next incarnation gets FENCED_INSTANCE_ID.
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Heartbeat, 0, 4, heartbeat) }

func heartbeat(_ context.Context, c *conn, req *kmsg.HeartbeatRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	resp.ErrorCode = c.s.groups.heartbeat(req.Group, req.MemberID, req.InstanceID, req.Generation)
	return reply{resp: resp}, nil
}

// heartbeat handles a Heartbeat and returns its error code.
func (co *coordinator) heartbeat(name, memberID string, instanceID *string, generation int32) int16 {
	if name == "" {
		return kerr.InvalidGroupID.Code
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mu.closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	g := co.groupLocked(name, false)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	m := g.members[memberID]
	switch {
	case g.fencedInstanceLocked(memberID, instanceID):
		return kerr.FencedInstanceID.Code
	case m == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	m.touch()
	switch g.state {
	case statePreparingRebalance:
		return kerr.RebalanceInProgress.Code
	case stateCompletingRebalance, stateStable:
		return 0
	}
	return kerr.UnknownMemberID.Code
}
