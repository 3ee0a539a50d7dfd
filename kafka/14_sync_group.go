package kafka

// SyncGroup (key 14): versions 0–5.
//
// After a join, every member sends SyncGroup; the leader's carries the
// assignment it computed for every member. The broker does not read
// assignments, it relays them: members that sync before the leader wait
// for it (the response is deferred), later ones are answered at once. A
// member the leader left out gets an empty assignment. The generation
// must be the current one (ILLEGAL_GENERATION), the member known
// (UNKNOWN_MEMBER_ID), and no rebalance may have started since
// (REBALANCE_IN_PROGRESS). A member that does not sync within the
// rebalance timeout is removed and the group rebalances.
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SyncGroup, 0, 5, syncGroup) }

func syncGroup(_ context.Context, c *conn, req *kmsg.SyncGroupRequest) (reply, error) {
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	resp, w := c.s.groups.sync(req)
	if w == nil {
		return reply{resp: resp}, nil
	}
	return reply{resp: resp, wait: func(ctx context.Context) { c.s.groups.await(ctx, w) }}, nil
}

// sync handles a SyncGroup. A nil waiter means resp is complete.
func (co *coordinator) sync(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, *waiter) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(e *kerr.Error) (*kmsg.SyncGroupResponse, *waiter) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mu.closed {
		return fail(kerr.CoordinatorNotAvailable)
	}
	g := co.groupLocked(req.Group, false)
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	m := g.members[req.MemberID]
	switch {
	case g.fencedInstanceLocked(req.MemberID, req.InstanceID):
		return fail(kerr.FencedInstanceID)
	case m == nil:
		return fail(kerr.UnknownMemberID)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol)
	}
	m.touch()
	switch g.state {
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case stateCompletingRebalance:
		w := newWaiter(resp)
		answerError(m.sync, kerr.RebalanceInProgress.Code) // a repeated SyncGroup replaces the first
		m.sync = w
		g.syncedLocked(m)
		if m.id == g.leader {
			g.completeSyncLocked(req.GroupAssignment)
		}
		return resp, w
	case stateStable:
		g.syncedLocked(m)
		g.fillSyncLocked(m, resp)
		return resp, nil
	}
	return fail(kerr.UnknownMemberID)
}
