package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerTimeouts sets the group.consumer session timeout and
// heartbeat interval of a test server.
func (ts *testServer) consumerTimeouts(session, heartbeat time.Duration) {
	co := ts.srv.groups
	co.mu.Lock()
	co.consumer.session, co.consumer.heartbeat = session, heartbeat
	co.mu.Unlock()
}

// hbClient sends raw ConsumerGroupHeartbeats as one member would.
type hbClient struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	id    string
	epoch int32
	inst  *string
	owned map[int32]bool // partitions of topic it owns
	topic offsets.TopicID
}

func newHBClient(t *testing.T, ts *testServer, group, id string, topic offsets.TopicID) *hbClient {
	return &hbClient{t: t, cl: ts.client(t), group: group, id: id, topic: topic, owned: map[int32]bool{}}
}

func (h *hbClient) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req.Group = h.group
	if req.MemberID == "" {
		req.MemberID = h.id
	}
	resp, err := req.RequestWith(context.Background(), h.cl)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// join sends epoch 0 subscribing to topics.
func (h *hbClient) join(topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.MemberEpoch, req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.InstanceID = 0, 30_000, topics, h.inst
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return h.take(h.send(req))
}

// beat sends a heartbeat with what it owns, and takes the answer.
func (h *hbClient) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.MemberEpoch, req.RebalanceTimeoutMillis, req.InstanceID = h.epoch, -1, h.inst
	t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
	t.TopicID = h.topic
	for p := range h.owned {
		t.Partitions = append(t.Partitions, p)
	}
	slices.Sort(t.Partitions)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{t}
	return h.take(h.send(req))
}

func (h *hbClient) take(resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	if resp.ErrorCode != 0 {
		return resp
	}
	h.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		h.owned = map[int32]bool{}
		for _, t := range resp.Assignment.Topics {
			for _, p := range t.Partitions {
				h.owned[p] = true
			}
		}
	}
	return resp
}

func (h *hbClient) partitions() []int32 {
	var ps []int32
	for p := range h.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func describeConsumerGroup(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

// A partition taken from one member goes to another only once the first
// has released it: until then the new member waits with nothing.
func TestConsumerGroup_RevokedBeforeReassigned(t *testing.T) {
	ts := startServer(t, nil)
	id := ts.createTopic(t, "t", 4).ID()
	a := newHBClient(t, ts, "g", "member-a", id)
	b := newHBClient(t, ts, "g", "member-b", id)

	if r := a.join("t"); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("a joins: error %d epoch %d interval %d ms, want 0, 1 and Kafka's default 5,000 ms", r.ErrorCode, r.MemberEpoch, r.HeartbeatIntervalMillis)
	}
	if got := a.partitions(); len(got) != 4 {
		t.Fatalf("a alone owns %v, want all 4", got)
	}
	if r := b.join("t"); r.ErrorCode != 0 || r.MemberEpoch != 2 || len(b.owned) != 0 {
		t.Fatalf("b joins: error %d epoch %d owns %v; want epoch 2 and nothing yet (a still holds them)", r.ErrorCode, r.MemberEpoch, b.partitions())
	}
	// a is told to keep two: it stays at epoch 1 until it revokes.
	keep := map[int32]bool{}
	r := a.send(func() *kmsg.ConsumerGroupHeartbeatRequest {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.MemberEpoch, req.RebalanceTimeoutMillis = 1, -1
		tt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		tt.TopicID, tt.Partitions = id, []int32{0, 1, 2, 3}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{tt}
		return req
	}())
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("a's heartbeat: %+v; want epoch 1 and two partitions kept", r)
	}
	for _, p := range r.Assignment.Topics[0].Partitions {
		keep[p] = true
	}
	// b still waits: a has not released anything.
	if b.beat(); len(b.owned) != 0 {
		t.Fatalf("b got %v before a released them", b.partitions())
	}
	if d := describeConsumerGroup(t, a.cl, "g"); d.State != "Reconciling" || d.Epoch != 2 || d.AssignmentEpoch != 2 {
		t.Errorf("while revoking: state %s epoch %d/%d, want Reconciling 2/2", d.State, d.Epoch, d.AssignmentEpoch)
	}
	a.epoch, a.owned = 1, keep // a revokes the other two
	if r := a.beat(); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: error %d epoch %d, want epoch 2", r.ErrorCode, r.MemberEpoch)
	}
	if r := b.beat(); r.ErrorCode != 0 || r.MemberEpoch != 2 || len(b.owned) != 2 {
		t.Fatalf("b after a released: error %d epoch %d owns %v; want the two a released", r.ErrorCode, r.MemberEpoch, b.partitions())
	}
	for p := range b.owned {
		if keep[p] {
			t.Errorf("partition %d owned by both a and b", p)
		}
	}
	if d := describeConsumerGroup(t, a.cl, "g"); d.State != "Stable" || len(d.Members) != 2 {
		t.Errorf("after reconciling: state %s with %d members, want Stable with 2", d.State, len(d.Members))
	}
}

// The errors a member is told, each as Kafka tells it.
func TestConsumerGroup_Errors(t *testing.T) {
	ts := startServer(t, nil)
	id := ts.createTopic(t, "t", 2).ID()
	a := newHBClient(t, ts, "g", "member-a", id)
	a.join("t")
	heartbeat := func(mut func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", "member-a", 1, -1
		mut(req)
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	static := "instance-1"
	s := newHBClient(t, ts, "g", "static-1", id)
	s.inst = &static
	if r := s.join("t"); r.ErrorCode != 0 {
		t.Fatalf("static member joins: %d", r.ErrorCode)
	}
	for _, tc := range []struct {
		name string
		mut  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"an epoch ahead of the member's", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 7 }, kerr.FencedMemberEpoch},
		{"an unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "nobody" }, kerr.UnknownMemberID},
		{"an unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "other" }, kerr.UnknownMemberID},
		{"another member with a static member's instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.MemberEpoch, r.InstanceID, r.SubscribedTopicNames, r.RebalanceTimeoutMillis = "static-2", 0, &static, []string{"t"}, 30_000
		}, kerr.UnreleasedInstanceID},
		{"a heartbeat with a static member's instance id and another member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = &static
		}, kerr.FencedInstanceID},
		{"an unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"a bad regular expression", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("t(") }, kerr.InvalidRegularExpression},
		{"a join without a subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "member-c", 0, 30_000
		}, kerr.InvalidRequest},
		{"v1 without a member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"an empty group id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"a static leave (-2) from a dynamic member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heartbeat(tc.mut); got.ErrorCode != tc.want.Code {
				t.Errorf("error %v (%v), want %v", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, tc.want)
			}
		})
	}

	t.Run("the group is full", func(t *testing.T) {
		ts.srv.groups.mu.Lock()
		ts.srv.groups.consumer.maxSize = 2
		ts.srv.groups.mu.Unlock()
		defer func() {
			ts.srv.groups.mu.Lock()
			ts.srv.groups.consumer.maxSize = defaultConsumerMaxSize
			ts.srv.groups.mu.Unlock()
		}()
		c := newHBClient(t, ts, "g", "member-c", id)
		if r := c.join("t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
			t.Errorf("a third member of a group of at most 2: %v, want GROUP_MAX_SIZE_REACHED", kerr.ErrorForCode(r.ErrorCode))
		}
	})

	t.Run("a classic JoinGroup to a consumer group", func(t *testing.T) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", 10_000, 10_000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Errorf("JoinGroup: %v, want INCONSISTENT_GROUP_PROTOCOL", kerr.ErrorForCode(resp.ErrorCode))
		}
	})

	t.Run("a consumer heartbeat to a classic group", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		classic := ts.client(t, kgo.ConsumerGroup("classic"), kgo.ConsumeTopics("t"))
		go classic.PollFetches(ctx)
		waitFor(t, func() bool {
			ts.srv.groups.mu.Lock()
			defer ts.srv.groups.mu.Unlock()
			g := ts.srv.groups.mu.groups["classic"]
			return g != nil && g.state == stateStable
		})
		r := heartbeat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames, r.RebalanceTimeoutMillis = "classic", "member-x", 0, []string{"t"}, 30_000
		})
		if r.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("heartbeat: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
		}
	})

	t.Run("OffsetDelete of a topic the group subscribes to", func(t *testing.T) {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "g"
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t"
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
			t.Errorf("OffsetDelete: %v / %v, want GROUP_SUBSCRIBED_TO_TOPIC", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
		}
	})

	t.Run("DeleteGroups of a group with members", func(t *testing.T) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"g"}
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
			t.Errorf("DeleteGroups: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(resp.Groups[0].ErrorCode))
		}
	})

	t.Run("DescribeGroups of a consumer group", func(t *testing.T) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"g"}
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.State != "Dead" || len(g.Members) != 0 {
			t.Errorf("DescribeGroups: state %s with %d members, want Dead, as Kafka 4 answers for a consumer group", g.State, len(g.Members))
		}
	})

	t.Run("a commit at an epoch ahead of the member's", func(t *testing.T) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, "g", "member-a", 5
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp, err := req.RequestWith(context.Background(), a.cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.StaleMemberEpoch.Code {
			t.Errorf("commit: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(got))
		}
	})
}

// A static member that leaves with epoch −2 keeps its partitions; its
// next incarnation, with a new member id, gets them back and the others
// see no change of epoch.
func TestConsumerGroup_StaticMemberComesBack(t *testing.T) {
	ts := startServer(t, nil)
	id := ts.createTopic(t, "t", 4).ID()
	inst := "instance-1"
	s := newHBClient(t, ts, "g", "static-1", id)
	s.inst = &inst
	o := newHBClient(t, ts, "g", "other", id)
	s.join("t")
	o.join("t")
	for range 4 { // reconcile both
		s.beat()
		o.beat()
	}
	if len(s.owned) != 2 || len(o.owned) != 2 {
		t.Fatalf("before: static owns %v, other %v; want two each", s.partitions(), o.partitions())
	}
	before, otherEpoch := s.partitions(), o.epoch
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.MemberEpoch, req.InstanceID = -2, &inst
	if r := s.send(req); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: error %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if o.beat(); len(o.owned) != 2 || o.epoch != otherEpoch {
		t.Fatalf("the other member after the static one left for now: owns %v at epoch %d, want two at %d", o.partitions(), o.epoch, otherEpoch)
	}
	back := newHBClient(t, ts, "g", "static-1-restarted", id)
	back.inst = &inst
	if r := back.join("t"); r.ErrorCode != 0 {
		t.Fatalf("the restarted static member joins: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := back.partitions(); !slices.Equal(got, before) {
		t.Errorf("the restarted static member owns %v, want %v as before", got, before)
	}
	if o.beat(); o.epoch != otherEpoch || len(o.owned) != 2 {
		t.Errorf("the other member: epoch %d owning %v, want %d unchanged", o.epoch, o.partitions(), otherEpoch)
	}
	// The old incarnation is fenced.
	s.epoch = back.epoch
	if r := s.beat(); r.ErrorCode != kerr.FencedInstanceID.Code && r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("the old incarnation's heartbeat: %v, want FENCED_INSTANCE_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A member that stops heartbeating is removed at the session timeout,
// and the others get its partitions.
func TestConsumerGroup_SessionTimeoutMovesPartitions(t *testing.T) {
	ts := startServer(t, nil)
	ts.consumerTimeouts(300*time.Millisecond, 50*time.Millisecond)
	id := ts.createTopic(t, "t", 4).ID()
	a := newHBClient(t, ts, "g", "member-a", id)
	b := newHBClient(t, ts, "g", "member-b", id)
	a.join("t")
	b.join("t")
	for range 4 {
		a.beat()
		b.beat()
	}
	if len(a.owned) != 2 || len(b.owned) != 2 {
		t.Fatalf("a owns %v, b %v; want two each", a.partitions(), b.partitions())
	}
	// a goes silent; b heartbeats until it has all four.
	waitFor(t, func() bool {
		b.beat()
		return len(b.owned) == 4
	})
	if d := describeConsumerGroup(t, b.cl, "g"); len(d.Members) != 1 || d.Members[0].MemberID != "member-b" {
		t.Errorf("members after a's session expired: %+v, want only member-b", d.Members)
	}
}

func TestAssignors_EveryPartitionOnce(t *testing.T) {
	topics := []topicMeta{{name: "a", id: offsets.TopicID{1}, partitions: 7}, {name: "b", id: offsets.TopicID{2}, partitions: 3}}
	all := func(string) bool { return true }
	onlyA := func(n string) bool { return n == "a" }
	for _, tc := range []struct {
		name    string
		assign  func(assignSpec) map[string]tpSet
		members []assignMember
	}{
		{"uniform, same subscriptions", assignUniform, []assignMember{{id: "m1", subscribes: all}, {id: "m2", subscribes: all}, {id: "m3", subscribes: all}}},
		{"uniform, different subscriptions", assignUniform, []assignMember{{id: "m1", subscribes: all}, {id: "m2", subscribes: onlyA}}},
		{"range, same subscriptions", assignRange, []assignMember{{id: "m1", key: "m1", subscribes: all}, {id: "m2", key: "m2", subscribes: all}, {id: "m3", key: "m3", subscribes: all}}},
		{"range, different subscriptions", assignRange, []assignMember{{id: "m1", key: "m1", subscribes: all}, {id: "m2", key: "m2", subscribes: onlyA}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.assign(assignSpec{members: tc.members, topics: topics})
			seen := map[tp]string{}
			for _, m := range tc.members {
				for p := range got[m.id] {
					if o, ok := seen[p]; ok {
						t.Errorf("partition %v given to %s and %s", p, o, m.id)
					}
					seen[p] = m.id
					name := "a"
					if p.id == topics[1].id {
						name = "b"
					}
					if !m.subscribes(name) {
						t.Errorf("%s given %s/%d it does not subscribe to", m.id, name, p.p)
					}
				}
			}
			if len(seen) != 10 {
				t.Errorf("%d partitions assigned, want all 10", len(seen))
			}
		})
	}
	// uniform is balanced (7+3 over 3: 4, 3, 3) and sticky: with a fourth
	// member, each of the three keeps partitions it had.
	three := []assignMember{{id: "m1", subscribes: all}, {id: "m2", subscribes: all}, {id: "m3", subscribes: all}}
	first := assignUniform(assignSpec{members: three, topics: topics})
	var sizes []int
	for _, m := range three {
		sizes = append(sizes, len(first[m.id]))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{3, 3, 4}) {
		t.Errorf("uniform over 3 members: shares %v, want 3, 3, 4", sizes)
	}
	four := append(slices.Clone(three), assignMember{id: "m4", subscribes: all})
	for i := range three {
		four[i].prev = first[four[i].id]
	}
	second := assignUniform(assignSpec{members: four, topics: topics})
	for _, m := range three {
		kept := 0
		for p := range second[m.id] {
			if _, ok := first[m.id][p]; ok {
				kept++
			}
		}
		if kept != len(second[m.id]) {
			t.Errorf("%s: kept %d of its %d new partitions from before; uniform should move only what m4 takes", m.id, kept, len(second[m.id]))
		}
	}
}

// kgoAssigned is what a franz-go member of a KIP-848 group was given,
// as its callbacks report it.
type kgoAssigned struct {
	mu    sync.Mutex
	owned map[string]map[int32]bool
}

func (a *kgoAssigned) opts() []kgo.Opt {
	a.owned = map[string]map[int32]bool{}
	change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for t, ps := range m {
				if a.owned[t] == nil {
					a.owned[t] = map[int32]bool{}
				}
				for _, p := range ps {
					if add {
						a.owned[t][p] = true
					} else {
						delete(a.owned[t], p)
					}
				}
			}
		}
	}
	return []kgo.Opt{kgo.OnPartitionsAssigned(change(true)), kgo.OnPartitionsRevoked(change(false)), kgo.OnPartitionsLost(change(false))}
}

func (a *kgoAssigned) topics() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for t, ps := range a.owned {
		if len(ps) > 0 {
			out[t] = len(ps)
		}
	}
	return out
}

// franz-go members subscribing by regular expression (sent as
// subscribed_topic_regex) with the range assignor: they get the matching
// topics only, and a matching topic created later is assigned too.
func TestConsumerGroup_KgoRegexAndRange(t *testing.T) {
	ts := startServer(t, nil)
	ts.consumerTimeouts(10*time.Second, 100*time.Millisecond)
	ts.createTopic(t, "orders-eu", 2)
	ts.createTopic(t, "orders-us", 2)
	ts.createTopic(t, "audit", 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var as [2]kgoAssigned
	for i := range as {
		cl := ts.client(t, append(as[i].opts(), kgo.ConsumerGroup("regex-group"), kgo.ConsumeRegex(), kgo.ConsumeTopics("orders-.*"),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(200*time.Millisecond))...)
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	cl := ts.client(t)
	waitUntil(t, "each member given one partition of each orders topic", func() bool {
		d := describeConsumerGroup(t, cl, "regex-group")
		return d.State == "Stable" && len(d.Members) == 2 &&
			maps.Equal(as[0].topics(), map[string]int{"orders-eu": 1, "orders-us": 1}) &&
			maps.Equal(as[1].topics(), map[string]int{"orders-eu": 1, "orders-us": 1})
	})
	d := describeConsumerGroup(t, cl, "regex-group")
	// franz-go sends ".*(?:(?:orders-.*)).*": Kafka matches the whole
	// name, its own regexes any part.
	if re := d.Members[0].SubscribedTopicRegex; d.AssignorName != "range" || re == nil || !strings.Contains(*re, "orders-.*") {
		t.Errorf("assignor %q, regex %v; want range and one with orders-.*", d.AssignorName, re)
	}
	// range: the same partition of each topic to the same member.
	for _, m := range d.Members {
		var ps []int32
		for _, tp := range m.Assignment.TopicPartitions {
			ps = append(ps, tp.Partitions...)
		}
		if len(ps) != 2 || ps[0] != ps[1] {
			t.Errorf("member %s: partitions %v of the two topics, want the same number of each", m.MemberID, m.Assignment.TopicPartitions)
		}
	}
	ts.createTopic(t, "orders-asia", 2)
	waitUntil(t, "the new orders topic assigned too", func() bool {
		return as[0].topics()["orders-asia"]+as[1].topics()["orders-asia"] == 2
	})
	for i := range as {
		if as[i].topics()["audit"] != 0 {
			t.Errorf("member %d given audit, which the regex does not match", i)
		}
	}
}

// BenchmarkConsumerGroup_Heartbeat measures a steady heartbeat of one
// of 50 members of a reconciled group, subscribed to 1 topic of 100
// partitions in a cluster of 200 topics: the coordinator's work per
// heartbeat (the subscription fingerprint over the cluster's topics,
// the reconciliation check), without the network.
func BenchmarkConsumerGroup_Heartbeat(b *testing.B) {
	co := newCoordinator(nil, nil, slog.New(slog.DiscardHandler), time.Second, time.Hour)
	defer co.close()
	topics := map[string]topicMeta{}
	for i := range 200 {
		name := fmt.Sprintf("topic-%03d", i)
		topics[name] = topicMeta{name: name, id: offsets.NewTopicID(), partitions: 100}
	}
	type mem struct {
		id    string
		epoch int32
		owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	}
	var ms []*mem
	beat := func(m *mem, join bool) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = 1, "g", m.id, m.epoch, -1
		req.Topics = m.owned
		if join {
			req.MemberEpoch, req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 0, 30_000, []string{"topic-000"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, e := co.consumerHeartbeat(heartbeatReq{ConsumerGroupHeartbeatRequest: req, topics: topics})
		if e != nil {
			b.Fatal(e.msg)
		}
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = nil
			for _, t := range resp.Assignment.Topics {
				m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
	}
	for i := range 50 {
		m := &mem{id: fmt.Sprintf("member-%02d", i)}
		ms = append(ms, m)
		beat(m, true)
	}
	for range 5 { // reconcile everyone
		for _, m := range ms {
			beat(m, false)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		beat(ms[i%len(ms)], false)
	}
}

// The broker's DescribeConfigs reports the group.consumer.* settings in
// force.
func TestConsumerGroup_BrokerConfigs(t *testing.T) {
	ts := startServer(t, &Options{GroupConsumerSessionTimeout: 20 * time.Second})
	rcs, err := kadm.NewClient(ts.client(t)).DescribeBrokerConfigs(context.Background(), NodeID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c.MaybeValue() + " " + c.Source.String()
	}
	for k, want := range map[string]string{
		"group.consumer.session.timeout.ms":    "20000 STATIC_BROKER_CONFIG",
		"group.consumer.heartbeat.interval.ms": "5000 DEFAULT_CONFIG",
		"group.consumer.assignors":             "uniform,range DEFAULT_CONFIG",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

// A static franz-go member of a KIP-848 group closed (it leaves with
// epoch −2) and started again with the same instance id within the
// session timeout gets the same partitions, and the other member's epoch
// does not move.
func TestConsumerGroup_KgoStaticMemberRestarts(t *testing.T) {
	ts := startServer(t, nil)
	ts.consumerTimeouts(30*time.Second, 100*time.Millisecond)
	ts.createTopic(t, "t", 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(inst string, a *kgoAssigned) *kgo.Client {
		cl, err := kgo.NewClient(append(a.opts(), kgo.SeedBrokers(ts.addr), kgo.ConsumerGroup("static-848"), kgo.ConsumeTopics("t"),
			kgo.ServerSideBalancer(), kgo.InstanceID(inst))...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ctx.Err() == nil && !errors.Is(cl.Context().Err(), context.Canceled) {
				cl.PollFetches(ctx)
			}
		}()
		return cl
	}
	var sa, oa, ra kgoAssigned
	s := start("instance-s", &sa)
	o := start("instance-o", &oa)
	defer o.Close()
	admin := ts.client(t)
	members := func() map[string]kmsg.ConsumerGroupDescribeResponseGroupMember {
		out := map[string]kmsg.ConsumerGroupDescribeResponseGroupMember{}
		for _, m := range describeConsumerGroup(t, admin, "static-848").Members {
			out[*m.InstanceID] = m
		}
		return out
	}
	waitUntil(t, "two members with two partitions each", func() bool {
		d := describeConsumerGroup(t, admin, "static-848")
		return d.State == "Stable" && len(d.Members) == 2 && sa.topics()["t"] == 2 && oa.topics()["t"] == 2
	})
	before := members()
	s.Close() // epoch −2: it keeps its partitions
	waitUntil(t, "the static member's leave", func() bool { return members()["instance-s"].MemberEpoch == -2 })
	r := start("instance-s", &ra)
	defer r.Close()
	waitUntil(t, "the restarted member given its partitions", func() bool { return ra.topics()["t"] == 2 })
	after := members()
	if got, want := after["instance-s"].Assignment.TopicPartitions[0].Partitions, before["instance-s"].Assignment.TopicPartitions[0].Partitions; !slices.Equal(got, want) {
		t.Errorf("the restarted member owns %v, want %v as before", got, want)
	}
	if after["instance-s"].MemberID == before["instance-s"].MemberID {
		t.Errorf("the restarted member kept its member id %s; franz-go makes a new one", after["instance-s"].MemberID)
	}
	if got, want := after["instance-o"].MemberEpoch, before["instance-o"].MemberEpoch; got != want {
		t.Errorf("the other member's epoch went from %d to %d, want unchanged", want, got)
	}
}
