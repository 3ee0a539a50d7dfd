package kafka

// The group coordinator of the classic consumer-group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), as Kafka's GroupCoordinator runs it,
// for groups kept in memory; their committed offsets live in the offset
// store (see 08_offset_commit.go).
//
// A group goes Empty → PreparingRebalance (members (re)join; the join
// completes when every member has rejoined, or at the longest rebalance
// timeout without the ones that did not) → CompletingRebalance (the
// generation is bumped and every member answered; the leader, which got
// every member's metadata, computes the assignment and sends it in its
// SyncGroup) → Stable (every member gets its assignment in its SyncGroup
// response) → PreparingRebalance again when a member joins, leaves,
// changes its subscription, or stops heartbeating for its session timeout.
// JoinGroup and SyncGroup responses are deferred until the group can
// answer them: their handlers park a waiter, and the connection's writer
// waits for it (see reply.wait), holding back only that connection's
// later responses, as Kafka does.
//
// Groups of the KIP-848 consumer protocol (ConsumerGroupHeartbeat) are
// in group848.go, with the same coordinator, lock and offset store; static
// membership (KIP-345) of classic groups is in 11_join_group.go.
//
// Locking: one mutex, coordinator.mu, guards every group; every method
// of group expects it held. Timers (session, rebalance, pending sync)
// take it when they fire and check that what they were armed for still
// holds.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	defaultGroupMinSession = time.Second
	defaultGroupMaxSession = 30 * time.Minute
	// maxCommitMetadata is the longest OffsetCommit metadata accepted, as
	// Kafka's offset.metadata.max.bytes.
	maxCommitMetadata = 4096
)

// coordinator holds every consumer group.
type coordinator struct {
	store      offsets.Store
	partitions func(topic string) (int, error) // partition count of an existing topic
	log        *slog.Logger
	minSession time.Duration
	maxSession time.Duration
	consumer   consumerGroupConfig // KIP-848 groups (group848.go)

	mu struct {
		sync.Mutex
		groups  map[string]*group  // classic groups
		cgroups map[string]*cgroup // consumer (KIP-848) groups; a name is in one map at most
		closed  bool
	}
}

func newCoordinator(store offsets.Store, partitions func(string) (int, error), log *slog.Logger, minSession, maxSession time.Duration) *coordinator {
	co := &coordinator{store: store, partitions: partitions, log: log, minSession: minSession, maxSession: maxSession,
		consumer: consumerGroupConfig{session: defaultConsumerSessionTimeout, heartbeat: defaultConsumerHeartbeatInterval,
			maxSize: defaultConsumerMaxSize, assignors: []string{"uniform", "range"}}}
	co.mu.groups = map[string]*group{}
	co.mu.cgroups = map[string]*cgroup{}
	return co
}

// close stops every timer and answers every parked request: the server
// is going away, and its clients will find a coordinator again.
func (co *coordinator) close() {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.mu.closed = true
	for _, g := range co.mu.groups {
		g.stopTimersLocked()
		for _, m := range g.members {
			m.stopTimer()
			answerError(m.join, kerr.CoordinatorNotAvailable.Code)
			answerError(m.sync, kerr.CoordinatorNotAvailable.Code)
		}
		for _, m := range g.pending {
			m.stopTimer()
		}
	}
	for _, g := range co.mu.cgroups {
		g.stopTimersLocked()
	}
}

// afterFunc runs fn with the lock held after d, unless the coordinator
// has closed.
func (co *coordinator) afterFunc(d time.Duration, fn func()) *time.Timer {
	return time.AfterFunc(d, func() {
		co.mu.Lock()
		defer co.mu.Unlock()
		if !co.mu.closed {
			fn()
		}
	})
}

// groupLocked returns the group called name, creating it if create.
func (co *coordinator) groupLocked(name string, create bool) *group {
	g := co.mu.groups[name]
	if g == nil && create {
		g = &group{co: co, name: name, members: map[string]*member{}, pending: map[string]*member{}}
		co.mu.groups[name] = g
	}
	return g
}

// A waiter is a parked JoinGroup or SyncGroup: its response is filled in
// under the lock, then done is closed and the connection's writer sends
// it. Once answered, the response is the writer's: nothing may touch it.
type waiter struct {
	resp     kmsg.Response // *kmsg.JoinGroupResponse or *kmsg.SyncGroupResponse
	done     chan struct{}
	answered bool
}

func newWaiter(resp kmsg.Response) *waiter {
	return &waiter{resp: resp, done: make(chan struct{})}
}

// answer releases the response as it is filled in now. It does nothing
// for a nil or an already answered waiter.
func (w *waiter) answer() {
	if w == nil || w.answered {
		return
	}
	w.answered = true
	close(w.done)
}

// answerError answers w with an error code.
func answerError(w *waiter, code int16) {
	if w == nil || w.answered {
		return
	}
	switch r := w.resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation, r.Members = code, -1, nil
	case *kmsg.SyncGroupResponse:
		r.ErrorCode, r.MemberAssignment = code, nil
	}
	w.answer()
}

// await blocks until w is answered, or until ctx is done (the server is
// shutting down), when it answers w with COORDINATOR_NOT_AVAILABLE so
// that the client looks for the coordinator again.
func (co *coordinator) await(ctx context.Context, w *waiter) {
	select {
	case <-w.done:
	case <-ctx.Done():
		co.mu.Lock()
		answerError(w, kerr.CoordinatorNotAvailable.Code)
		co.mu.Unlock()
	}
}

// newMemberID returns a member id as Kafka makes them: the client id, a
// dash and a random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// member is one member of a group, or a pending one: a client told
// MEMBER_ID_REQUIRED, expected to join again with its new id.
type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	seq        uint64 // join order: the first is the default leader

	protocols []kmsg.JoinGroupRequestProtocol // in the member's order of preference
	session   time.Duration
	rebalance time.Duration

	join       *waiter // a parked JoinGroup
	sync       *waiter // a parked SyncGroup
	assignment []byte  // this generation's, from the leader

	deadline time.Time // the session expires then, unless a request comes first
	timer    *time.Timer
}

// touch extends m's session: Kafka counts any request of the member
// (heartbeat, join, sync, commit) as a sign of life.
func (m *member) touch() { m.deadline = time.Now().Add(m.session) }

func (m *member) stopTimer() {
	if m.timer != nil {
		m.timer.Stop()
	}
}

// sameProtocols reports whether a JoinGroup repeats m's protocols.
func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// metadataFor returns m's metadata for protocol.
func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// groupState is a group's state, named as Kafka names it.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}
