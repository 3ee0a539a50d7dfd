package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupGeneration is a classic group's generation and state.
func (ts *testServer) groupGeneration(name string) (int32, groupState, int) {
	co := ts.srv.groups
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.mu.groups[name]
	if g == nil {
		return -1, stateEmpty, 0
	}
	return g.generation, g.state, len(g.members)
}

// KIP-345 for classic groups: a static member (franz-go, in a child
// process) killed with SIGKILL and restarted within its session timeout
// gets its partitions back with no rebalance: the group's generation
// does not move, and the other member is told of nothing. The member
// restarted is not the leader: a restarted franz-go leader compares the
// old plan with one of its own and rejoins to force a rebalance when
// they differ (KIP-814), which is the client's doing.
func TestGroup_StaticMemberRestartedKeepsPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs group members in child processes")
	}
	ts := startServer(t, nil)
	ts.createTopic(t, "orders", 4)
	cfg := memberConfig{Addr: ts.addr, Group: "static-group", Topic: "orders", Session: 30 * time.Second,
		Heartbeat: 100 * time.Millisecond, KillAt: -1, DoneAt: -1, InstanceID: "instance-s"}
	cfg.InstanceID = "instance-o"
	other := startMember(t, "other", cfg) // the leader: it joins first
	waitUntil(t, "the first member alone in the group", func() bool {
		_, st, n := ts.groupGeneration("static-group")
		return st == stateStable && n == 1
	})
	cfg.InstanceID = "instance-s"
	static := startMember(t, "static", cfg)
	assigned := func(m *memberProc) []int32 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Sorted(slices.Values(m.assigned))
	}
	waitUntil(t, "a stable group of two sharing the 4 partitions", func() bool {
		_, st, n := ts.groupGeneration("static-group")
		return st == stateStable && n == 2 && len(assigned(static))+len(assigned(other)) == 4 && len(assigned(static)) > 0
	})
	gen, _, _ := ts.groupGeneration("static-group")
	before, otherBefore := assigned(static), assigned(other)
	drain := func(m *memberProc) (n int) {
		for {
			select {
			case <-m.lines:
				n++
			default:
				return n
			}
		}
	}
	drain(other)

	static.cmd.Process.Kill()
	<-static.exited
	restarted := startMember(t, "restarted", cfg)
	waitUntil(t, "the restarted static member assigned", func() bool { return len(assigned(restarted)) > 0 })
	if got := assigned(restarted); !slices.Equal(got, before) {
		t.Errorf("the restarted static member owns %v, want %v as before", got, before)
	}
	genAfter, st, n := ts.groupGeneration("static-group")
	if genAfter != gen || st != stateStable || n != 2 {
		t.Errorf("after the restart: generation %d, %s, %d members; want generation %d unchanged, Stable, 2", genAfter, st, n, gen)
	}
	if got := assigned(other); !slices.Equal(got, otherBefore) || drain(other) != 0 {
		t.Errorf("the other member: owns %v, want %v, and no assignment change reported", got, otherBefore)
	}
}

// The old incarnation of a replaced static member is fenced, and
// LeaveGroup by instance id removes a static member.
func TestGroup_StaticMemberFencedAndLeaves(t *testing.T) {
	ts := startServer(t, &Options{GroupMinSessionTimeout: 100 * time.Millisecond})
	ts.createTopic(t, "t", 1)
	cl := ts.client(t)
	ctx := context.Background()
	inst := "instance-1"
	join := func() *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.InstanceID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", &inst, 10_000, 10_000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", new(kmsg.ConsumerMemberMetadata).AppendTo(nil)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := join()
	if first.ErrorCode != 0 {
		t.Fatalf("a static member joins (no MEMBER_ID_REQUIRED): %v", kerr.ErrorForCode(first.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation, sync.InstanceID = "g", first.MemberID, first.Generation, &inst
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = first.MemberID, []byte("mine")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{sa}
	if r, err := sync.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("sync: %v %v", err, r)
	}
	second := join()
	if second.ErrorCode != 0 || second.MemberID == first.MemberID || second.Generation != first.Generation {
		t.Fatalf("the restarted member: error %v, id %s (was %s), generation %d (was %d); want a new id, the same generation",
			kerr.ErrorForCode(second.ErrorCode), second.MemberID, first.MemberID, second.Generation, first.Generation)
	}
	if !second.SkipAssignment {
		t.Error("the restarted leader is not told to skip the assignment")
	}
	sync.MemberID, sync.GroupAssignment = second.MemberID, nil
	if r, err := sync.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || string(r.MemberAssignment) != "mine" {
		t.Fatalf("the restarted member's sync: %v %+v; want its old assignment", err, r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", first.MemberID, first.Generation, &inst
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Errorf("the old incarnation's heartbeat: %v %v, want FENCED_INSTANCE_ID", err, r)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation, commit.InstanceID = "g", first.MemberID, first.Generation, &inst
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{ct}
	if r, err := commit.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.FencedInstanceID.Code {
		t.Errorf("the old incarnation's commit: %v %v, want FENCED_INSTANCE_ID", err, r)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = &inst
	leave.Members = []kmsg.LeaveGroupRequestMember{lm}
	if r, err := leave.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("LeaveGroup by instance id: %v %+v", err, r)
	}
	if _, _, n := ts.groupGeneration("g"); n != 0 {
		t.Errorf("%d members after the static member left, want 0", n)
	}
}

// A static member that stops heartbeating is still removed at its
// session timeout, and the group rebalances without it.
func TestGroup_StaticMemberSessionTimeout(t *testing.T) {
	ts := startServer(t, &Options{GroupMinSessionTimeout: 100 * time.Millisecond})
	cl := ts.client(t)
	inst := "instance-1"
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.InstanceID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", &inst, 300, 300, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", new(kmsg.ConsumerMemberMetadata).AppendTo(nil)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %v", err, resp)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation, sync.InstanceID = "g", resp.MemberID, resp.Generation, &inst
	if r, err := sync.RequestWith(context.Background(), cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("sync: %v %v", err, r)
	}
	if _, st, n := ts.groupGeneration("g"); n != 1 || st != stateStable {
		t.Fatalf("%d members, %s after the sync, want 1, Stable", n, st)
	}
	waitUntil(t, "the silent static member removed", func() bool { _, _, n := ts.groupGeneration("g"); return n == 0 })
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", resp.MemberID, resp.Generation, &inst
	if r, err := hb.RequestWith(context.Background(), cl); err != nil || r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("its heartbeat after the timeout: %v %v, want UNKNOWN_MEMBER_ID", err, r)
	}
}
