package kafka

// The consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe), as Kafka 4's group coordinator runs it
// (org.apache.kafka.coordinator.group.modern.consumer): the broker
// computes the assignment and hands it out incrementally.
//
// Three epochs move a group on. The group epoch goes up whenever what
// the assignment depends on changes: a member joins, leaves or changes
// its subscription, or a subscribed topic is created, deleted or given
// partitions (seen at the next heartbeat). The target assignment is
// computed by the group's assignor (uniform or range, assign.go) when
// the group epoch is past the assignment epoch, and takes its epoch.
// Each member has its own member epoch and moves to the target one
// heartbeat at a time (reconcileLocked, Kafka's CurrentAssignmentBuilder):
// partitions it must give up are first revoked — it stays at its epoch,
// UNREVOKED_PARTITIONS, until a heartbeat no longer lists them as owned —
// and a partition is given to its new owner only once the old one has
// released it (UNRELEASED_PARTITIONS until then). A member that does not
// revoke within its rebalance timeout, or does not heartbeat within the
// session timeout, is removed, and what it held goes to the others.
//
// Static members (instance id): leaving with epoch −2 keeps the member
// and its partitions; a new member with the same instance id joining
// within the session timeout takes them over with no change for the
// others. Until the old one has left (−2) or timed out, another member
// with its instance id gets UNRELEASED_INSTANCE_ID.
//
// Classic and consumer groups share coordinator.mu and the offset
// store; a name is one kind or the other. An empty group of one kind
// becomes the other when a member of the other protocol joins; a
// non-empty one refuses it (GROUP_ID_NOT_FOUND to a heartbeat,
// INCONSISTENT_GROUP_PROTOCOL to a JoinGroup), as Kafka with online
// migration disabled.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for the group.consumer.* broker configs.
const (
	defaultConsumerSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	defaultConsumerHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	// defaultConsumerMaxSize is group.consumer.max.size: Kafka's
	// default is Integer.MAX_VALUE.
	defaultConsumerMaxSize = 1<<31 - 1
)

// Member epochs with a meaning (Kafka's ConsumerGroupHeartbeatRequest).
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// consumerGroupConfig holds the group.consumer.* settings.
type consumerGroupConfig struct {
	session   time.Duration
	heartbeat time.Duration
	maxSize   int
	assignors []string // the first is the default
}

// consumerConfig returns the group.consumer.* settings.
func (co *coordinator) consumerConfig() consumerGroupConfig {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.consumer
}

// topicMeta is what the assignment needs of a topic.
type topicMeta struct {
	name       string
	id         offsets.TopicID
	partitions int32
}

// tp is a partition by topic ID, as KIP-848 names them.
type tp struct {
	id offsets.TopicID
	p  int32
}

type tpSet map[tp]struct{}

func (s tpSet) clone() tpSet {
	c := make(tpSet, len(s))
	for k := range s {
		c[k] = struct{}{}
	}
	return c
}

func (s tpSet) equal(o tpSet) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		if _, ok := o[k]; !ok {
			return false
		}
	}
	return true
}

// sorted returns the partitions by topic ID, then partition.
func (s tpSet) sorted() []tp {
	out := make([]tp, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b tp) int {
		if c := strings.Compare(string(a.id[:]), string(b.id[:])); c != 0 {
			return c
		}
		return int(a.p - b.p)
	})
	return out
}

// memberState is a consumer group member's reconciliation state.
type memberState int8

const (
	memberStable memberState = iota
	memberUnrevoked
	memberUnreleased
)

func (s memberState) String() string {
	switch s {
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

// cmember is one member of a consumer group.
type cmember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch, prevEpoch int32
	state            memberState
	rebalance        time.Duration

	topics   []string // subscribed topic names, sorted
	regex    string   // subscribed_topic_regex, as sent
	re       *regexp.Regexp
	assignor string // server_assignor, "" for the group's

	assigned   tpSet
	revoking   tpSet
	assignedAt map[tp]int32 // the member epoch each assigned partition came with

	deadline time.Time
	timer    *time.Timer
	// revokeToken tells a stale rebalance-timeout timer.
	revokeToken uint64
	revokeTimer *time.Timer
}

func (m *cmember) static() bool { return m.instanceID != nil }

func (m *cmember) stopTimers() {
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
	}
}

// subscribes reports whether m subscribes to topic.
func (m *cmember) subscribes(topic string) bool {
	if _, ok := slices.BinarySearch(m.topics, topic); ok {
		return true
	}
	return m.re != nil && m.re.MatchString(topic)
}

// cgroup is one consumer group of the KIP-848 protocol. Every method
// expects coordinator.mu held.
type cgroup struct {
	co   *coordinator
	name string

	epoch           int32 // the group epoch
	assignmentEpoch int32 // the target assignment's
	members         map[string]*cmember
	static          map[string]*cmember // by instance id
	target          map[string]tpSet    // by member id
	owners          map[tp]string       // the member holding a partition (assigned or being revoked)
	assignor        string              // that computed the target

	topics     map[string]topicMeta // the cluster's, as of the last heartbeat
	subscribed string               // fingerprint of the subscribed topics' metadata
	subs       *subscriptions       // nil when it must be rebuilt
}

func (co *coordinator) newConsumerGroupLocked(name string) *cgroup {
	g := &cgroup{co: co, name: name, members: map[string]*cmember{}, static: map[string]*cmember{},
		target: map[string]tpSet{}, owners: map[tp]string{}, topics: map[string]topicMeta{}}
	co.mu.cgroups[name] = g
	return g
}

func (g *cgroup) stopTimersLocked() {
	for _, m := range g.members {
		m.stopTimers()
	}
}

// stateLocked is the group's state as Kafka names it.
func (g *cgroup) stateLocked() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch != g.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.epoch != staticLeaveEpoch && (m.epoch != g.assignmentEpoch || m.state != memberStable) {
			return "Reconciling"
		}
	}
	return "Stable"
}

// activeLocked counts the members that have not left (epoch −2 members
// are still members, waiting for their instance to come back).
func (g *cgroup) activeLocked() int {
	n := 0
	for _, m := range g.members {
		if m.epoch != staticLeaveEpoch {
			n++
		}
	}
	return n
}

// heartbeatReq is a ConsumerGroupHeartbeat, checked, with the cluster's
// topics as the handler saw them.
type heartbeatReq struct {
	*kmsg.ConsumerGroupHeartbeatRequest
	clientID, clientHost string
	topics               map[string]topicMeta
}

// heartbeatError is an error answer with its message.
type heartbeatError struct {
	err *kerr.Error
	msg string
}

func hbErr(e *kerr.Error, format string, args ...any) *heartbeatError {
	return &heartbeatError{err: e, msg: fmt.Sprintf(format, args...)}
}

// validateHeartbeat checks a request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func (co *coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *heartbeatError {
	empty := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	switch {
	case strings.TrimSpace(req.Group) == "":
		return hbErr(kerr.InvalidGroupID, "GroupId can't be empty.")
	case empty(req.InstanceID):
		return hbErr(kerr.InvalidRequest, "InstanceId can't be empty.")
	case empty(req.RackID):
		return hbErr(kerr.InvalidRequest, "RackId can't be empty.")
	}
	if req.Version >= 1 && req.MemberID == "" || req.MemberEpoch != joinEpoch && req.MemberID == "" {
		return hbErr(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	switch req.MemberEpoch {
	case joinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return hbErr(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		}
		if len(req.Topics) > 0 {
			return hbErr(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		}
		if len(req.SubscribedTopicNames) == 0 && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return hbErr(kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case staticLeaveEpoch:
		// Kafka wants the instance id here; franz-go 1.22 leaves
		// without it, so leaveLocked takes −2 from a member it knows is
		// static, and refuses it from any other.
	case leaveEpoch:
	default:
		if req.MemberEpoch < 0 {
			return hbErr(kerr.InvalidRequest, "MemberEpoch is invalid.")
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(co.consumer.assignors, *req.ServerAssignor) {
		return hbErr(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(co.consumer.assignors, ", "))
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return hbErr(kerr.InvalidRegularExpression, "SubscribedTopicRegex %q is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	return nil
}

// compileTopicRegex compiles a subscribed_topic_regex. Kafka matches the
// whole topic name (RE2/J's Matcher.matches); Go's regexp is RE2 too.
func compileTopicRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + s + `)$`)
}

// consumerHeartbeat handles a ConsumerGroupHeartbeat that passed
// validateHeartbeat.
func (co *coordinator) consumerHeartbeat(req heartbeatReq) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mu.closed {
		return nil, hbErr(kerr.CoordinatorNotAvailable, "The coordinator is shutting down.")
	}
	g := co.mu.cgroups[req.Group]
	if g == nil {
		if req.MemberEpoch != joinEpoch {
			// Kafka keeps its groups across restarts; we do not, so a
			// member of a group from before one starts over.
			return nil, hbErr(kerr.UnknownMemberID, "Consumer group %s not found.", req.Group)
		}
		if cg := co.mu.groups[req.Group]; cg != nil {
			if len(cg.members) > 0 || len(cg.pending) > 0 {
				return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
			}
			co.dropClassicLocked(cg)
		}
		g = co.newConsumerGroupLocked(req.Group)
	}
	g.topics = req.topics
	switch req.MemberEpoch {
	case leaveEpoch, staticLeaveEpoch:
		return g.leaveLocked(req)
	}
	return g.heartbeatLocked(req)
}

// dropClassicLocked forgets an empty classic group, so that its name
// becomes a consumer group (its offsets stay).
func (co *coordinator) dropClassicLocked(g *group) {
	g.stopTimersLocked()
	delete(co.mu.groups, g.name)
}

func (g *cgroup) response(m *cmember) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.co.consumer.heartbeat / time.Millisecond)
	return resp
}

// leaveLocked handles a heartbeat with epoch −1 (the member leaves) or
// −2 (a static member leaves for now, keeping its partitions until its
// session times out or its instance comes back).
func (g *cgroup) leaveLocked(req heartbeatReq) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	var m *cmember
	if req.InstanceID == nil {
		if m = g.members[req.MemberID]; m == nil {
			return nil, hbErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.name)
		}
		if req.MemberEpoch == staticLeaveEpoch && !m.static() {
			return nil, hbErr(kerr.InvalidRequest, "InstanceId can't be null.")
		}
	} else {
		if m = g.static[*req.InstanceID]; m == nil {
			return nil, hbErr(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if m.id != req.MemberID {
			return nil, hbErr(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch && m.static() {
		g.co.log.Info("kafka: static consumer group member left for now", "group", g.name, "member", m.id, "instance", *m.instanceID)
		m.epoch = staticLeaveEpoch
		g.setOwnedLocked(m, m.assigned, tpSet{})
		m.state = memberStable
		m.revokeToken++
		g.touchLocked(m)
		return resp, nil
	}
	g.co.log.Info("kafka: consumer group member left", "group", g.name, "member", m.id)
	g.removeLocked(m)
	return resp, nil
}

// heartbeatLocked handles a join (epoch 0) or a heartbeat of a member.
func (g *cgroup) heartbeatLocked(req heartbeatReq) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	memberID := req.MemberID
	if memberID == "" { // v0: the coordinator names new members
		memberID = newMemberUUID()
	}
	m := g.members[memberID]
	var before tpSet
	bump := false
	if req.MemberEpoch == joinEpoch {
		var e *heartbeatError
		if m, bump, e = g.joinLocked(req, memberID); e != nil {
			return nil, e
		}
	} else {
		if req.InstanceID != nil {
			s := g.static[*req.InstanceID]
			if s == nil {
				return nil, hbErr(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
			}
			if s.id != memberID {
				return nil, hbErr(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, s.id)
			}
		}
		if m == nil {
			return nil, hbErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, g.name)
		}
		if e := m.checkEpoch(req.MemberEpoch, req.Topics); e != nil {
			return nil, e
		}
		before = m.assigned.clone()
		bump = g.updateSubscriptionLocked(m, req)
	}
	m.clientID, m.clientHost = req.clientID, req.clientHost
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if fp := g.fingerprintLocked(); fp != g.subscribed {
		g.subscribed, bump = fp, true
	}
	if bump {
		g.epoch++
		g.co.log.Info("kafka: consumer group epoch bumped", "group", g.name, "epoch", g.epoch)
	}
	if g.epoch > g.assignmentEpoch {
		g.computeTargetLocked()
	}
	owned := req.Topics
	if req.MemberEpoch == joinEpoch {
		owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	g.reconcileLocked(m, owned, req.Topics != nil || req.MemberEpoch == joinEpoch)
	g.touchLocked(m)

	resp := g.response(m)
	full := req.MemberEpoch == joinEpoch ||
		req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if full || !m.assigned.equal(before) {
		resp.Assignment = g.assignmentOf(m.assigned)
	}
	return resp, nil
}

// joinLocked adds a member joining with epoch 0 (a new one, a dynamic
// member rejoining after it was fenced, or a static member taking over
// from its previous incarnation) and reports whether the group epoch
// must go up.
func (g *cgroup) joinLocked(req heartbeatReq, memberID string) (*cmember, bool, *heartbeatError) {
	old := g.members[memberID]
	var prev *cmember // the static member this one replaces
	if req.InstanceID != nil {
		if s := g.static[*req.InstanceID]; s != nil && s != old {
			if s.epoch != staticLeaveEpoch {
				return nil, false, hbErr(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by member %s.", memberID, *req.InstanceID, s.id)
			}
			prev = s
		}
	}
	if old == nil && prev == nil && g.activeLocked() >= g.co.consumer.maxSize {
		return nil, false, hbErr(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.co.consumer.maxSize)
	}
	bump := false
	if old != nil {
		// The member rejoins with epoch 0 after it was fenced, or lost
		// its partitions: it starts over as a new member.
		g.co.log.Info("kafka: consumer group member rejoins", "group", g.name, "member", old.id)
		g.removeLocked(old)
		bump = true
	}
	m := &cmember{id: memberID, instanceID: req.InstanceID, assigned: tpSet{}, revoking: tpSet{}, assignedAt: map[tp]int32{},
		rebalance: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond}
	if prev != nil {
		// The new incarnation of a static member takes over its
		// partitions and its place in the target assignment, with no
		// change for the others (Kafka's replaceMember).
		g.co.log.Info("kafka: static consumer group member rejoined; it keeps its partitions", "group", g.name,
			"instance", *req.InstanceID, "member", memberID, "replaces", prev.id)
		m.topics, m.regex, m.re, m.assignor, m.rackID = prev.topics, prev.regex, prev.re, prev.assignor, prev.rackID
		m.assigned, m.assignedAt = prev.assigned, prev.assignedAt
		prev.stopTimers()
		delete(g.members, prev.id)
		g.target[m.id] = g.target[prev.id]
		delete(g.target, prev.id)
		for p, id := range g.owners {
			if id == prev.id {
				g.owners[p] = m.id
			}
		}
	} else {
		g.co.log.Info("kafka: member joins the consumer group", "group", g.name, "member", memberID)
	}
	g.members[m.id] = m
	g.subs = nil
	if m.static() {
		g.static[*m.instanceID] = m
	}
	if g.updateSubscriptionLocked(m, req) || prev == nil {
		bump = true
	}
	return m, bump, nil
}

// checkEpoch validates the epoch of a heartbeat as Kafka's
// throwIfConsumerGroupMemberEpochIsInvalid: one behind is accepted when
// the member owns no more than it is assigned (our answer with the new
// epoch was lost).
func (m *cmember) checkEpoch(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *heartbeatError {
	switch {
	case m.epoch == staticLeaveEpoch:
		return hbErr(kerr.FencedMemberEpoch, "The consumer group member left the group (epoch -2); it must rejoin.")
	case epoch > m.epoch:
		return hbErr(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch && (epoch != m.prevEpoch || !ownedWithin(owned, m.assigned)):
		return hbErr(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	return nil
}

// ownedWithin reports whether every owned partition is in s (a nil
// owned list is not known to be).
func ownedWithin(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, s tpSet) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if _, ok := s[tp{t.TopicID, p}]; !ok {
				return false
			}
		}
	}
	return true
}

// ownsAny reports whether the owned list names a partition of s (a nil
// list, not sent, counts as owning them all, as in Kafka).
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, s tpSet) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if _, ok := s[tp{t.TopicID, p}]; ok {
				return true
			}
		}
	}
	return false
}

// updateSubscriptionLocked takes m's subscription and assignor from a
// heartbeat (absent fields keep their value) and reports whether the
// subscription changed.
func (g *cgroup) updateSubscriptionLocked(m *cmember, req heartbeatReq) bool {
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topics) {
			m.topics, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, m.re, changed = *req.SubscribedTopicRegex, nil, true
		if m.regex != "" {
			m.re, _ = compileTopicRegex(m.regex) // validated
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	if changed {
		g.subs = nil
	}
	return changed
}

// subscriptions is the union of a group's subscriptions, rebuilt when
// a member's changes or the members change (g.subs = nil), so that a
// heartbeat costs a lookup per topic of the cluster, not one per member.
type subscriptions struct {
	names map[string]bool
	res   []*regexp.Regexp // distinct patterns
	match map[string]bool  // topic → some pattern matches it, as found so far
}

func (g *cgroup) subsLocked() *subscriptions {
	if g.subs != nil {
		return g.subs
	}
	s := &subscriptions{names: map[string]bool{}, match: map[string]bool{}}
	seen := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.topics {
			s.names[t] = true
		}
		if m.re != nil && !seen[m.regex] {
			seen[m.regex] = true
			s.res = append(s.res, m.re)
		}
	}
	g.subs = s
	return s
}

func (s *subscriptions) has(topic string) bool {
	if s.names[topic] {
		return true
	}
	if len(s.res) == 0 {
		return false
	}
	v, ok := s.match[topic]
	if !ok {
		v = slices.ContainsFunc(s.res, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
		s.match[topic] = v
	}
	return v
}

// subscribedTopicsLocked returns the existing topics some member
// subscribes to, sorted by name.
func (g *cgroup) subscribedTopicsLocked() []topicMeta {
	s := g.subsLocked()
	var out []topicMeta
	for name, t := range g.topics {
		if s.has(name) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b topicMeta) int { return strings.Compare(a.name, b.name) })
	return out
}

// fingerprintLocked sums up the metadata of the subscribed topics: a
// change (a topic created, deleted, re-created or given partitions)
// means a new target assignment.
func (g *cgroup) fingerprintLocked() string {
	var b []byte
	for _, t := range g.subscribedTopicsLocked() {
		b = append(b, t.name...)
		b = append(b, '/')
		b = append(b, t.id[:]...)
		b = strconv.AppendInt(b, int64(t.partitions), 10)
		b = append(b, ',')
	}
	return string(b)
}

// preferredAssignorLocked is the assignor most members ask for, else
// the default (the first configured: uniform), as Kafka's
// computePreferredServerAssignor.
func (g *cgroup) preferredAssignorLocked() string {
	votes := map[string]int{}
	best := ""
	for _, m := range g.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	for _, a := range g.co.consumer.assignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	if best == "" {
		best = g.co.consumer.assignors[0]
	}
	return best
}

// computeTargetLocked computes the target assignment of the group epoch.
func (g *cgroup) computeTargetLocked() {
	spec := assignSpec{topics: g.subscribedTopicsLocked()}
	for _, m := range g.sortedMembersLocked() {
		am := assignMember{id: m.id, key: m.id, subscribes: m.subscribes, prev: g.target[m.id]}
		if m.static() {
			am.key = *m.instanceID // a restarted static member sorts where it was
		}
		spec.members = append(spec.members, am)
	}
	g.assignor = g.preferredAssignorLocked()
	var target map[string]tpSet
	switch g.assignor {
	case "range":
		target = assignRange(spec)
	default:
		target = assignUniform(spec)
	}
	g.target = target
	g.assignmentEpoch = g.epoch
	g.co.log.Info("kafka: consumer group target assignment computed", "group", g.name, "epoch", g.epoch,
		"assignor", g.assignor, "members", len(g.members), "topics", len(spec.topics))
}

func (g *cgroup) sortedMembersLocked() []*cmember {
	ms := make([]*cmember, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *cmember) int { return strings.Compare(a.id, b.id) })
	return ms
}

// reconcileLocked moves m one step towards its target assignment, as
// Kafka's CurrentAssignmentBuilder. owned is what the member says it
// owns (nil: not sent); sent says whether it was.
func (g *cgroup) reconcileLocked(m *cmember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, sent bool) {
	if !sent {
		owned = nil
	}
	switch m.state {
	case memberStable:
		if m.epoch != g.assignmentEpoch {
			g.nextAssignmentLocked(m, m.epoch, owned)
		}
	case memberUnrevoked:
		if ownsAny(owned, m.revoking) {
			return
		}
		g.nextAssignmentLocked(m, m.epoch+1, owned)
	case memberUnreleased:
		g.nextAssignmentLocked(m, m.epoch, owned)
	}
}

// nextAssignmentLocked is Kafka's computeNextAssignment: keep what is
// still m's, revoke what is not (and wait for the member to release it),
// then add what the target gives it and nobody else holds.
func (g *cgroup) nextAssignmentLocked(m *cmember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	target := g.target[m.id]
	keep, revoke, add := tpSet{}, tpSet{}, tpSet{}
	for p := range m.assigned {
		if _, ok := target[p]; ok {
			keep[p] = struct{}{}
		} else {
			revoke[p] = struct{}{}
		}
	}
	unreleased := false
	for p := range target {
		if _, ok := keep[p]; ok {
			continue
		}
		if o, held := g.owners[p]; held && o != m.id {
			unreleased = true
			continue
		}
		add[p] = struct{}{}
	}
	oldEpoch := m.epoch
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		m.setEpoch(epoch, oldEpoch)
		m.state = memberUnrevoked
		g.setOwnedLocked(m, keep, revoke)
		g.armRevokeTimerLocked(m)
		return
	}
	m.setEpoch(g.assignmentEpoch, oldEpoch)
	for p := range add {
		keep[p] = struct{}{}
		m.assignedAt[p] = m.epoch
	}
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
	m.revokeToken++
	g.setOwnedLocked(m, keep, tpSet{})
}

func (m *cmember) setEpoch(epoch, old int32) {
	if epoch != old {
		m.prevEpoch = old
	}
	m.epoch = epoch
}

// setOwnedLocked makes assigned and revoking m's, and releases what it
// held before and holds no more.
func (g *cgroup) setOwnedLocked(m *cmember, assigned, revoking tpSet) {
	for _, s := range []tpSet{m.assigned, m.revoking} {
		for p := range s {
			if g.owners[p] == m.id {
				delete(g.owners, p)
			}
		}
	}
	for p := range m.assignedAt {
		if _, ok := assigned[p]; !ok {
			delete(m.assignedAt, p)
		}
	}
	m.assigned, m.revoking = assigned, revoking
	for _, s := range []tpSet{assigned, revoking} {
		for p := range s {
			g.owners[p] = m.id
		}
	}
}

// armRevokeTimerLocked removes m if it has not revoked its partitions
// within its rebalance timeout, as Kafka does.
func (g *cgroup) armRevokeTimerLocked(m *cmember) {
	m.revokeToken++
	token := m.revokeToken
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
	}
	d := m.rebalance
	if d <= 0 {
		d = g.co.consumer.session
	}
	m.revokeTimer = g.co.afterFunc(d, func() {
		if g.members[m.id] != m || m.revokeToken != token || m.state != memberUnrevoked {
			return
		}
		g.co.log.Info("kafka: consumer group member did not revoke its partitions within its rebalance timeout; removed",
			"group", g.name, "member", m.id, "timeout", d)
		g.removeLocked(m)
	})
}

// touchLocked extends m's session.
func (g *cgroup) touchLocked(m *cmember) {
	m.deadline = time.Now().Add(g.co.consumer.session)
	if m.timer != nil {
		return // the timer reads the deadline when it fires
	}
	m.timer = g.co.afterFunc(g.co.consumer.session, func() { g.expireLocked(m) })
}

func (g *cgroup) expireLocked(m *cmember) {
	if g.members[m.id] != m {
		return
	}
	if now := time.Now(); now.Before(m.deadline) {
		m.timer.Reset(m.deadline.Sub(now))
		return
	}
	g.co.log.Info("kafka: consumer group member's session expired; its partitions go to the others", "group", g.name,
		"member", m.id, "session", g.co.consumer.session, "epoch", m.epoch)
	g.removeLocked(m)
}

// removeLocked removes m: what it held is free, and the group epoch goes
// up so that the others share it.
func (g *cgroup) removeLocked(m *cmember) {
	m.stopTimers()
	g.setOwnedLocked(m, tpSet{}, tpSet{})
	delete(g.members, m.id)
	g.subs = nil
	if m.static() && g.static[*m.instanceID] == m {
		delete(g.static, *m.instanceID)
	}
	delete(g.target, m.id)
	g.epoch++
	g.subscribed = g.fingerprintLocked()
}

// assignmentOf is the heartbeat response's form of a set of partitions.
func (g *cgroup) assignmentOf(s tpSet) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := new(kmsg.ConsumerGroupHeartbeatResponseAssignment)
	a.Default()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, p := range s.sorted() {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].TopicID != p.id {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = p.id
			a.Topics = append(a.Topics, t)
		}
		t := &a.Topics[len(a.Topics)-1]
		t.Partitions = append(t.Partitions, p.p)
	}
	return a
}

// describeAssignment is ConsumerGroupDescribe's form of a set of
// partitions, with topic names as of the last heartbeat.
func (g *cgroup) describeAssignment(s tpSet) kmsg.Assignment {
	names := map[offsets.TopicID]string{}
	for _, t := range g.topics {
		names[t.id] = t.name
	}
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, p := range s.sorted() {
		if n := len(a.TopicPartitions); n == 0 || a.TopicPartitions[n-1].TopicID != p.id {
			t := kmsg.NewAssignmentTopicPartition()
			t.TopicID, t.Topic = p.id, names[p.id]
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		t := &a.TopicPartitions[len(a.TopicPartitions)-1]
		t.Partitions = append(t.Partitions, p.p)
	}
	return a
}

// newMemberUUID is a member id as Kafka's coordinator makes them for v0
// heartbeats: a random UUID in base64, as Uuid.toString.
func newMemberUUID() string { return offsets.NewTopicID().String() }

// fenceConsumerCommitLocked decides an OffsetCommit to a consumer group
// (handled is false if name is not one): an empty group takes commits
// with a negative epoch (an admin tool); else the member must exist
// (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (UNSUPPORTED_VERSION) and not
// be ahead of its epoch, nor commit a partition it was given after the
// epoch it names (STALE_MEMBER_EPOCH, as Kafka 4.3's KIP-1251 check: a
// commit from the epoch before is fine for partitions it kept). It also
// answers a classic group's commit from the old incarnation of a
// restarted static member: FENCED_INSTANCE_ID, as Kafka.
func (co *coordinator) fenceConsumerCommitLocked(req *kmsg.OffsetCommitRequest) (code int16, handled bool) {
	g := co.mu.cgroups[req.Group]
	if g == nil {
		if cg := co.mu.groups[req.Group]; cg != nil && cg.fencedInstanceLocked(req.MemberID, req.InstanceID) {
			return kerr.FencedInstanceID.Code, true
		}
		return 0, false
	}
	if req.Generation < 0 && g.activeLocked() == 0 {
		return 0, true
	}
	if req.Version < 9 {
		return kerr.UnsupportedVersion.Code, true
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, true
	case req.Generation > m.epoch || m.epoch == staticLeaveEpoch:
		return kerr.StaleMemberEpoch.Code, true
	}
	for _, t := range req.Topics {
		meta, ok := g.topics[t.Topic]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if at, ok := m.assignedAt[tp{meta.id, p.Partition}]; ok && req.Generation < at {
				return kerr.StaleMemberEpoch.Code, true
			}
		}
	}
	g.touchLocked(m)
	return 0, true
}

// fenceMemberEpochLocked decides a commit of a KIP-848 group's offsets
// by a member at an epoch, as Kafka's validateOffsetCommit for a
// TxnOffsetCommit: with no member named and a negative epoch only while
// the group has no member; else the member must exist
// (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH).
func (g *cgroup) fenceMemberEpochLocked(memberID string, epoch int32) int16 {
	if epoch < 0 && g.activeLocked() == 0 {
		return 0
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	g.touchLocked(m)
	return 0
}

// fenceConsumerOffsetFetch decides an OffsetFetch v9+ of a consumer
// group naming a member, as Kafka's validateOffsetFetch: the member must
// exist (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH). Without a
// member id and with a negative epoch (an admin tool) anyone may read.
func (co *coordinator) fenceConsumerOffsetFetch(group string, memberID *string, epoch int32) int16 {
	if (memberID == nil || *memberID == "") && epoch < 0 {
		return 0
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.mu.cgroups[group]
	if g == nil {
		return 0 // a classic group, or none: nothing to check here
	}
	var m *cmember
	if memberID != nil {
		m = g.members[*memberID]
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
