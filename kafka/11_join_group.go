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
// protocols no member shares, INCONSISTENT_GROUP_PROTOCOL.
//
// Static membership (KIP-345, group.instance.id) as Kafka's: a static
// member joins without MEMBER_ID_REQUIRED. One joining with no member id
// while its instance id is a member's is that member restarted: it takes
// the old member's place (its assignment, its leadership) under a new
// member id, and the old id is fenced (FENCED_INSTANCE_ID to its parked
// and later requests). In a stable group, with a protocol that does not
// change the group's, that is all: no rebalance, the others keep their
// generation and partitions, and the member's SyncGroup gets its old
// assignment (a leader's JoinGroup v9 says skip_assignment). A request
// naming an instance id with another member's id gets
// FENCED_INSTANCE_ID. A static member still leaves at its session
// timeout, or by LeaveGroup naming its instance id.
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

	if req.InstanceID != nil {
		if old := g.findLocked("", req.InstanceID); old != nil {
			if req.MemberID == "" {
				if !g.supportsLocked(old, req.ProtocolType, req.Protocols) {
					return fail(kerr.InconsistentGroupProtocol)
				}
				return g.replaceStaticLocked(old, req, client, host, resp, w)
			}
			if old.id != req.MemberID {
				return fail(kerr.FencedInstanceID)
			}
		}
	}
	if req.MemberID == "" {
		if !g.supportsLocked(nil, req.ProtocolType, req.Protocols) {
			return fail(kerr.InconsistentGroupProtocol)
		}
		m := g.newMemberLocked(newMemberID(client), req, client, host)
		if req.Version >= 4 && req.InstanceID == nil {
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

// replaceStaticLocked handles a restarted static member: a JoinGroup
// with no member id and the instance id of old. The new member takes
// old's place; old's parked requests are answered FENCED_INSTANCE_ID.
// In a stable group whose protocol stays the same it is answered at
// once, with no rebalance (Kafka's
// updateStaticMemberThenRebalanceOrCompleteJoin).
func (g *group) replaceStaticLocked(old *member, req *kmsg.JoinGroupRequest, client, host string, resp *kmsg.JoinGroupResponse, w *waiter) (*kmsg.JoinGroupResponse, *waiter) {
	m := &member{id: newMemberID(client), instanceID: req.InstanceID, clientID: client, clientHost: host, seq: old.seq,
		protocols: old.protocols, session: old.session, rebalance: old.rebalance, assignment: old.assignment}
	old.stopTimer()
	if old.join != nil {
		g.awaitingJoin--
	}
	answerError(old.join, kerr.FencedInstanceID.Code)
	answerError(old.sync, kerr.FencedInstanceID.Code)
	old.join, old.sync = nil, nil
	delete(g.members, old.id)
	g.members[m.id] = m
	if g.leader == old.id {
		g.leader = m.id
	}
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[m.id] = true
	}
	g.co.log.Info("kafka: static group member rejoined under a new member id; the old one is fenced", "group", g.name,
		"instance", *req.InstanceID, "member", m.id, "replaces", old.id, "state", g.state.String())
	m.update(req)
	m.touch()
	m.timer = g.co.afterFunc(m.session, func() { g.expireLocked(m) })
	resp.MemberID = m.id
	switch g.state {
	case stateStable:
		if g.selectProtocolLocked() == g.protocol {
			// No rebalance: the member goes on where its previous
			// incarnation was.
			g.fillJoinLocked(m, resp)
			resp.SkipAssignment = false
			if m.id == g.leader {
				if req.Version >= 9 {
					resp.SkipAssignment = true // the leader, told not to assign
				} else {
					// Before v9 it could not be told: it is not named
					// leader, so it does not assign (as Kafka).
					resp.LeaderID, resp.Members = old.id, nil
				}
			}
			return resp, nil
		}
		g.co.log.Info("kafka: static member rejoined with a change of protocol; rebalancing", "group", g.name, "member", m.id)
		m.join = w
		g.awaitingJoin++
		g.prepareRebalanceLocked()
		return resp, w
	case stateCompletingRebalance:
		m.join = w
		g.awaitingJoin++
		g.prepareRebalanceLocked()
		return resp, w
	default: // PreparingRebalance
		m.join = w
		g.awaitingJoin++
		g.tryCompleteJoinLocked()
		return resp, w
	}
}
