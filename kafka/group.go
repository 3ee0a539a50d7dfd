package kafka

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group is one consumer group of the classic protocol. Every method
// expects coordinator.mu held (see groups.go).
type group struct {
	co   *coordinator
	name string

	state        groupState
	generation   int32
	protocolType string // set by the first member of an empty group
	protocol     string // chosen for the current generation
	leader       string

	members      map[string]*member
	pending      map[string]*member // told MEMBER_ID_REQUIRED; not members yet
	awaitingJoin int                // members with a parked JoinGroup
	nextSeq      uint64

	// pendingSync holds the members of this generation that have not
	// sent their SyncGroup; syncTimer removes them at the rebalance
	// timeout.
	pendingSync map[string]bool
	syncTimer   *time.Timer
	// rebalanceTimer completes a join at the rebalance timeout without
	// the members that did not rejoin; rebalanceToken tells a stale one.
	rebalanceTimer *time.Timer
	rebalanceToken uint64
}

// sortedMembersLocked returns the members in join order.
func (g *group) sortedMembersLocked() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return int(a.seq) - int(b.seq) })
	return ms
}

func (g *group) stopTimersLocked() {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
		g.rebalanceTimer = nil
	}
}

// supportsLocked reports whether a member (self, nil for a new one) may
// join with protocolType and protocols: an empty group takes any; else
// the type must match and one of the protocols must be supported by
// every other member.
func (g *group) supportsLocked(self *member, protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	others := 0
	for _, m := range g.members {
		if m != self {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		n := 0
		for _, m := range g.members {
			if m != self && m.metadataFor(p.Name) != nil {
				n++
			}
		}
		if n == others {
			return true
		}
	}
	return false
}

// newMemberLocked makes a member from a JoinGroup and starts its session.
func (g *group) newMemberLocked(id string, req *kmsg.JoinGroupRequest, client, host string) *member {
	g.nextSeq++
	m := &member{id: id, instanceID: req.InstanceID, clientID: client, clientHost: host, seq: g.nextSeq}
	m.update(req)
	m.touch()
	return m
}

// update takes a member's protocols and timeouts from its JoinGroup.
func (m *member) update(req *kmsg.JoinGroupRequest) {
	m.protocols = req.Protocols
	m.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		m.rebalance = m.session // v0 has no rebalance timeout
	}
}

// addPendingLocked remembers a member told MEMBER_ID_REQUIRED until its
// session timeout.
func (g *group) addPendingLocked(m *member) {
	g.pending[m.id] = m
	m.timer = g.co.afterFunc(m.session, func() {
		if g.pending[m.id] != m {
			return
		}
		delete(g.pending, m.id)
		g.tryCompleteJoinLocked()
	})
}

// addMemberLocked adds m to the group with its JoinGroup parked in w,
// and starts a rebalance (or joins the one in progress).
func (g *group) addMemberLocked(m *member, protocolType string, w *waiter) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	g.members[m.id] = m
	m.join = w
	g.awaitingJoin++
	m.touch()
	m.stopTimer() // its pending-member timer, if any
	m.timer = g.co.afterFunc(m.session, func() { g.expireLocked(m) })
	g.prepareRebalanceLocked()
}

// rejoinLocked parks a known member's new JoinGroup, taking its
// protocols and timeouts from it.
func (g *group) rejoinLocked(m *member, req *kmsg.JoinGroupRequest, w *waiter) {
	m.update(req)
	m.touch()
	if m.join != nil {
		// The client gave up on its previous JoinGroup.
		answerError(m.join, kerr.RebalanceInProgress.Code)
	} else {
		g.awaitingJoin++
	}
	answerError(m.sync, kerr.RebalanceInProgress.Code)
	m.join, m.sync = w, nil
}

// expireLocked runs at m's session deadline: it extends a session that
// was touched meanwhile, or that waits in a JoinGroup or SyncGroup (as
// Kafka counts those as heartbeats); otherwise it removes m.
func (g *group) expireLocked(m *member) {
	if g.members[m.id] != m {
		return
	}
	now := time.Now()
	if m.join != nil || m.sync != nil {
		m.deadline = now.Add(m.session)
	}
	if now.Before(m.deadline) {
		m.timer.Reset(m.deadline.Sub(now))
		return
	}
	g.co.log.Info("kafka: group member's session expired; rebalancing", "group", g.name, "member", m.id,
		"session", m.session, "generation", g.generation)
	g.removeMemberLocked(m)
	g.memberLeftLocked()
}

// removeMemberLocked removes m, answering its parked requests with
// UNKNOWN_MEMBER_ID. It does not rebalance: see memberLeftLocked.
func (g *group) removeMemberLocked(m *member) {
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	m.stopTimer()
	if m.join != nil {
		g.awaitingJoin--
	}
	answerError(m.join, kerr.UnknownMemberID.Code)
	answerError(m.sync, kerr.UnknownMemberID.Code)
	m.join, m.sync = nil, nil
	if g.leader == m.id {
		g.leader = ""
	}
}

// memberLeftLocked moves the group on after members left.
func (g *group) memberLeftLocked() {
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalanceLocked()
	case statePreparingRebalance:
		g.tryCompleteJoinLocked()
	}
}

// prepareRebalanceLocked starts a rebalance: every member must join
// again within the rebalance timeout.
func (g *group) prepareRebalanceLocked() {
	if g.state == statePreparingRebalance {
		g.tryCompleteJoinLocked()
		return
	}
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			answerError(m.sync, kerr.RebalanceInProgress.Code)
			m.sync = nil
		}
	}
	for _, m := range g.members {
		m.assignment = nil
	}
	g.stopTimersLocked()
	g.pendingSync = nil
	g.state = statePreparingRebalance
	g.rebalanceToken++
	token := g.rebalanceToken
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalance)
	}
	g.rebalanceTimer = g.co.afterFunc(timeout, func() {
		if g.rebalanceToken == token && g.state == statePreparingRebalance {
			g.completeJoinLocked()
		}
	})
	g.tryCompleteJoinLocked()
}

// tryCompleteJoinLocked completes the join once every member (and every
// pending one) has joined.
func (g *group) tryCompleteJoinLocked() {
	if g.state == statePreparingRebalance && g.awaitingJoin == len(g.members) && len(g.pending) == 0 {
		g.completeJoinLocked()
	}
}

// completeJoinLocked ends the join phase: members that did not rejoin
// are removed, the generation goes up, a protocol and a leader are
// chosen, and every member gets its JoinGroup response (the leader's
// with every member's metadata).
func (g *group) completeJoinLocked() {
	g.stopTimersLocked()
	for _, m := range g.sortedMembersLocked() {
		if m.join == nil {
			g.co.log.Info("kafka: group member did not rejoin in time; removed", "group", g.name, "member", m.id)
			g.removeMemberLocked(m)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = stateEmpty, "", ""
		return
	}
	ms := g.sortedMembersLocked()
	if g.members[g.leader] == nil {
		g.leader = ms[0].id
	}
	g.protocol = g.selectProtocolLocked()
	g.state = stateCompletingRebalance
	g.pendingSync = map[string]bool{}
	timeout := time.Duration(0)
	for _, m := range ms {
		g.pendingSync[m.id] = true
		timeout = max(timeout, m.rebalance)
		if !m.join.answered { // else a shutdown answered it: the writer owns it
			g.fillJoinLocked(m, m.join.resp.(*kmsg.JoinGroupResponse))
			m.join.answer()
		}
		m.join = nil
		m.touch()
	}
	g.awaitingJoin = 0
	g.co.log.Info("kafka: group rebalanced", "group", g.name, "generation", g.generation,
		"members", len(g.members), "leader", g.leader, "protocol", g.protocol)
	gen := g.generation
	g.syncTimer = g.co.afterFunc(timeout, func() {
		if g.generation != gen || len(g.pendingSync) == 0 {
			return
		}
		for _, m := range g.sortedMembersLocked() {
			if g.pendingSync[m.id] {
				g.co.log.Info("kafka: group member did not sync in time; removed", "group", g.name, "member", m.id)
				g.removeMemberLocked(m)
			}
		}
		g.memberLeftLocked()
	})
}

// selectProtocolLocked picks the protocol of the generation as Kafka
// does: among the protocols every member supports, the one most members
// prefer; a tie goes to the leader's preference.
func (g *group) selectProtocolLocked() string {
	supported := func(name string) bool {
		for _, m := range g.members {
			if m.metadataFor(name) == nil {
				return false
			}
		}
		return true
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if supported(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	leader := g.members[g.leader]
	best := ""
	for _, p := range leader.protocols {
		if supported(p.Name) && (best == "" || votes[p.Name] > votes[best]) {
			best = p.Name
		}
	}
	if best == "" {
		// Cannot happen: a member joins only with a protocol every
		// other member supports.
		best = leader.protocols[0].Name
	}
	return best
}

// fillJoinLocked fills a successful JoinGroup response for m.
func (g *group) fillJoinLocked(m *member, resp *kmsg.JoinGroupResponse) {
	resp.ErrorCode = 0
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	resp.Members = nil
	if m.id == g.leader {
		for _, o := range g.sortedMembersLocked() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
}

// fillSyncLocked fills a successful SyncGroup response for m.
func (g *group) fillSyncLocked(m *member, resp *kmsg.SyncGroupResponse) {
	resp.ErrorCode = 0
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
}

// emptyConsumerAssignment is what a member of a "consumer" group that
// the leader left out is sent: an assignment of nothing, which every
// client decodes (some fail on zero bytes).
var emptyConsumerAssignment = new(kmsg.ConsumerMemberAssignment).AppendTo(nil)

// completeSyncLocked takes the leader's assignment: the group is stable,
// and every member waiting in SyncGroup gets its part.
func (g *group) completeSyncLocked(assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = a.MemberAssignment
		}
	}
	for _, m := range g.members {
		if len(m.assignment) == 0 && g.protocolType == "consumer" {
			m.assignment = emptyConsumerAssignment
		}
	}
	g.state = stateStable
	for _, m := range g.members {
		if m.sync != nil && !m.sync.answered {
			g.fillSyncLocked(m, m.sync.resp.(*kmsg.SyncGroupResponse))
			m.sync.answer()
		}
		m.sync = nil
	}
}

// synced notes that m sent its SyncGroup for this generation.
func (g *group) syncedLocked(m *member) {
	delete(g.pendingSync, m.id)
	if len(g.pendingSync) == 0 && g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}
