package kafka

// JoinGroup (key 11): versions 0–9.
//
// A member joins (or rejoins, to start or follow a rebalance) and waits
// for every member of the group; the response is deferred until the
// join completes (see groups.go). From v4 a member joining without a
// member id is given one with MEMBER_ID_REQUIRED and joins again with
// it, as Kafka does. Session timeouts outside
// [Options.GroupMinSessionTimeout, Options.GroupMaxSessionTimeout] get
// INVALID_SESSION_TIMEOUT; an empty protocol type or protocol list, or
// protocols no member shares, INCONSISTENT_GROUP_PROTOCOL. Static
// membership (group.instance.id) is accepted but the member is treated
// as dynamic: a restarted static member joins as a new member, and the
// old one leaves at its session timeout.
//
// ACLs: Read on the group (GROUP_AUTHORIZATION_FAILED), as for
// SyncGroup, Heartbeat and LeaveGroup.

import (
	"context"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.JoinGroup, 0, 9, joinGroup) }

func joinGroup(_ context.Context, c *conn, req *kmsg.JoinGroupRequest) (reply, error) {
	if !c.allowed(acl.Read, acl.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.Generation, resp.MemberID, resp.ErrorCode = -1, req.MemberID, kerr.GroupAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	resp, w := c.s.groups.join(req, c.clientID, c.clientHost())
	if w == nil {
		return reply{resp: resp}, nil
	}
	return reply{resp: resp, wait: func(ctx context.Context) { c.s.groups.await(ctx, w) }}, nil
}

// join handles a JoinGroup. A nil waiter means resp is complete; else
// resp is filled in when the waiter is answered.
func (co *coordinator) join(req *kmsg.JoinGroupRequest, client, host string) (*kmsg.JoinGroupResponse, *waiter) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = -1
	fail := func(e *kerr.Error) (*kmsg.JoinGroupResponse, *waiter) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	switch {
	case req.Group == "":
		return fail(kerr.InvalidGroupID)
	case session < co.minSession || session > co.maxSession:
		return fail(kerr.InvalidSessionTimeout)
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return fail(kerr.InconsistentGroupProtocol)
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mu.closed {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if cg := co.mu.cgroups[req.Group]; cg != nil {
		if len(cg.members) > 0 {
			// Kafka lets classic members into a consumer group only with
			// online migration; we do not (see group848.go).
			return fail(kerr.InconsistentGroupProtocol)
		}
		if req.MemberID == "" {
			delete(co.mu.cgroups, req.Group) // empty: it becomes a classic group
		}
	}
	g := co.groupLocked(req.Group, req.MemberID == "")
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	w := newWaiter(resp)

	if req.MemberID == "" {
		if !g.supportsLocked(nil, req.ProtocolType, req.Protocols) {
			return fail(kerr.InconsistentGroupProtocol)
		}
		m := g.newMemberLocked(newMemberID(client), req, client, host)
		if req.Version >= 4 {
			g.addPendingLocked(m)
			resp.MemberID = m.id
			return fail(kerr.MemberIDRequired)
		}
		resp.MemberID = m.id
		g.addMemberLocked(m, req.ProtocolType, w)
		return resp, w
	}
	if m := g.pending[req.MemberID]; m != nil {
		if !g.supportsLocked(nil, req.ProtocolType, req.Protocols) {
			return fail(kerr.InconsistentGroupProtocol)
		}
		delete(g.pending, m.id)
		m.update(req)
		resp.MemberID = m.id
		g.addMemberLocked(m, req.ProtocolType, w)
		return resp, w
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID)
	}
	if !g.supportsLocked(m, req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	resp.MemberID = m.id
	switch g.state {
	case statePreparingRebalance:
		g.rejoinLocked(m, req, w)
		g.tryCompleteJoinLocked()
		return resp, w
	case stateCompletingRebalance, stateStable:
		if m.sameProtocols(req.Protocols) && (g.state == stateCompletingRebalance || m.id != g.leader) {
			// The member lost our answer: the same again, and no
			// rebalance for nothing.
			m.touch()
			g.fillJoinLocked(m, resp)
			return resp, nil
		}
		g.rejoinLocked(m, req, w)
		g.prepareRebalanceLocked()
		return resp, w
	}
	return fail(kerr.UnknownMemberID)
}
